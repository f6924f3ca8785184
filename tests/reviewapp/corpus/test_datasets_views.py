import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.corpus.selectors import corpus as selectors
from reviewapp.models import Conversation, Role, Turn
from tests.factories import HTMX, dataset_of_languages, import_sweep, label_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    mixed = dataset_of_languages("mixed-run", ["fr", "fr-CA", "ja", "ja", "de"], turns_per_conversation=3)
    only_ja = dataset_of_languages("japanese-run", ["ja", "ja"])
    turn = Turn.objects.filter(conversation__dataset=mixed, conversation__language="fr").first()
    label_turn(turn, rating=3, verdict_rating=2, sweep=import_sweep(mixed))
    ja_turn = Turn.objects.filter(conversation__dataset=mixed, conversation__language="ja").first()
    label_turn(ja_turn, rating=1, verdict_rating=1, sweep=import_sweep(mixed))
    return {"mixed": mixed, "only_ja": only_ja}


def row_counts(response, name):
    return next(row for row in response.context["datasets"] if row.name == name)


def test_anonymous_is_sent_to_login(client, corpus):
    for url in (reverse("dataset_list"), reverse("dataset_detail", args=[corpus["mixed"].pk])):
        response = client.get(url)
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


def test_home_sends_reviewers_to_their_queue_and_leads_to_the_datasets(client, make_user):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response.url == reverse("queue_index")
    client.force_login(make_user("lea", role=Role.LEAD))
    assert client.get(reverse("home")).url == reverse("dataset_list")


def test_lead_sees_every_dataset_with_full_counts(client, make_user, corpus):
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.get(reverse("dataset_list"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html and 'id="dataset-results"' in html
    mixed = row_counts(response, "mixed-run")
    assert (mixed.conversation_count, mixed.turn_count, mixed.gold_count, mixed.verdict_count) == (5, 15, 2, 2)
    assert mixed.languages == ["de", "fr", "fr-CA", "ja"]
    assert row_counts(response, "japanese-run").conversation_count == 2


def test_reviewer_counts_only_their_languages_and_misses_datasets_without_them(client, make_user, corpus):
    client.force_login(make_user("ana", languages=["fr"]))
    response = client.get(reverse("dataset_list"))
    names = [row.name for row in response.context["datasets"]]
    assert names == ["mixed-run"]
    mixed = row_counts(response, "mixed-run")
    # "fr" covers fr and fr-CA; the ja and de conversations are neither counted nor listed.
    assert (mixed.conversation_count, mixed.turn_count, mixed.gold_count, mixed.verdict_count) == (2, 6, 1, 1)
    assert mixed.languages == ["fr", "fr-CA"]
    assert response.context["languages"] == ["fr", "fr-CA"]
    assert "japanese-run" not in response.content.decode()


def test_htmx_request_gets_only_the_rows_fragment(client, make_user, corpus):
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.get(reverse("dataset_list"), {"q": "japan"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and "<nav" not in html
    assert html.lstrip().startswith('<section id="dataset-results"')
    assert "japanese-run" in html and "mixed-run" not in html
    assert "HX-Request" in response["Vary"]


def test_history_restore_gets_the_full_page(client, make_user, corpus):
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.get(reverse("dataset_list"), **HTMX, HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in response.content.decode()


def test_language_filter_limits_counts_and_hides_datasets_without_it(client, make_user, corpus):
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.get(reverse("dataset_list"), {"language": "de"})
    rows = response.context["datasets"]
    assert [row.name for row in rows] == ["mixed-run"]
    assert (rows[0].conversation_count, rows[0].turn_count, rows[0].languages) == (1, 3, ["de"])


def test_search_and_filter_links_keep_their_href(client, make_user, corpus):
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("dataset_list")).content.decode()
    assert f'hx-get="{reverse("dataset_list")}"' in html
    assert f'action="{reverse("dataset_list")}"' in html
    assert f'href="{reverse("dataset_detail", args=[corpus["mixed"].pk])}"' in html


def test_dataset_list_runs_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries):
    client.force_login(make_user("ana", languages=["fr", "de"]))
    counts = []
    for size in (5, 50):
        for index in range(len(counts) * 5, size):
            dataset_of_languages(f"run-{index:03d}", ["fr", "de", "ja"])
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse("dataset_list"))
        assert len(response.context["datasets"]) == size
        counts.append(len(captured))
    assert counts[0] == counts[1]
    with django_assert_max_num_queries(counts[0]):
        client.get(reverse("dataset_list"))


def test_the_dataset_list_reads_the_kept_counts_not_the_rows(client, make_user, corpus):
    """Its counts are the rows DatasetCount keeps per dataset and language: no statement of the page
    counts conversations, turns, gold labels or verdicts, so it costs the same at any corpus size."""
    client.force_login(make_user("ana", languages=["fr"]))
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dataset_list"), {"language": "fr-CA"})
    rows = response.context["datasets"]
    assert [(row.name, row.conversation_count, row.turn_count, row.languages) for row in rows] == [
        ("mixed-run", 1, 3, ["fr-CA"])
    ]
    # The language choices are the loose index walk of the distinct languages (one probe per language).
    read = " ".join(query["sql"] for query in captured.captured_queries if "walk.language" not in query["sql"])
    for table in ("reviewapp_conversation", "reviewapp_turn", "reviewapp_goldlabel", "reviewapp_verdict"):
        assert f'"{table}"' not in read, table
    assert '"reviewapp_datasetcount"' in read


def test_dataset_detail_full_page_and_fragment(client, make_user, corpus):
    client.force_login(make_user("ana", languages=["fr"]))
    url = reverse("dataset_detail", args=[corpus["mixed"].pk])
    full = client.get(url)
    assert full.status_code == 200
    assert "<html" in full.content.decode()
    assert [c.language for c in full.context["page"].object_list] == ["fr", "fr-CA"]
    assert full.context["page"].object_list[0].turn_count == 3
    fragment = client.get(url, {"language": "fr-CA"}, **HTMX)
    html = fragment.content.decode()
    assert "<html" not in html and html.lstrip().startswith('<section id="conversation-results"')
    assert "mixed-run-1" in html and "mixed-run-0" not in html


def test_dataset_detail_forbidden_for_reviewer_without_its_languages(client, make_user, corpus):
    client.force_login(make_user("ana", languages=["fr", "de"]))
    response = client.get(reverse("dataset_detail", args=[corpus["only_ja"].pk]))
    assert response.status_code == 403
    assert "You cannot open this page" in response.content.decode()
    assert client.get(reverse("dataset_detail", args=[corpus["only_ja"].pk]), **HTMX).status_code == 403


def test_dataset_detail_404(client, make_user):
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.get(reverse("dataset_detail", args=[9999]))
    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()


def test_dataset_detail_pages_fifty_at_a_time_by_conversation_id_with_htmx_links(client, make_user):
    dataset = dataset_of_languages("big", ["ko"] * 60, turns_per_conversation=1)
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("dataset_detail", args=[dataset.pk])
    ids = sorted(Conversation.objects.filter(dataset=dataset).values_list("external_id", flat=True))
    first = client.get(url)
    page = first.context["page"]
    assert [c.external_id for c in page.object_list] == ids[:50] and page.count == 60
    html = first.content.decode()
    link = f"?after={ids[49]}"
    assert f'href="{link}"' in html and f'hx-get="{link}"' in html and "60 conversations" in html
    assert 'rel="prev"' not in html  # the first page has no previous one

    second = client.get(url, {"after": ids[49]}, **HTMX)
    assert [c.external_id for c in second.context["page"].object_list] == ids[50:]
    html = second.content.decode()
    assert 'rel="next"' not in html and f'href="?before={ids[50]}"' in html

    back = client.get(url, {"before": ids[50]})
    assert [c.external_id for c in back.context["page"].object_list] == ids[:50]
    assert 'rel="prev"' not in back.content.decode()  # back at the start


def test_dataset_pages_walk_every_conversation_once_both_ways_and_keep_the_filter(client, make_user):
    dataset = dataset_of_languages("walk", ["fr", "de", "fr-CA"] * 60, turns_per_conversation=0)
    client.force_login(make_user("ana", languages=["fr"]))  # fr and fr-CA: 120 of the 180
    url = reverse("dataset_detail", args=[dataset.pk])
    expected = sorted(
        Conversation.objects.filter(dataset=dataset, language__in=["fr", "fr-CA"]).values_list("external_id", flat=True)
    )
    forward, params = [], {}
    while True:
        page = client.get(url, params).context["page"]
        forward += [c.external_id for c in page.object_list]
        if page.next_after is None:
            break
        params = {"after": page.next_after}
    assert forward == expected and page.count == 120
    backward = [c.external_id for c in page.object_list]  # from the last page back to the first
    while page.previous_before:
        page = client.get(url, {"before": page.previous_before}).context["page"]
        backward = [c.external_id for c in page.object_list] + backward
    assert backward == expected

    filtered = client.get(url, {"language": "fr"})
    page = filtered.context["page"]
    assert page.count == 60 and {c.language for c in page.object_list} == {"fr"}
    assert f'href="?language=fr&amp;after={page.next_after}"' in filtered.content.decode()
    beyond = client.get(url, {"after": expected[-1] + "~"})  # past the end: empty, with a way back
    assert beyond.context["page"].object_list == [] and "First page" in beyond.content.decode()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plans")
def test_a_deep_page_reads_the_dataset_index_from_its_keyset(make_user):
    dataset = dataset_of_languages("deep", ["it"] * 300, turns_per_conversation=0)
    lead = make_user("lea", role=Role.LEAD)
    ids = sorted(Conversation.objects.filter(dataset=dataset).values_list("external_id", flat=True))
    queryset = selectors.dataset_conversations(user=lead, dataset=dataset).filter(external_id__gt=ids[250])[:51]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviewapp_conversation")
        cursor.execute("SET LOCAL enable_seqscan = off")
        # At 300 rows a bitmap scan and a sort of the 49 it finds can cost the same as the index walk,
        # depending on ANALYZE's sample; off, a plan still needs a Sort unless the index gives the order.
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        plan = queryset.explain(analyze=True)
    walk = re.search(r"Index Scan using conversation_unique_per_dataset.*\n\s*Index Cond: \((.*)\)", plan)
    assert walk and re.search(r"external_id\)?(::text)? >", walk.group(1)), plan  # starts at the keyset
    assert "Sort" not in plan.split("SubPlan")[0] and "OFFSET" not in str(queryset.query), plan


def test_dataset_detail_runs_a_fixed_number_of_queries(client, make_user):
    dataset = dataset_of_languages("grow", [], turns_per_conversation=0)
    client.force_login(make_user("lea", role=Role.LEAD))
    counts = []
    for size in (5, 50):
        for index in range(Conversation.objects.filter(dataset=dataset).count(), size):
            conversation = Conversation.objects.create(dataset=dataset, external_id=f"c{index}", language="it")
            Turn.objects.create(conversation=conversation, position=0, role="user", text="ciao")
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse("dataset_detail", args=[dataset.pk]))
        assert len(response.context["page"].object_list) == size
        counts.append(len(captured))
    assert counts[0] == counts[1]


def test_the_language_choices_are_the_datasets_own_that_the_user_may_see(make_user, django_assert_num_queries):
    mixed = dataset_of_languages("mixed", ["fr", "fr-CA", "de", "FR-be", "ja"] * 3, turns_per_conversation=0)
    dataset_of_languages("other", ["ko", "fr-CH"], turns_per_conversation=0)
    ana, lead = make_user("ana", languages=["fr"]), make_user("lea", role=Role.LEAD)
    with django_assert_num_queries(1):  # one loose index walk, whatever the dataset's size
        assert selectors.visible_languages(user=lead, dataset=mixed) == ["de", "fr", "FR-be", "fr-CA", "ja"]
    assert selectors.visible_languages(user=ana, dataset=mixed) == ["fr", "FR-be", "fr-CA"]
    assert selectors.visible_languages(user=ana) == ["fr", "FR-be", "fr-CA", "fr-CH"]
    assert "ko" in selectors.visible_languages(user=lead) and "ko" not in selectors.visible_languages(user=ana)

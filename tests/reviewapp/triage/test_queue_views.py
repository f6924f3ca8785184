"""The queue page, "start reviewing", progress, and dataset_triage."""

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from reviewapp.models import GoldLabel, ReviewItem, Role, Verdict
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims as claims_services
from reviewapp.triage.services.queue_items import dataset_triage
from reviewapp.triage.services.triage import QA_REVIEWS_REQUIRED
from tests.factories import HTMX, dataset, make_item

pytestmark = pytest.mark.django_db


def test_queue_page_lists_items_in_my_languages_by_priority_with_reason_counts(client, make_user):
    make_item("fr", priority=100, reasons=["qa_sample"], text="Bonne journée <script>alert(1)</script>")
    make_item("fr-CA", priority=300, reasons=["unresolved", "uncertain"])
    make_item("ja", priority=900, text="ご予約番号は")
    client.force_login(make_user("ana", languages=["fr"]))

    response = client.get(reverse("queue_index"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "Start reviewing" in html and "2 items" in html
    assert html.index("fr-CA") < html.index("qa_sample</span>")
    assert "ご予約番号は" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    counts = {r.code: r.count for r in response.context["queue"].reasons}
    assert counts["unresolved"] == 1 and counts["qa_sample"] == 1 and counts["runs_disagree"] == 0
    assert response.context["queue"].progress.claimable == 2


def test_queue_filters_come_back_as_an_htmx_fragment(client, make_user):
    make_item("fr", reasons=["qa_sample"])
    make_item("fr", reasons=["unresolved"])
    client.force_login(make_user("lea", role=Role.LEAD))

    response = client.get(reverse("queue_index"), {"reason": "qa_sample", "judge": "conciseness"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="queue-results"' in html
    assert "1 item" in html and response.headers["Vary"].count("HX-Request") == 1


def test_reviewer_without_the_language_sees_none_of_it(client, make_user):
    make_item("ja", text="ご予約番号は")
    client.force_login(make_user("ana", languages=["fr"]))
    for response in (
        client.get(reverse("queue_index")),
        client.get(reverse("queue_index"), {"language": "ja"}, **HTMX),
    ):
        assert "ご予約番号は" not in response.content.decode()
        assert response.context["queue"].total == 0
    assert client.post(reverse("queue_next")).url.endswith("empty=1")
    assert client.get(reverse("queue_progress")).status_code == 403


def test_start_reviewing_claims_and_opens_the_next_item(client, make_user):
    first = make_item("fr", priority=300)
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)

    response = client.post(reverse("queue_next"), {"reason": "unresolved"})

    assert response.status_code == 302 and response.url == reverse("review_item", args=[first.pk])
    first.refresh_from_db()
    assert first.claimed_by == ana
    assert client.session["queue_filters"] == {"reason": "unresolved"}
    assert client.get(reverse("queue_next")).status_code == 405


def test_progress_for_leads_per_reviewer_and_language(client, make_user):
    item = make_item("fr")
    make_item("de")
    ana = make_user("ana", languages=["fr", "de"])
    claims_services.item_claim(user=ana)
    reviews.review_submit(item=item, user=ana, rating=2)
    claims_services.item_claim(user=ana)
    client.force_login(make_user("lea", role=Role.LEAD))

    statements: list[str] = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        page = client.get(reverse("queue_progress"))
    fragment = client.get(reverse("queue_progress"), **HTMX)
    # Items by language and status come from the kept counts; only live claims are read from the items.
    grouped = [sql for sql in statements if '"status", COUNT(' in sql or "SUM(" in sql]
    assert len(grouped) == 1 and '"reviewapp_queuecount"' in grouped[0], statements

    reviewers, languages = page.context["reviewers"], {row.language: row for row in page.context["languages"]}
    assert [(r.username, r.reviewed, r.claimed) for r in reviewers] == [("ana", 1, 1)]
    assert languages["fr"].done == 1 and languages["de"].claimed == 1 and languages["de"].open == 1
    assert 'id="progress-tables"' in fragment.content.decode() and "<html" not in fragment.content.decode()


@pytest.mark.parametrize("size", [3, 60])
def test_queue_page_and_next_item_run_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries, size):
    for n in range(size):
        make_item(("fr", "fr-CA", "de")[n % 3], reasons=[("unresolved", "qa_sample", "imported")[n % 3]])
    ana = make_user("ana", languages=["fr", "de"])
    reviews.item_skip(item=ReviewItem.objects.first(), user=ana, reason="not sure")
    client.force_login(ana)
    # The session with its user (and their profile), then four for the page (see queue_page), whatever
    # the queue holds.
    with django_assert_max_num_queries(5):
        assert client.get(reverse("queue_index")).status_code == 200
    with django_assert_max_num_queries(5):
        assert client.get(reverse("queue_index"), {"reason": "qa_sample", "language": "fr"}, **HTMX).status_code == 200
    with django_assert_max_num_queries(12):
        assert client.post(reverse("queue_next")).status_code == 302
    # Asking again with the same filters resumes the held item and leaves the session alone.
    with django_assert_max_num_queries(7):
        assert client.post(reverse("queue_next")).status_code == 302


def test_counts_match_the_claim_rules_with_leases_reviews_skips_and_filters(client, make_user):
    """Every number on the page against the plain definition it stands for."""
    from django.utils import timezone

    from reviewapp.triage.selectors.claims import claimable_q

    other = dataset("other-calls")
    items = [
        make_item("fr", priority=500, reasons=["unresolved"]),
        make_item("fr", priority=400, reasons=["qa_sample"], reviews_required=2),
        make_item("fr-CA", priority=300, reasons=["runs_disagree", "qa_sample"]),
        make_item("fr", priority=200, reasons=["imported"], on=other),
        make_item("fr", priority=150, reasons=["unresolved"]),
        make_item("fr", priority=100, reasons=["qa_sample"]),
        make_item("de", priority=900, reasons=["unresolved"]),
    ]
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    claims_services.item_claim(user=ana)  # the top fr item, 500
    reviews.review_submit(item=items[0], user=ana, rating=2)  # agrees with the judge: closed
    claims_services.item_claim(user=ana, item=items[1])
    reviews.review_submit(item=items[1], user=ana, rating=2)  # needs two reviews: still in review
    reviews.item_skip(item=items[2], user=ana, reason="accent du Québec")
    claims_services.item_claim(user=ben, item=items[4])  # a live lease by someone else
    expired = claims_services.item_claim(user=make_user("cy", languages=["fr"]), item=items[5])
    ReviewItem.objects.filter(pk=expired.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    client.force_login(ana)

    page = client.get(reverse("queue_index")).context["queue"]

    assert page.total == 5 and [i.pk for i in page.items] == [
        items[1].pk,
        items[2].pk,
        items[3].pk,
        items[4].pk,
        items[5].pk,
    ]
    assert page.progress.claimable == ReviewItem.objects.filter(claimable_q(user=ana, now=timezone.now())).count() == 2
    counts = {r.code: r.count for r in page.reasons}
    assert counts["qa_sample"] == 3 and counts["unresolved"] == 1 and counts["runs_disagree"] == 1
    assert counts["imported"] == 1 and counts["judges_disagree"] == 0
    assert page.progress.reviewed == 2 and page.progress.skipped == 1
    mine = next(i for i in page.items if i.pk == items[1].pk)
    assert mine.review_count == 1 and mine.reviewed_by_me

    def total(**query):
        return client.get(reverse("queue_index"), query, **HTMX).context["queue"].total

    assert total(reason="qa_sample") == 3
    assert total(language="FR-ca") == 1
    assert total(dataset=other.pk) == 1 and total(dataset=other.pk, reason="unresolved") == 0
    assert total(judge="conciseness") == 5 and total(judge="no-such-judge") == 0
    assert total(status="in_review") == 3 and total(status="closed") == 1
    closed = client.get(reverse("queue_index"), {"status": "closed"}).context["queue"]
    assert [i.pk for i in closed.items] == [items[0].pk] and closed.progress.claimable == 2


def test_leads_see_every_language_in_queue_order(client, make_user):
    made = [make_item(language, priority=p) for language, p in (("ja", 100), ("fr", 300), ("hi", 200), ("ja", 300))]
    client.force_login(make_user("lea", role=Role.LEAD))

    page = client.get(reverse("queue_index")).context["queue"]

    assert [i.pk for i in page.items] == [made[1].pk, made[3].pk, made[2].pk, made[0].pk]
    assert page.total == 4 and page.progress.claimable == 4 and page.languages == ["fr", "hi", "ja"]


def test_the_page_shows_its_keyboard_shortcuts_and_loads_their_script(client, make_user):
    make_item("fr")
    client.force_login(make_user("ana", languages=["fr"]))

    html = client.get(reverse("queue_index")).content.decode()
    fragment = client.get(reverse("queue_index"), {"reason": "unresolved"}, **HTMX).content.decode()

    assert 'id="queue-shortcuts"' in html and "<kbd>n</kbd> or <kbd>Enter</kbd> start reviewing" in html
    assert '<dialog id="queue-help"' in html and 'src="/static/js/queue.js"' in html
    assert 'data-hotkey="/"' in html and 'aria-keyshortcuts="n Enter"' in html
    assert "queue-help" not in fragment and "queue.js" not in fragment


def test_review_languages_are_the_exact_codes_access_allows(make_user):
    from reviewapp.triage.selectors.queue_filters import review_languages

    for language in ("fr", "fr-CA", "fr-BE", "de", "fra", "ja"):
        make_item(language)
    assert review_languages(user=make_user("ana", languages=["fr"])) == ["fr", "fr-BE", "fr-CA"]
    assert review_languages(user=make_user("ben", languages=["fr-ca", "ja"])) == ["fr-CA", "ja"]
    assert review_languages(user=make_user("cy")) == []
    assert review_languages(user=make_user("lea", role=Role.LEAD)) == ["de", "fr", "fr-BE", "fr-CA", "fra", "ja"]


def test_dataset_triage_queues_disagreements_unresolved_and_a_qa_sample_once():
    data = dataset("imported")
    disagree = make_item("fr", on=data, verdict_rating=3)
    unresolved = make_item("fr", on=data, verdict_status=Verdict.Status.UNRESOLVED)
    agree_items = [make_item("fr", on=data, verdict_rating=2) for _ in range(12)]
    ReviewItem.objects.all().delete()
    for item in [disagree, *agree_items]:
        GoldLabel.objects.create(
            judge=item.judge, conversation=item.conversation, turn=item.turn, source="imported", rating=2
        )
    Verdict.objects.filter(turn=unresolved.turn).update(raw_text="I am not sure: maybe 2?")

    summary = dataset_triage(dataset=data, qa_rate=0.5)
    again = dataset_triage(dataset=data, qa_rate=0.5)

    by_turn = {item.turn_id: item for item in ReviewItem.objects.all()}
    assert "gold_disagrees" in by_turn[disagree.turn_id].reasons and by_turn[disagree.turn_id].priority == 250
    assert {"unresolved", "uncertain"} <= set(by_turn[unresolved.turn_id].reasons)
    # The QA sample is drawn from all 14 targets the judge scored, whatever they agree on: 7 of 14.
    qa = [i for i in by_turn.values() if "qa_sample" in i.reasons]
    assert len(qa) == 7
    assert all(i.reviews_required == QA_REVIEWS_REQUIRED and i.sample_weight == 2.0 for i in qa)
    assert summary.items_created == len(by_turn) and again.items_created == 0
    assert ReviewItem.objects.count() == len(by_turn)


def test_seed_demo_fills_the_queue_and_gives_conversations_audio(settings, tmp_path):
    from reviewapp.demo.loader import demo_seed

    settings.MEDIA_ROOT = tmp_path
    demo_seed()
    items = ReviewItem.objects.all()
    assert items.count() > 100
    assert {"gold_disagrees", "unresolved", "qa_sample"} <= {r for item in items for r in item.reasons}
    conversation = items.first().conversation
    assert conversation.audio.name.endswith(".wav") and conversation.audio.size < 400_000
    first_count = items.count()
    demo_seed()
    assert ReviewItem.objects.count() == first_count

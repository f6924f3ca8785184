"""The queue page, "start reviewing", progress, and items_from_imports."""

import pytest
from django.urls import reverse

from reviewapp.models import GoldLabel, ReviewItem, Role, Verdict
from reviewapp.services import reviews
from reviewapp.services.queue_items import items_from_imports
from reviewapp.services.triage import QA_REVIEWS_REQUIRED

from .review_data import dataset, fast_password_hasher, make_item  # noqa: F401

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


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
    reviews.item_claim(user=ana)
    reviews.review_submit(item=item, user=ana, rating=2)
    reviews.item_claim(user=ana)
    client.force_login(make_user("lea", role=Role.LEAD))

    page = client.get(reverse("queue_progress"))
    fragment = client.get(reverse("queue_progress"), **HTMX)

    reviewers, languages = page.context["reviewers"], {row.language: row for row in page.context["languages"]}
    assert [(r.username, r.reviewed, r.claimed) for r in reviewers] == [("ana", 1, 1)]
    assert languages["fr"].done == 1 and languages["de"].claimed == 1 and languages["de"].open == 1
    assert 'id="progress-tables"' in fragment.content.decode() and "<html" not in fragment.content.decode()


@pytest.mark.parametrize("size", [3, 60])
def test_queue_page_and_next_item_run_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries, size):
    for _ in range(size):
        make_item("fr")
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    with django_assert_max_num_queries(16):
        assert client.get(reverse("queue_index")).status_code == 200
    # One more on PostgreSQL than on SQLite: the languages the index walks of the claim go through.
    with django_assert_max_num_queries(15):
        assert client.post(reverse("queue_next")).status_code == 302


def test_items_from_imports_queues_disagreements_unresolved_and_a_qa_sample_once():
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

    summary = items_from_imports(dataset=data, qa_rate=0.5)
    again = items_from_imports(dataset=data, qa_rate=0.5)

    by_turn = {item.turn_id: item for item in ReviewItem.objects.all()}
    assert by_turn[disagree.turn_id].reasons == ["gold_disagrees"] and by_turn[disagree.turn_id].priority == 250
    assert set(by_turn[unresolved.turn_id].reasons) == {"unresolved", "uncertain"}
    qa = [i for i in by_turn.values() if i.reasons == ["qa_sample"]]
    assert 0 < len(qa) < len(agree_items)
    assert all(i.reviews_required == QA_REVIEWS_REQUIRED and i.sample_weight == 2.0 for i in qa)
    assert summary.items_created == len(by_turn) and again.items_created == 0
    assert ReviewItem.objects.count() == len(by_turn)


def test_seed_demo_fills_the_queue_and_gives_conversations_audio(settings, tmp_path):
    from reviewapp.services.demo import demo_seed

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

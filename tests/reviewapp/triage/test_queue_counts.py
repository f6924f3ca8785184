"""The kept queue counts (QueueCount, maintained by triggers in the writing transaction) equal a fresh
recount of the items after every kind of write: creating items, claiming, submitting, skipping, leases
given back, sending back, adjudicating, bulk actions, a triage re-run, and deleting conversations and
datasets. The recount here is a plain ORM GROUP BY over the items, independent of the code under test."""

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from reviewapp.adjudication.services import adjudication
from reviewapp.models import Conversation, Dataset, QueueCount, ReviewItem, Role, Turn
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims, queue_bulk
from reviewapp.triage.services.triage import review_items_merge
from tests.factories import dataset, judge, make_item

pytestmark = pytest.mark.django_db
Status = ReviewItem.Status


def recount() -> Counter:
    rows = ReviewItem.objects.order_by().values("language", "judge_id", "dataset_id", "status", "reasons")
    counted: Counter = Counter()
    for row in rows.annotate(n=Count("pk")):
        counted[(row["language"], row["judge_id"], row["dataset_id"], row["status"], tuple(row["reasons"]))] += row["n"]
    return counted


def kept() -> Counter:
    counted: Counter = Counter()
    for row in QueueCount.objects.values("language", "judge_id", "dataset_id", "status", "reasons", "n"):
        key = (row["language"], row["judge_id"], row["dataset_id"], row["status"], tuple(row["reasons"]))
        counted[key] += row["n"]
    return +counted  # groups that emptied (n = 0) are not counts


def assert_kept():
    assert kept() == recount()


@pytest.fixture
def people(make_user):
    return (
        make_user("ana", languages=["fr"]),
        make_user("bea", languages=["fr"]),
        make_user("lea", role=Role.LEAD),
    )


def test_new_items_are_counted_per_language_judge_dataset_status_and_reasons():
    make_item("fr", reasons=["unresolved"])
    make_item("fr", reasons=["unresolved"])
    make_item("fr-CA", reasons=["qa_sample", "unresolved"])
    make_item("ja", reasons=["qa_sample"], on=dataset("other"))

    assert_kept()
    assert sum(kept().values()) == 4
    assert kept()[("fr", judge().pk, dataset().pk, Status.OPEN, ("unresolved",))] == 2


def test_claim_skip_submit_and_an_expired_lease_keep_the_counts(people):
    ana, bea, _ = people
    first = make_item("fr", priority=300)
    make_item("fr", priority=200, reviews_required=2)
    make_item("fr", priority=100)

    assert claims.item_claim(user=ana).pk == first.pk
    assert_kept()
    reviews.item_skip(item=first, user=ana, reason="pas sûre")  # released: open again
    assert_kept()
    second = claims.item_claim(user=ana)
    reviews.review_submit(item=second, user=ana, rating=2)  # one of two reviews: stays in review
    assert_kept()
    third = claims.item_claim(user=ana)
    ReviewItem.objects.filter(pk=third.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    taken = claims.item_claim(user=bea)  # the expired lease is free again
    assert_kept()
    reviews.review_submit(item=taken, user=bea, rating=2)  # agrees with the judge: closed
    assert_kept()
    assert recount()[("fr", judge().pk, dataset().pk, Status.CLOSED, ("unresolved",))] >= 1


def test_a_disagreement_send_back_and_adjudication_keep_the_counts(people):
    ana, bea, lead = people
    item = make_item("fr", reviews_required=2, verdict_rating=2)
    for reviewer, rating in ((ana, 1), (bea, 3)):
        claims.item_claim(user=reviewer)
        reviews.review_submit(item=item, user=reviewer, rating=rating)
    item.refresh_from_db()
    assert item.status == Status.AWAITING_ADJUDICATION
    assert_kept()

    adjudication.item_send_back(item=item, lead=lead, note="Écoutez l'audio.", to="original")
    assert_kept()
    for reviewer in (ana, bea):
        claims.item_claim(user=reviewer)
        reviews.review_submit(item=item, user=reviewer, rating=1 if reviewer == ana else 3)
    assert_kept()
    item.refresh_from_db()
    adjudication.adjudication_decide(item=item, lead=lead, rationale="Trop long à l'oral.", rating=1)
    assert_kept()
    assert ReviewItem.objects.get(pk=item.pk).status == Status.CLOSED


@pytest.mark.parametrize(
    ("action", "extra"),
    [("close", {}), ("reprioritise", {"priority": 900}), ("reassign_language", {"language": "de"})],
)
def test_bulk_actions_keep_the_counts(people, action, extra):
    _, _, lead = people
    items = [make_item("fr", reasons=[("unresolved", "qa_sample")[n % 2]]) for n in range(4)]
    queue_bulk.items_bulk_update(actor=lead, item_ids=[i.pk for i in items[:3]], action=action, **extra)
    assert_kept()


def test_a_triage_rerun_that_adds_reasons_and_items_keeps_the_counts():
    item = make_item("fr", reasons=["unresolved"])
    fresh = make_item("fr-CA", reasons=["qa_sample"])
    ReviewItem.objects.filter(pk=fresh.pk).delete()  # a target triage has not queued yet
    assert_kept()

    review_items_merge(
        reasons={
            (item.judge_id, (item.conversation_id, item.turn_id)): {"runs_disagree"},
            (fresh.judge_id, (fresh.conversation_id, fresh.turn_id)): {"qa_sample"},
        },
        qa_weight={(fresh.judge_id, (fresh.conversation_id, fresh.turn_id)): 4.0},
    )

    assert_kept()
    assert ReviewItem.objects.count() == 2
    assert kept()[("fr", item.judge_id, item.dataset_id, Status.OPEN, ("unresolved", "runs_disagree"))] == 1


def test_deleting_conversations_and_datasets_keeps_the_counts():
    make_item("fr")
    gone = make_item("fr")
    make_item("de", on=dataset("other"))
    make_item("de", on=dataset("other"))

    Conversation.objects.filter(pk=gone.conversation_id).delete()
    assert_kept()
    Dataset.objects.filter(name="other").delete()
    assert_kept()
    assert sum(kept().values()) == 1


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL notes item writes and folds them per statement"
)
def test_bulk_writes_of_one_group_are_folded_per_statement_and_leave_no_note():
    """Many items of one group written, moved and deleted by single statements: the counts follow,
    and the notes (migration 0015) are gone at each statement's end, inside the transaction."""
    first = make_item("fr", reasons=["unresolved"])
    template = {
        field.attname: getattr(first, field.attname)
        for field in ReviewItem._meta.concrete_fields
        if field.attname not in ("id", "turn_id")
    }
    turns = []
    for _ in range(3):
        turns += list(Turn.objects.filter(conversation=make_item("fr", reasons=["unresolved"]).conversation))
    ReviewItem.objects.filter(turn__in=turns).delete()

    def notes() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM reviewapp_queuecount_delta")
            return cursor.fetchone()[0]

    with transaction.atomic():
        ReviewItem.objects.bulk_create(ReviewItem(**template, turn=turn) for turn in turns)
        assert notes() == 0
        assert_kept()
        assert kept()[("fr", first.judge_id, first.dataset_id, Status.OPEN, ("unresolved",))] == 1 + len(turns)
        ReviewItem.objects.filter(turn__in=turns).update(status=Status.CLOSED)
        assert notes() == 0
        assert_kept()
        ReviewItem.objects.filter(turn__in=turns[:4]).delete()
        assert notes() == 0
        assert_kept()
    assert kept()[("fr", first.judge_id, first.dataset_id, Status.CLOSED, ("unresolved",))] == len(turns) - 4

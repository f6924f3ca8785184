"""What one submitted label writes: the unanimous gold in one upsert (a turn's or a conversation's), the
signature recheck only for a judge with usable signatures, and the audit events in the order they happened;
every row in a fixed number of statements (one on PostgreSQL), and the item read once under its lock."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviewapp.models import AuditEvent, Comment, GoldLabel, Review, ReviewItem
from reviewapp.review.selectors import review_screen
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import ReviewItemFactory, add_signature, category, make_item

pytestmark = pytest.mark.django_db
UNANIMOUS = GoldLabel.Source.UNANIMOUS


def _close(item, user, **fields):
    claims.item_claim(user=user, item=item)
    return reviews.review_submit(item=item, user=user, rating=2, **fields)


@pytest.mark.parametrize("level", ["turn", "conversation"])
def test_a_closing_updates_the_one_unanimous_gold_of_its_target_or_writes_it(make_user, level):
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr", verdict_rating=2)
    if level == "conversation":
        item = ReviewItemFactory(judge=item.judge, conversation=item.conversation, turn=None, dataset=item.dataset)
    old = GoldLabel.objects.create(
        judge=item.judge,
        conversation=item.conversation,
        turn=item.turn,
        source=UNANIMOUS,
        rating=3,
        failure_modes=["gloss"],
        excluded=True,
    )
    GoldLabel.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    other = GoldLabel.objects.create(  # imported gold of the same target is another row, left alone
        judge=item.judge, conversation=item.conversation, turn=item.turn, source=GoldLabel.Source.IMPORTED, rating=1
    )

    review = _close(item, ana, categories=[category()])

    item.refresh_from_db()
    assert item.status == ReviewItem.Status.CLOSED
    gold = GoldLabel.objects.get(judge=item.judge, conversation=item.conversation, turn=item.turn, source=UNANIMOUS)
    assert gold.pk == old.pk and gold.created_at < timezone.now() - timedelta(days=2)
    assert (gold.rating, gold.excluded, gold.failure_modes) == (2.0, False, ["verbosity"])
    assert gold.metadata == {"review_item": item.pk, "reviews": [review.pk]}
    assert GoldLabel.objects.get(pk=other.pk).rating == 1

    GoldLabel.objects.filter(pk=old.pk).delete()
    second = make_item("fr", verdict_rating=2)
    if level == "conversation":
        second = ReviewItemFactory(judge=item.judge, conversation=second.conversation, turn=None, dataset=item.dataset)
    _close(second, make_user("bea", languages=["fr"]))
    written = GoldLabel.objects.get(conversation=second.conversation, turn=second.turn, source=UNANIMOUS)
    assert (written.rating, written.failure_modes, written.turn_id) == (2.0, [], second.turn_id)
    assert timezone.now() - written.created_at < timedelta(minutes=1)


@pytest.mark.parametrize(("signature", "queued"), [("active", True), ("suspended", False), ("none", False)])
def test_new_gold_queues_a_signature_recheck_only_when_its_judge_has_usable_signatures(
    make_user, django_capture_on_commit_callbacks, signature, queued
):
    item = make_item("fr", verdict_rating=2)
    if signature != "none":
        add_signature(item.judge, suspended_at=timezone.now() if signature == "suspended" else None)
    asked = []
    with django_capture_on_commit_callbacks(execute=True):
        _close(item, make_user("ana", languages=["fr"]), after_gold=asked.append)
    assert asked == ([item.judge_id] if queued else [])
    with django_capture_on_commit_callbacks(execute=True):  # no dispatch given: nothing is queued
        _close(make_item("fr", verdict_rating=2), make_user("bea", languages=["fr"]))
    assert asked == ([item.judge_id] if queued else [])


def test_a_label_with_a_comment_writes_its_three_events_in_order(make_user):
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr", verdict_rating=2)
    claims.item_claim(user=ana, item=item)
    first = AuditEvent.objects.order_by("-pk").first().pk

    review = reviews.review_submit(item=item, user=ana, rating=2, comment="  Trop long.  ", categories=[category()])

    events = list(AuditEvent.objects.filter(pk__gt=first).order_by("pk"))
    assert [e.action for e in events] == ["comment.create", "review.submit", "item.closed"]
    assert [e.pk for e in events] == list(range(events[0].pk, events[0].pk + 3))
    comment = item.turn.comments.get()
    assert events[0].object_id == str(comment.pk) and events[1].object_id == str(review.pk)
    assert events[0].after == {
        "turn": item.turn_id,
        "parent": None,
        "categories": ["verbosity"],
        "flagged_for_lead": False,
    }
    assert comment.body == "Trop long." and [c.slug for c in comment.categories.all()] == ["verbosity"]
    assert comment.judge_id == item.judge_id and all(e.actor_id == ana.pk for e in events)


# The label's statements inside the test's transaction: its SAVEPOINT and RELEASE, the item under its lock,
# its reviews with its verdicts (one read), then its writes: one statement on PostgreSQL; on SQLite the
# review, its categories, the comment, its categories, the gold, the item and the audit events one by one.
LABEL_STATEMENTS = {"postgresql": 4 + 1, "sqlite": 3 + 7 + 1}


def test_a_new_label_with_a_comment_writes_every_row_in_a_fixed_number_of_statements(
    make_user, django_assert_num_queries
):
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr", verdict_rating=2)
    claims.item_claim(user=ana, item=item)
    gloss, verbosity = category("gloss"), category()
    first = AuditEvent.objects.order_by("-pk").first().pk

    with django_assert_num_queries(LABEL_STATEMENTS[connection.vendor]):
        review = reviews.review_submit(
            item=item, user=ana, rating=2, comment="Trop long.", categories=[verbosity, gloss], seconds_spent=7
        )

    stored = Review.objects.get(item=item)
    assert stored.pk == review.pk and not review._state.adding
    assert (stored.reviewer_id, stored.rating, stored.comment, stored.seconds_spent) == (ana.pk, 2.0, "Trop long.", 7)
    assert sorted(c.slug for c in stored.categories.all()) == ["gloss", "verbosity"]
    assert timezone.now() - stored.created_at < timedelta(minutes=1) and stored.updated_at >= stored.created_at
    comment = Comment.objects.get(turn=item.turn)
    assert (comment.author_id, comment.judge_id, comment.body) == (ana.pk, item.judge_id, "Trop long.")
    assert sorted(c.slug for c in comment.categories.all()) == ["gloss", "verbosity"]
    gold = GoldLabel.objects.get(turn=item.turn, source=UNANIMOUS)
    assert gold.metadata == {"review_item": item.pk, "reviews": [review.pk]}
    assert (gold.rating, gold.failure_modes) == (2.0, ["gloss", "verbosity"])
    item.refresh_from_db()
    assert (item.status, item.claimed_by_id, item.lease_expires_at) == (ReviewItem.Status.CLOSED, None, None)
    events = list(AuditEvent.objects.filter(pk__gt=first).order_by("pk"))
    assert [(e.action, e.object_type, e.object_id) for e in events] == [
        ("comment.create", "reviewapp.comment", str(comment.pk)),
        ("review.submit", "reviewapp.review", str(review.pk)),
        ("item.closed", "reviewapp.reviewitem", str(item.pk)),
    ]
    assert events[2].before["claimed_by"] == ana.pk and events[2].after["status"] == "closed"


def test_the_second_of_two_agreeing_labels_gives_gold_both_reviews_and_their_categories(make_user):
    item = make_item("fr", verdict_rating=2, reviews_required=2)
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    claims.item_claim(user=ana, item=item)
    first = reviews.review_submit(item=item, user=ana, rating=2, categories=[category("gloss")])
    assert not GoldLabel.objects.filter(turn=item.turn, source=UNANIMOUS).exists()
    claims.item_claim(user=bea, item=item)

    second = reviews.review_submit(item=item, user=bea, rating=2, categories=[category()])

    gold = GoldLabel.objects.get(turn=item.turn, source=UNANIMOUS)
    assert gold.metadata == {"review_item": item.pk, "reviews": [first.pk, second.pk]}
    assert gold.failure_modes == ["gloss", "verbosity"]
    assert [c.slug for c in Review.objects.get(pk=second.pk).categories.all()] == ["verbosity"]


@pytest.mark.django_db(transaction=True)  # no test transaction around it: the caller holds none
def test_a_label_on_an_item_said_to_be_locked_is_refused_outside_a_transaction(make_user):
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr", verdict_rating=2)
    claims.item_claim(user=ana, item=item)
    with pytest.raises(ValueError, match="caller's transaction"):
        reviews.review_submit(item=item, user=ana, rating=2, locked=True)
    assert not Review.objects.exists()


@pytest.mark.parametrize(("signature", "signed"), [("active", True), ("suspended", False), ("none", False)])
def test_the_locked_read_of_the_screen_says_whether_its_judge_has_usable_signatures(make_user, signature, signed):
    item = make_item("fr", verdict_rating=2)
    if signature != "none":
        add_signature(item.judge, suspended_at=timezone.now() if signature == "suspended" else None)
    read = review_screen.item_for_review(item_id=item.pk, user=make_user("ana", languages=["fr"]), lock=True)
    assert read.pk == item.pk and read.judge_signed is signed
    assert read.judge == item.judge and read.turn == item.turn and read.labelled is False

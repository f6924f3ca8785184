"""The review state machine: claims and leases, reviews, overlap, skips, comments, taxonomy, audit."""

from datetime import timedelta

import pytest
from django.utils import timezone

from reviewapp.models import AuditEvent, Comment, GoldLabel, ReviewItem, ReviewSkip, Role, Verdict
from reviewapp.review.services import comments as comments_services
from reviewapp.review.services import reviews
from reviewapp.triage.selectors.queue_filters import QueueFilters
from reviewapp.triage.services import claims as claims_services
from reviewapp.triage.services.claims import LEASE, ReviewError
from tests.factories import category, make_item

pytestmark = pytest.mark.django_db
Status = ReviewItem.Status


def test_claim_gives_the_highest_priority_item_in_the_reviewers_languages(make_user):
    low = make_item("fr", priority=100)
    high = make_item("fr-CA", priority=300)
    make_item("ja", priority=900)
    ana = make_user("ana", languages=["fr"])

    claimed = claims_services.item_claim(user=ana)

    assert claimed.pk == high.pk
    claimed.refresh_from_db()
    assert claimed.status == Status.IN_REVIEW and claimed.claimed_by == ana
    assert timedelta(minutes=14) < claimed.lease_expires_at - timezone.now() <= LEASE
    # Asking again resumes the same item instead of taking a second one.
    assert claims_services.item_claim(user=ana).pk == high.pk
    # A filter narrows the choice; claiming another item gives the held one back.
    other = claims_services.item_claim(user=ana, item=low)
    assert other.pk == low.pk
    high.refresh_from_db()
    assert high.claimed_by is None and high.status == Status.OPEN


def test_two_reviewers_never_get_the_same_item(make_user):
    first, second = make_item("fr", priority=200), make_item("fr", priority=100)
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])

    assert claims_services.item_claim(user=ana).pk == first.pk
    assert claims_services.item_claim(user=ben).pk == second.pk
    assert claims_services.item_claim(user=make_user("cy", languages=["fr"])) is None


def test_the_conditional_claim_checks_rows_affected_and_tries_the_next_candidate(make_user):
    taken, free = make_item("fr", priority=200), make_item("fr", priority=100)
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    now = timezone.now()
    # Ben claimed `taken` after Ana's candidate list was read: her UPDATE on it must affect no row.
    ReviewItem.objects.filter(pk=taken.pk).update(claimed_by=ben, lease_expires_at=now + LEASE, status=Status.IN_REVIEW)
    stale_candidates = ReviewItem.objects.order_by("-priority", "id")

    before, claimed = claims_services._claim_conditional(user=ana, candidates=stale_candidates, now=now)

    assert claimed.pk == free.pk and claimed.claimed_by_id == ana.pk
    taken.refresh_from_db()
    assert taken.claimed_by_id == ben.pk
    assert before["status"] == Status.OPEN


def test_an_expired_lease_puts_the_item_back_in_the_queue(make_user):
    item = make_item("fr")
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    claims_services.item_claim(user=ana, now=timezone.now() - timedelta(minutes=20))

    claimed = claims_services.item_claim(user=ben)

    assert claimed.pk == item.pk and claimed.claimed_by_id == ben.pk
    with pytest.raises(ReviewError, match="no longer hold"):
        claims_services.lease_renew(item=item, user=ana)
    later = claims_services.lease_renew(item=item, user=ben, now=timezone.now() + timedelta(minutes=10))
    assert later > timezone.now() + timedelta(minutes=20)


def test_reviewed_and_skipped_items_are_never_offered_again(make_user):
    reviewed, skipped = make_item("fr", priority=300, reviews_required=2), make_item("fr", priority=200)
    ana = make_user("ana", languages=["fr"])
    claims_services.item_claim(user=ana)
    reviews.review_submit(item=reviewed, user=ana, rating=2)
    assert claims_services.item_claim(user=ana).pk == skipped.pk
    reviews.item_skip(item=skipped, user=ana, reason="Not my dialect")

    assert claims_services.item_claim(user=ana) is None
    skipped.refresh_from_db()
    assert skipped.status == Status.OPEN and skipped.claimed_by is None
    assert ReviewSkip.objects.get(item=skipped).reason == "Not my dialect"
    # The item needing two reviews stays claimable by someone else.
    assert claims_services.item_claim(user=make_user("ben", languages=["fr"])).pk == reviewed.pk


def test_agreeing_with_the_judge_closes_the_item_and_writes_unanimous_gold(make_user):
    item = make_item("fr", verdict_rating=2)
    verdict = Verdict.objects.get(turn=item.turn)
    ana = make_user("ana", languages=["fr"])
    claims_services.item_claim(user=ana)
    cat = category()

    review = reviews.review_submit(
        item=item,
        user=ana,
        rating=2,
        categories=[cat],
        verdict_agreement={verdict.pk: "agree"},
        comment="Trop long à l'oral.",
        quoted_span="je vous souhaite  un excellent voyage",
        seconds_spent=31,
    )

    item.refresh_from_db()
    assert item.status == Status.CLOSED and item.claimed_by is None
    gold = GoldLabel.objects.get(turn=item.turn, source=GoldLabel.Source.UNANIMOUS)
    assert gold.rating == 2 and gold.failure_modes == ["verbosity"]
    assert review.verdict_agreement == {str(verdict.pk): "agree"}
    comment = Comment.objects.get(turn=item.turn)
    assert comment.body == "Trop long à l'oral." and list(comment.categories.all()) == [cat]
    events = {e.action: e for e in AuditEvent.objects.filter(actor=ana)}
    assert {"item.claim", "review.submit", "item.closed", "comment.create"} <= set(events)
    assert events["item.closed"].before["status"] == Status.IN_REVIEW
    assert events["item.closed"].after == {"status": Status.CLOSED, "claimed_by": None, "lease_expires_at": None}


def test_disagreeing_with_the_judge_goes_to_a_lead(make_user):
    item = make_item("fr", verdict_rating=3)
    ana = make_user("ana", languages=["fr"])
    claims_services.item_claim(user=ana)
    reviews.review_submit(item=item, user=ana, rating=1)
    item.refresh_from_db()
    assert item.status == Status.AWAITING_ADJUDICATION
    assert not GoldLabel.objects.filter(source=GoldLabel.Source.UNANIMOUS).exists()


def test_k_reviews_overlap_then_reviewers_who_disagree_go_to_a_lead(make_user):
    agreeing = make_item("fr", verdict_rating=2, reviews_required=2, priority=200)
    split = make_item("fr", verdict_status=Verdict.Status.UNRESOLVED, reviews_required=2, priority=100)
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])

    for reviewer in (ana, ben):
        assert claims_services.item_claim(user=reviewer).pk == agreeing.pk
        reviews.review_submit(item=agreeing, user=reviewer, rating=2)
        agreeing.refresh_from_db()
        if reviewer == ana:
            assert agreeing.status == Status.IN_REVIEW and agreeing.claimed_by is None
    assert agreeing.status == Status.CLOSED

    claims_services.item_claim(user=ana)
    reviews.review_submit(item=split, user=ana, rating=1)
    claims_services.item_claim(user=ben)
    reviews.review_submit(item=split, user=ben, rating=3)
    split.refresh_from_db()
    assert split.status == Status.AWAITING_ADJUDICATION


def test_binary_judges_compare_pass_and_fail(make_user):
    from tests.factories import judge

    judge("speakability", scale="binary", low=0, high=1)
    item = make_item("fr", judge_slug="speakability", verdict_rating=None, verdict_passed=False)
    ana = make_user("ana", languages=["fr"])
    claims_services.item_claim(user=ana)
    review = reviews.review_submit(item=item, user=ana, rating=0)
    item.refresh_from_db()
    assert review.passed is False and item.status == Status.CLOSED


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rating": 7}, "at most 3"),
        ({"rating": None}, "Give a rating"),
        ({"rating": 2, "quoted_span": "words never said"}, "copied from the turn"),
        ({"rating": 2, "verdict_agreement": {999999: "agree"}}, "not a verdict on this item"),
    ],
)
def test_invalid_reviews_are_refused_with_a_clear_error(make_user, kwargs, message):
    item = make_item("fr")
    ana = make_user("ana", languages=["fr"])
    claims_services.item_claim(user=ana)
    with pytest.raises(ReviewError, match=message):
        reviews.review_submit(item=item, user=ana, **kwargs)
    item.refresh_from_db()
    assert item.status == Status.IN_REVIEW and not item.reviews.exists()


def test_state_changes_that_make_no_sense_are_refused(make_user):
    item = make_item("fr")
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    claims_services.item_claim(user=ana)
    with pytest.raises(ReviewError, match="Another reviewer holds"):
        reviews.review_submit(item=item, user=ben, rating=2)
    with pytest.raises(ReviewError, match="Say why"):
        reviews.item_skip(item=item, user=ana, reason="  ")
    reviews.review_submit(item=item, user=ana, rating=2)
    with pytest.raises(ReviewError, match="takes no more reviews"):
        reviews.review_submit(item=item, user=ben, rating=2)
    with pytest.raises(ReviewError, match="nothing to skip"):
        reviews.item_skip(item=item, user=ben, reason="late")
    with pytest.raises(ReviewError, match="not assigned"):
        other = make_item("ja")
        reviews.review_submit(item=other, user=ana, rating=2)


def test_filters_limit_what_start_reviewing_claims(make_user):
    make_item("fr", priority=300, reasons=["unresolved"])
    qa = make_item("fr", priority=100, reasons=["qa_sample"])
    ana = make_user("ana", languages=["fr"])
    assert claims_services.item_claim(user=ana, filters=QueueFilters(reason="qa_sample")).pk == qa.pk


def test_comment_replies_stay_one_level_deep_and_are_audited(make_user):
    item = make_item("fr")
    lea = make_user("lea", role=Role.LEAD)
    top = comments_services.comment_create(author=lea, turn=item.turn, body="Which reading is right?")
    reply = comments_services.comment_create(author=lea, turn=item.turn, body="The 24-hour one.", parent=top)
    deeper = comments_services.comment_create(author=lea, turn=item.turn, body="Agreed.", parent=reply)
    assert reply.parent == top and deeper.parent == top
    other = make_item("fr")
    with pytest.raises(ReviewError, match="same turn"):
        comments_services.comment_create(author=lea, turn=other.turn, body="x", parent=top)
    with pytest.raises(ReviewError, match="needs some text"):
        comments_services.comment_create(author=lea, turn=item.turn, body="  ")
    comments_services.comment_flag(comment=top, user=lea, flagged=True)
    top.refresh_from_db()
    assert top.flagged_for_lead
    assert AuditEvent.objects.filter(action="comment.flag", object_id=str(top.pk), after={"flagged_for_lead": True})


def test_categories_are_created_renamed_and_retired_never_reslugged(make_user):
    lea = make_user("lea", role=Role.LEAD)
    created = comments_services.category_create(actor=lea, slug="number-reading", name="Number reading")
    with pytest.raises(ReviewError, match="exists already"):
        comments_services.category_create(actor=lea, slug="number-reading", name="Again")
    comments_services.category_update(
        actor=lea, category=created, name="Numbers read aloud", description="", active=False
    )
    created.refresh_from_db()
    assert created.slug == "number-reading" and not created.active
    item = make_item("fr")
    with pytest.raises(ReviewError, match="Retired"):
        comments_services.comment_create(author=lea, turn=item.turn, body="x", categories=[created])
    event = AuditEvent.objects.get(action="category.update")
    assert event.before["name"] == "Number reading" and event.after["active"] is False


def test_claims_follow_queue_order_across_languages_and_statuses(make_user):
    """The claim reads one short index walk per (status, language) and merges them: the order must be
    the plain ORDER BY priority DESC, id over every claimable item."""
    from reviewapp.triage.selectors.claims import claim_candidate_ids, claim_candidates

    for n in range(24):
        make_item(("fr", "fr-CA", "fr-BE", "de")[n % 4], priority=(100, 300, 200)[n % 3], reviews_required=2)
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    for _ in range(3):  # ben's reviews leave three items in review, still claimable by ana
        item = claims_services.item_claim(user=ben)
        reviews.review_submit(item=item, user=ben, rating=2)
    now = timezone.now()
    expected = list(claim_candidates(user=ana, filters=None, now=now).values_list("pk", flat=True))

    assert len(expected) == 18
    assert claim_candidate_ids(user=ana, filters=None, now=now, limit=10) == expected[:10]
    in_review = QueueFilters(status=Status.IN_REVIEW)
    assert claim_candidate_ids(user=ana, filters=in_review, now=now, limit=10) == list(
        claim_candidates(user=ana, filters=in_review, now=now).values_list("pk", flat=True)
    )
    assert claim_candidate_ids(user=ana, filters=QueueFilters(status=Status.CLOSED), now=now, limit=10) == []
    claimed = claims_services.item_claim(user=ana, filters=QueueFilters(language="FR-be"))
    assert claimed.language == "fr-BE"
    assert claimed.pk == next(pk for pk in expected if ReviewItem.objects.get(pk=pk).language == "fr-BE")

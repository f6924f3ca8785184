""" "Start reviewing": the statement compiled once per shape reads the same held item and the same
claimable items as the ORM's querysets it was compiled from (every filter, a reviewer and a lead,
skipped, reviewed, sent back and held items), and the claim that takes one writes the same item state
and the same audit event as before, in fewer statements: on PostgreSQL with the take and its event in
one statement, on SQLite inside one transaction that holds the write lock from its start."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from reviewapp.models import AuditEvent, Review, ReviewItem, Role
from reviewapp.review.services import reviews
from reviewapp.triage.selectors import claim_sql
from reviewapp.triage.selectors.claims import claim_candidate_ids, held_item
from reviewapp.triage.selectors.queue_filters import QueueFilters, review_languages
from reviewapp.triage.services import claims
from tests.factories import mixed_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(make_user):
    other = mixed_queue()
    ana, lead, bo = (
        make_user("ana", languages=["fr", "de"]),
        make_user("lea", role=Role.LEAD),
        make_user("bo", languages=["fr"]),
    )
    _, second, third = ReviewItem.objects.filter(language="fr").order_by("-priority", "id")[:3]
    reviews.item_skip(item=second, user=ana, reason="pas sûre")
    reviews.review_submit(item=claims.item_claim(user=ana), user=ana, rating=2)
    # Sent back to its reviewer: only bo may take it again.
    Review.objects.create(item=third, reviewer=bo, rating=1, revision_requested=True)
    in_review = list(ReviewItem.objects.filter(language="de").order_by("id").values_list("pk", flat=True)[:2])
    ReviewItem.objects.filter(pk__in=in_review).update(status=ReviewItem.Status.IN_REVIEW)
    return ana, lead, other, third


def _values(item: ReviewItem) -> list:
    return [getattr(item, field.attname) for field in ReviewItem._meta.concrete_fields]


FILTERS = [
    None,
    QueueFilters(),
    QueueFilters(language="FR"),
    QueueFilters(language="fr-ca", reason="qa_sample"),
    QueueFilters(judge="speakability"),
    QueueFilters(judge="no-such-judge"),
    QueueFilters(dataset=1, reason="gold_disagrees"),
    QueueFilters(status="in_review"),
    QueueFilters(status="closed"),
    QueueFilters(language="ja"),
]


def test_held_and_candidates_are_the_querysets_for_every_filter(world):
    ana, lead, other, _ = world
    now = timezone.now()
    compared = 0
    for holding in (False, True):
        if holding:
            claims.item_claim(user=ana, now=now)
            claims.item_claim(user=lead, now=now)
        for user in (ana, lead):
            languages = review_languages(user=user)
            held = held_item(user=user, now=now, languages=languages)
            assert (held is not None) is holding
            for filters in FILTERS:
                if filters is not None and filters.dataset:
                    filters = QueueFilters(dataset=other.pk, reason=filters.reason)
                expected = claim_candidate_ids(user=user, filters=filters, now=now, limit=10, languages=languages)
                found = claim_sql.held_and_candidates(
                    user=user, filters=filters, now=now, languages=languages, limit=10
                )
                assert found[0] == (held.pk if held else None), (user, filters)
                assert sorted(found[1]) == sorted(expected), (user, filters)
                rows = claim_sql.held_and_candidate_rows(
                    user=user, filters=filters, now=now, languages=languages, limit=10
                )
                assert (rows[0].pk if rows[0] else None) == found[0], (user, filters)
                in_order = list(ReviewItem.objects.filter(pk__in=expected).order_by("-priority", "id"))
                assert rows[1] == in_order, (user, filters)  # whole items, in claim order
                assert list(map(_values, rows[1])) == list(map(_values, in_order))
                compared += len(expected)
    assert compared > 100


def test_the_sent_back_item_is_only_its_reviewers(world, make_user):
    _, _, _, sent_back = world
    bo = make_user("bo-2", languages=["fr"])
    now = timezone.now()
    _, ids = claim_sql.held_and_candidates(
        user=bo, filters=None, now=now, languages=review_languages(user=bo), limit=50
    )
    assert sent_back.pk not in ids and ids
    original = Review.objects.get(item=sent_back).reviewer
    _, ids = claim_sql.held_and_candidates(
        user=original, filters=None, now=now, languages=review_languages(user=original), limit=50
    )
    assert sent_back.pk in ids


@pytest.mark.parametrize("microseconds", [0, 123456])
def test_a_claim_writes_the_item_and_its_audit_event_as_audit_record_does(world, make_user, microseconds):
    ana, *_ = world
    now = datetime(2031, 5, 6, 7, 8, 9, 250000, tzinfo=UTC)
    expired = datetime(2031, 5, 6, 6, 0, 1, microseconds, tzinfo=UTC)
    other = make_user("cy", languages=["fr", "de"])
    top = ReviewItem.objects.filter(language__in=["fr", "de"], status="open").order_by("-priority", "id").first()
    ReviewItem.objects.filter(pk=top.pk).update(priority=999, claimed_by=other, lease_expires_at=expired)

    claimed = claims.item_claim(user=ana, filters=QueueFilters(), now=now)

    assert claimed.pk == top.pk and claimed.claimed_by == ana
    stored = ReviewItem.objects.get(pk=top.pk)
    assert (stored.claimed_by_id, stored.lease_expires_at, stored.status) == (ana.pk, now + claims.LEASE, "in_review")
    assert (claimed.lease_expires_at, claimed.status, claimed.updated_at) == (now + claims.LEASE, "in_review", now)
    event = AuditEvent.objects.filter(action="item.claim", object_id=str(top.pk)).get()
    assert (event.actor_id, event.object_type) == (ana.pk, "reviewapp.reviewitem")
    stamp = "2031-05-06T06:00:01" + (".123456" if microseconds else "") + "+00:00"
    assert event.before == {"status": "open", "claimed_by": other.pk, "lease_expires_at": stamp}
    assert event.after == {
        "status": "in_review",
        "claimed_by": ana.pk,
        "lease_expires_at": "2031-05-06T07:23:09.250000+00:00",
    }
    assert abs(event.created_at - timezone.now()) < timedelta(minutes=1)


def test_claiming_again_renews_the_held_lease_and_writes_no_event(world):
    ana, *_ = world
    now = timezone.now()
    first = claims.item_claim(user=ana, now=now)
    events = AuditEvent.objects.count()
    later = now + timedelta(minutes=5)

    again = claims.item_claim(user=ana, filters=QueueFilters(language="de"), now=later)

    assert again.pk == first.pk and again.claimed_by == ana and again.lease_expires_at == later + claims.LEASE
    assert ReviewItem.objects.get(pk=first.pk).lease_expires_at == later + claims.LEASE
    assert AuditEvent.objects.count() == events


def test_start_reviewing_costs_a_fixed_few_statements(client, world, django_assert_num_queries):
    ana, *_ = world
    client.force_login(ana)
    if connection.vendor == "postgresql":
        # The session with its user, languages, held and candidates, take with its audit event.
        take, renew = 4, 4
    else:
        # The session with its user; in one transaction (a savepoint inside the test's) the languages, the held or
        # first claimable item whole, its UPDATE and (for a take) its audit event.
        take, renew = 7, 6
    # The first time, the session's write too (in a savepoint here; a server writes it alone).
    with django_assert_num_queries(take + 3):
        response = client.post(reverse("queue_next"))
    assert response.status_code == 302 and "/review/" in response.url
    held = ReviewItem.objects.get(claimed_by=ana, status="in_review", lease_expires_at__gt=timezone.now())
    reviews.review_submit(item=held, user=ana, rating=2)
    with django_assert_num_queries(take):
        response = client.post(reverse("queue_next"))
    assert response.status_code == 302 and response.url != reverse("review_item", args=[held.pk])
    # Resuming the held item: its lease renewed instead of a take.
    with django_assert_num_queries(renew):
        again = client.post(reverse("queue_next"))
    assert again.url == response.url


def test_a_reviewer_with_no_language_of_theirs_claims_nothing(make_user, world):
    nobody = make_user("zoe", languages=["ko"])
    assert claim_sql.held_and_candidates(user=nobody, filters=None, now=timezone.now(), languages=[], limit=10) == (
        None,
        [],
    )
    assert claims.item_claim(user=nobody) is None

"""Concurrent claims on PostgreSQL: many reviewers asking at the same instant never share an item.

Each thread has its own database connection, so the claims really race inside PostgreSQL, where
item_claim locks its candidate with SELECT ... FOR UPDATE SKIP LOCKED.
"""

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections

from reviewapp.models import AuditEvent, Conversation, Dataset, Judge, Profile, ReviewItem, Role, Turn
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims as claims_services

pytestmark = pytest.mark.django_db(transaction=True)
REVIEWERS = 8
ITEMS = 60


def queue_of(size: int) -> list[int]:
    judge = Judge.objects.create(slug="conciseness", scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3)
    dataset = Dataset.objects.create(name="race")
    conversation = Conversation.objects.create(dataset=dataset, external_id="race-1", language="fr")
    Turn.objects.bulk_create(
        Turn(conversation=conversation, position=p, role="agent", text=f"t{p}") for p in range(size)
    )
    items = ReviewItem.objects.bulk_create(
        ReviewItem(
            judge=judge,
            conversation=conversation,
            turn=turn,
            dataset=dataset,
            language="fr",
            reasons=["qa_sample"],
            priority=size - i % 5,
        )
        for i, turn in enumerate(conversation.turns.order_by("position"))
    )
    return [item.pk for item in items]


def reviewers(n: int) -> list:
    users = [get_user_model().objects.create_user(f"r{i}", password="x") for i in range(n)]
    Profile.objects.bulk_create(Profile(user=u, role=Role.REVIEWER, languages=["fr"]) for u in users)
    return users


def race(users, work, *, timeout: float) -> list[BaseException]:
    """work(user) for every user, each in its own thread (and database connection), all released at the
    same instant; what the threads raised."""
    start = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def run(user) -> None:
        try:
            start.wait()
            work(user)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    return errors


def claim_every_item(users, items: int, *, seconds: float) -> tuple[dict[int, list[int]], list, list[BaseException]]:
    """Every user claims and skips until they have seen `items` items, all racing at once: the items each
    claimed, the clashes (an item given to one while another held it) and what the threads raised.
    Skipping releases the item for others but never offers it to this reviewer again, so each reviewer
    walks the whole queue while racing everyone else for each item."""
    claims: dict[int, list[int]] = {u.pk: [] for u in users}
    holders: dict[int, int] = {}
    clashes: list[tuple[int, int, int]] = []
    guard = threading.Lock()

    def work(user) -> None:
        deadline = time.monotonic() + seconds
        while len(claims[user.pk]) < items and time.monotonic() < deadline:
            item = claims_services.item_claim(user=user)
            if item is None:  # what is left is held by others for now
                time.sleep(0.01)
                continue
            with guard:
                if item.pk in holders:
                    clashes.append((item.pk, user.pk, holders[item.pk]))
                holders[item.pk] = user.pk
            claims[user.pk].append(item.pk)
            with guard:
                del holders[item.pk]
            reviews.item_skip(item=item, user=user, reason="race")

    errors = race(users, work, timeout=seconds + 30)
    return claims, clashes, errors


def test_simultaneous_claims_never_give_one_item_to_two_reviewers():
    assert connection.vendor == "postgresql", "this test proves the PostgreSQL path (SKIP LOCKED)"
    assert connection.features.has_select_for_update_skip_locked
    queue_of(ITEMS)
    users = reviewers(REVIEWERS)

    claims, clashes, errors = claim_every_item(users, ITEMS, seconds=90)

    assert not errors, errors
    assert not clashes, clashes
    # Every reviewer saw every item exactly once, and every claim was audited once.
    for user in users:
        assert sorted(claims[user.pk]) == sorted(ReviewItem.objects.values_list("pk", flat=True))
    assert AuditEvent.objects.filter(action="item.claim").count() == REVIEWERS * ITEMS


def test_first_claims_at_the_same_instant_are_all_different():
    queue_of(ITEMS)
    users = reviewers(REVIEWERS)
    got: dict[int, int] = {}

    def work(user) -> None:
        got[user.pk] = claims_services.item_claim(user=user).pk

    errors = race(users, work, timeout=60)
    assert not errors, errors
    assert len(got) == REVIEWERS and len(set(got.values())) == REVIEWERS
    held = dict(ReviewItem.objects.filter(claimed_by__isnull=False).values_list("pk", "claimed_by"))
    assert held == {item: user for user, item in got.items()}


LANGUAGES = ("fr", "fr-CA", "de", "ja", "hi")
SCALE = 100_000


def queue_at_scale(size: int) -> None:
    """`size` open items over five languages, written by PostgreSQL itself (seconds, not minutes), then
    vacuumed and analysed the way autovacuum leaves a table after a bulk load."""
    judge = Judge.objects.create(slug="conciseness", scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3)
    dataset = Dataset.objects.create(name="scale")
    conversations = [
        Conversation.objects.create(dataset=dataset, external_id=f"scale-{language}", language=language)
        for language in LANGUAGES
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO reviewapp_turn (conversation_id, position, role, text, intended_text, entities, metadata)
            SELECT (%s::bigint[])[1 + g %% 5], g, 'agent', 'turn ' || g, '', '{}', '{}'
            FROM generate_series(0, %s - 1) AS g
            """,
            [[c.pk for c in conversations], size],
        )
        cursor.execute(
            """
            INSERT INTO reviewapp_reviewitem (judge_id, conversation_id, turn_id, dataset_id, language, reasons,
                priority, plan_term, sample_weight, status, reviews_required, lead_note, created_at, updated_at)
            SELECT %s, t.conversation_id, t.id, %s, c.language,
                (ARRAY['["unresolved"]', '["qa_sample"]', '["runs_disagree", "qa_sample"]'])[1 + t.id %% 3]::jsonb,
                (ARRAY[100, 200, 250, 300])[1 + t.id %% 4], 0, 1.0, 'open', 1, '', now(), now()
            FROM reviewapp_turn t JOIN reviewapp_conversation c ON c.id = t.conversation_id
            WHERE c.dataset_id = %s
            """,
            [judge.pk, dataset.pk, dataset.pk],
        )
        cursor.execute("VACUUM ANALYZE reviewapp_reviewitem")


def test_queue_reads_walk_indexes_not_the_table_at_100k_items():
    """EXPLAIN on PostgreSQL at 100k items: the queue page's top list and the claim walk the active items'
    queue index (item_queue when one status is asked for), and the counts read the kept counts
    (QueueCount) without touching the items at all; none of them scans the items table."""
    from django.utils import timezone

    from reviewapp.triage.selectors.claims import claim_candidates, walked
    from reviewapp.triage.selectors.queue import count_rows, top_items
    from reviewapp.triage.selectors.queue_filters import ACTIVE, QueueFilters, review_languages

    queue_at_scale(SCALE)
    assert ReviewItem.objects.count() == SCALE
    (reviewer,) = reviewers(1)
    languages = review_languages(user=reviewer)
    assert languages == ["fr", "fr-CA"]

    plans = {
        "top list": top_items(user=reviewer, filters=QueueFilters(), languages=languages).explain(),
        "top list by reason": top_items(
            user=reviewer, filters=QueueFilters(reason="qa_sample"), languages=languages
        ).explain(),
        "in review only": top_items(
            user=reviewer, filters=QueueFilters(status="in_review"), languages=languages
        ).explain(),
        "claim": walked(
            claim_candidates(user=reviewer, filters=None, now=timezone.now(), languages=languages),
            statuses=ACTIVE,
            languages=languages,
            limit=10,
        ).explain(),
        "counts": count_rows(user=reviewer, languages=languages, statuses=ACTIVE).explain(),
        "counts with closed": count_rows(user=reviewer, languages=languages, statuses=(*ACTIVE, "closed")).explain(),
    }
    for name, plan in plans.items():
        assert "Seq Scan on reviewapp_reviewitem" not in plan, f"{name}:\n{plan}"
    for name in ("top list", "claim"):
        assert "using item_active_queue on reviewapp_reviewitem" in plans[name], f"{name}:\n{plans[name]}"
    # A reason has its own partial index in claim order (migration 0012_item_queue_per_reason): the
    # first page is read from it, not from a walk of every active item that drops the other reasons.
    assert "using item_queue_qa_sample on reviewapp_reviewitem" in plans["top list by reason"], plans[
        "top list by reason"
    ]
    assert "using item_queue on reviewapp_reviewitem" in plans["in review only"], plans["in review only"]
    for name in ("counts", "counts with closed"):
        assert "reviewapp_queuecount" in plans[name] and "reviewapp_reviewitem" not in plans[name], plans[name]

    # And the numbers are the same as a plain count of the table.
    groups = list(count_rows(user=reviewer, languages=languages, statuses=ACTIVE))
    assert sum(row[-1] for row in groups) == ReviewItem.objects.filter(language__in=languages).count() == 40_000

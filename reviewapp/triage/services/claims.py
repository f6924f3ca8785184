"""Claiming review items under a lease, renewing and giving back leases.

A claim is a 15-minute lease, renewed by the review screen's heartbeat. An expired lease needs no
sweeper: claim queries treat it as free, so the item is back in the queue the moment it expires.
While an item has fewer than its k reviews it stays `in_review` and claimable by reviewers who have
not reviewed or skipped it. Two reviewers claiming at the same moment never get the same item: on
PostgreSQL the candidate row is locked with SELECT ... FOR UPDATE SKIP LOCKED; on SQLite the next item
is read and taken in one transaction that holds the write lock from its BEGIN (`_claim_next_sqlite`),
and a given item by a conditional UPDATE that must affect one row.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.audit import audit_record, model_state
from reviewapp.models import AuditEvent, Review, ReviewItem
from reviewapp.rows import prepared_cursor
from reviewapp.triage.selectors import claim_sql
from reviewapp.triage.selectors.claims import claim_candidate_ids, claim_candidates, held_item
from reviewapp.triage.selectors.queue_filters import ACTIVE, QueueFilters, review_languages
from scoring.errors import TribunalError

LEASE = timedelta(minutes=15)
CLAIM_CANDIDATES = 10
CLAIM_ROUNDS = 5
Status = ReviewItem.Status


class ReviewError(TribunalError):
    """An invalid review action: the message says what to do instead."""


def _state(item: ReviewItem) -> dict[str, Any]:
    return model_state(item, "status", "claimed_by", "lease_expires_at")


def _lease_live(item: ReviewItem, now: datetime) -> bool:
    return bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)


def _locked(item: ReviewItem, *, with_turn: bool = False) -> ReviewItem:
    """The item re-read under a row lock (PostgreSQL; SQLite serialises writers anyway), with its judge
    and dataset (and turn when asked) in the same statement. `of=("self",)`: only the item is locked."""
    related = ("judge", "dataset", "turn") if with_turn else ("judge", "dataset")
    locked = ReviewItem.objects.select_for_update(of=("self",)).select_related(*related)
    return locked.get(pk=item.pk)


# --- claims -------------------------------------------------------------------------------------


def item_claim(
    *, user, filters: QueueFilters | None = None, item: ReviewItem | None = None, now: datetime | None = None
) -> ReviewItem | None:
    """Give `user` an item under a fresh lease: the one they already hold, else `item` if given and
    claimable, else the highest-priority claimable item matching `filters`. None when nothing is left."""
    now = now or timezone.now()
    if item is None and connection.vendor == "postgresql":
        return _claim_next_postgresql(user=user, filters=filters, now=now)
    if item is None and connection.vendor == "sqlite":
        return _claim_next_sqlite(user=user, filters=filters, now=now)
    with transaction.atomic():
        languages = review_languages(user=user)
        held = held_item(user=user, now=now, languages=languages)
        if held is not None and (item is None or held.pk == item.pk):
            return _lease_renewed(held, now=now)
        skip_locked = connection.features.has_select_for_update_skip_locked
        if skip_locked and item is None:
            claimed = _claim_skip_locked(
                user=user,
                now=now,
                read_ids=lambda: claim_candidate_ids(
                    user=user, filters=filters, now=now, limit=CLAIM_CANDIDATES, languages=languages
                ),
            )
        else:
            candidates = claim_candidates(user=user, filters=filters, now=now, languages=languages)
            if item is not None:
                candidates = candidates.filter(pk=item.pk)
            claimed = (
                _claim_skip_locked(user=user, now=now, read_ids=lambda: _first_ids(candidates))
                if skip_locked
                else _claim_conditional(user=user, candidates=candidates, now=now)
            )
        if claimed is None:
            return None
        before, claimed = claimed
        if held is not None:
            # One lease per reviewer: opening another item gives the held one back to the queue.
            _release(item=held, actor=user, action="item.release", now=now)
        audit_record(actor=user, action="item.claim", obj=claimed, before=before, after=_state(claimed))
        return claimed


def _claim_next_postgresql(*, user, filters: QueueFilters | None, now: datetime) -> ReviewItem | None:
    """`item_claim` without `item`, on PostgreSQL, in three statements and no transaction: the user's
    languages; the item they hold with the first few claimable ones (`claim_sql.held_and_candidates`);
    then the held item's lease renewed, or the first free candidate locked, taken and audited in one
    statement (`_take_audited`). Each write is one statement, so none needs BEGIN and COMMIT."""
    languages = review_languages(user=user)

    def step():
        held, ids = claim_sql.held_and_candidates(
            user=user, filters=filters, now=now, languages=languages, limit=CLAIM_CANDIDATES
        )
        if held is not None:
            return _renewed(item_id=held, user=user, now=now)
        if not ids:
            return None
        taken = _take_audited(ids=ids, user=user, now=now)
        return _AGAIN if taken is None else taken

    return _in_rounds(step)


def _claim_next_sqlite(*, user, filters: QueueFilters | None, now: datetime) -> ReviewItem | None:
    """`item_claim` without `item`, on SQLite: in one transaction, which holds SQLite's write lock from
    its BEGIN (`transaction_mode` IMMEDIATE), the user's languages; the item they hold, or else the first
    claimable one, read whole (`claim_sql.held_and_candidate_rows`); its lease renewed, or it taken and
    audited. No other writer runs between the read and the write, so the first candidate read is free
    when it is taken: four statements and the transaction's two."""
    with transaction.atomic():
        languages = review_languages(user=user)
        held, candidates = claim_sql.held_and_candidate_rows(
            user=user, filters=filters, now=now, languages=languages, limit=1
        )
        if held is not None:
            held.claimed_by = user
            return _lease_renewed(held, now=now)
        if not candidates:
            return None
        taken = _taken_if_free(candidates[0], user=user, now=now)
        if taken is None:  # cannot happen under the write lock; a claim never takes an item it did not free
            raise ReviewError("This item was just claimed by someone else: start reviewing again.")
        before, item = taken
        audit_record(actor=user, action="item.claim", obj=item, before=before, after=_state(item))
        return item


def _lease_renewed(held: ReviewItem, *, now: datetime) -> ReviewItem:
    """The lease `held`'s holder has on it, renewed (not audited: no state anyone decides on changes)."""
    ReviewItem.objects.filter(pk=held.pk).update(lease_expires_at=now + LEASE, updated_at=now)
    held.lease_expires_at, held.updated_at = now + LEASE, now
    return held


def _taken_if_free(item: ReviewItem, *, user, now: datetime) -> tuple[dict, ReviewItem] | None:
    """`item` claimed for `user` by a conditional UPDATE that must find it still free, with its state
    before; None when someone else has it."""
    free = Q(status__in=ACTIVE) & (Q(claimed_by__isnull=True) | Q(lease_expires_at__lt=now))
    taken = ReviewItem.objects.filter(free, pk=item.pk).update(
        claimed_by=user, lease_expires_at=now + LEASE, status=Status.IN_REVIEW, updated_at=now
    )
    if taken != 1:
        return None
    before = _state(item)
    item.claimed_by, item.lease_expires_at, item.status, item.updated_at = user, now + LEASE, Status.IN_REVIEW, now
    return before, item


def _item_from_row(values) -> ReviewItem:
    values = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(_FIELDS, values, strict=True)
    ]
    return ReviewItem.from_db(connection.alias, [f.attname for f in _FIELDS], values)


def _columns(alias: str) -> str:
    quote = connection.ops.quote_name
    return ", ".join(f"{alias}.{quote(f.column)}" for f in _FIELDS)


def _renewed(*, item_id: int, user, now: datetime) -> ReviewItem:
    """The held item's lease renewed, the item read back by the same UPDATE."""
    items = connection.ops.quote_name(ReviewItem._meta.db_table)
    sql = f"UPDATE {items} AS item SET lease_expires_at = %s, updated_at = %s WHERE item.id = %s RETURNING {_columns('item')}"  # noqa: S608
    with prepared_cursor() as cursor:
        cursor.execute(sql, [now + LEASE, now, item_id])
        item = _item_from_row(cursor.fetchone())
    item.claimed_by = user
    return item


# The lease before the claim as `model_state` writes a time: `datetime.isoformat()` of an aware UTC time
# (microseconds only when there are some).
_ISO_LEASE = (
    "to_char(picked.lease_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " || CASE WHEN date_part('microseconds', picked.lease_expires_at)::bigint %% 1000000 <> 0"
    " THEN to_char(picked.lease_expires_at AT TIME ZONE 'UTC', '.US') ELSE '' END || '+00:00'"
)
# The first of the candidates still free, locked without waiting for rows others hold: both takes
# start with it.
_PICKED = """
WITH picked AS (
    SELECT id, status, claimed_by_id, lease_expires_at FROM {items}
    WHERE id = ANY(%s) AND status IN (%s, %s) AND (claimed_by_id IS NULL OR lease_expires_at < %s)
    ORDER BY priority DESC, id LIMIT 1
    FOR UPDATE SKIP LOCKED"""
_TAKE_AUDITED = (
    _PICKED  # noqa: S608 (names from the model meta, every value a parameter)
    + """
), taken AS (
    UPDATE {items} AS item SET claimed_by_id = %s, lease_expires_at = %s, status = %s, updated_at = %s
    FROM picked WHERE item.id = picked.id
    RETURNING jsonb_build_object(
        'status', picked.status, 'claimed_by', picked.claimed_by_id, 'lease_expires_at', {iso_lease}
    ) AS before_claim, {columns}
), audited AS (
    INSERT INTO {events} (actor_id, action, object_type, object_id, before, after, created_at)
    SELECT %s, %s, %s, taken.id::text, taken.before_claim, %s::jsonb, %s FROM taken
)
SELECT before_claim, {names} FROM taken
"""
)


def _take_audited(*, ids: list[int], user, now: datetime) -> ReviewItem | None:
    """PostgreSQL: lock the first free item of `ids` (skipping rows others hold locked), claim it for
    `user` and write its audit event (`audit_record`'s row: the state before and after) in one statement."""
    quote = connection.ops.quote_name
    sql = _TAKE_AUDITED.format(
        items=quote(ReviewItem._meta.db_table),
        events=quote(AuditEvent._meta.db_table),
        iso_lease=_ISO_LEASE,
        columns=_columns("item"),
        names=", ".join(quote(f.column) for f in _FIELDS),
    )
    lease = now + LEASE
    after = {"status": Status.IN_REVIEW, "claimed_by": user.pk, "lease_expires_at": lease.isoformat()}
    params = [ids, *ACTIVE, now, user.pk, lease, Status.IN_REVIEW, now]
    params += [user.pk, "item.claim", ReviewItem._meta.label_lower, json.dumps(after), timezone.now()]
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    item = _item_from_row(row[1:])
    item.claimed_by = user
    return item


def _first_ids(candidates) -> list[int]:
    return list(candidates.values_list("pk", flat=True)[:CLAIM_CANDIDATES])


def _claim_skip_locked(*, user, now: datetime, read_ids: Callable[[], list[int]]) -> tuple[dict, ReviewItem] | None:
    """Read the first few candidates without locks (`read_ids`: bounded index walks), then lock the
    first of them still free with FOR UPDATE SKIP LOCKED and take it, in one statement (`_take`):
    locking the whole ordered set would sort it all first."""

    def step():
        ids = read_ids()
        if not ids:
            return None
        taken = _take(ids=ids, user=user, now=now)
        return _AGAIN if taken is None else taken

    return _in_rounds(step)


_AGAIN = object()


def _in_rounds(step: Callable[[], Any]) -> Any:
    """`step()` until it gives anything but `_AGAIN` (every candidate it read was locked or just taken:
    others are claiming right now), reading again after a short, growing wait; None after
    CLAIM_ROUNDS rounds."""
    for attempt in range(CLAIM_ROUNDS):
        outcome = step()
        if outcome is not _AGAIN:
            return outcome
        time.sleep(0.02 * (attempt + 1))
    return None


_FIELDS = ReviewItem._meta.concrete_fields
_TAKE = (
    _PICKED
    + """
)
UPDATE {items} AS item SET claimed_by_id = %s, lease_expires_at = %s, status = %s, updated_at = %s
FROM picked WHERE item.id = picked.id
RETURNING picked.status, picked.claimed_by_id, picked.lease_expires_at, {columns}
"""
)


def _take(*, ids: list[int], user, now: datetime) -> tuple[dict, ReviewItem] | None:
    """PostgreSQL: lock the first free item of `ids` (skipping rows others hold locked) and claim it
    for `user` in one UPDATE ... RETURNING, which also hands back its state before the claim."""
    quote = connection.ops.quote_name
    sql = _TAKE.format(
        items=quote(ReviewItem._meta.db_table), columns=", ".join(f"item.{quote(f.column)}" for f in _FIELDS)
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, [ids, *ACTIVE, now, user.pk, now + LEASE, Status.IN_REVIEW, now])
        row = cursor.fetchone()
    if row is None:
        return None
    status, claimed_by, lease, *values = row
    values = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(_FIELDS, values, strict=True)
    ]
    item = ReviewItem.from_db(connection.alias, [f.attname for f in _FIELDS], values)
    item.claimed_by = user
    before = {
        "status": status,
        "claimed_by": claimed_by,
        "lease_expires_at": lease.isoformat() if lease else None,
    }
    return before, item


def _claim_conditional(*, user, candidates, now: datetime) -> tuple[dict, ReviewItem] | None:
    """Claim the first candidate still free with a conditional UPDATE that must affect one row. The
    candidates are read whole (with judge and dataset), so the winner needs no second read."""
    for _ in range(CLAIM_ROUNDS):
        rows = list(candidates.select_related("judge", "dataset")[:CLAIM_CANDIDATES])
        if not rows:
            return None
        for item in rows:
            taken = _taken_if_free(item, user=user, now=now)
            if taken is not None:
                return taken
    return None


def lease_renew(*, item: ReviewItem, user, now: datetime | None = None) -> datetime:
    """Extend `user`'s lease on `item` (the review screen's heartbeat). Heartbeats are not audited:
    they change no state anyone decides on, and a day of them would bury the real events."""
    now = now or timezone.now()
    expires = now + LEASE
    renewed = ReviewItem.objects.filter(pk=item.pk, claimed_by=user, status__in=ACTIVE).update(
        lease_expires_at=expires, updated_at=now
    )
    if not renewed:
        raise ReviewError("You no longer hold this item: its lease ended and it went back to the queue.")
    item.lease_expires_at = expires
    return expires


def _release(*, item: ReviewItem, actor, action: str, now: datetime) -> None:
    before = _state(item)
    has_reviews = Review.objects.filter(item=item).exists()
    item.claimed_by, item.lease_expires_at, item.updated_at = None, None, now
    if item.status == Status.IN_REVIEW and not has_reviews:
        item.status = Status.OPEN
    item.save(update_fields=["claimed_by", "lease_expires_at", "status", "updated_at"])
    audit_record(actor=actor, action=action, obj=item, before=before, after=_state(item))

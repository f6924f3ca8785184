"""Which items a reviewer may claim, in claim order, read by bounded index walks at any queue size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from reviewapp.access import language_q
from reviewapp.models import Review, ReviewItem, ReviewSkip
from reviewapp.triage.selectors.queue_filters import ACTIVE, QueueFilters, item_language_q, review_languages


def claimable_q(*, user, now: datetime, languages: list[str] | None = None) -> Q:
    """Items `user` may claim now: active, not held under a live lease, in their languages, never
    reviewed or skipped by them. An item needing k reviews stays here until it has k. An item a lead
    sent back to its original reviewers is theirs alone, to revise their labels."""
    return claimable_by_q(user_id=user.pk, now=now, in_languages=item_language_q(user, languages))


def claimable_by_q(*, user_id: int, now: datetime, in_languages: Q) -> Q:
    """`claimable_q` for the user `user_id` whose languages are `in_languages` (`item_language_q`)."""
    reviewed = Review.objects.filter(item=OuterRef("pk"), reviewer=user_id, revision_requested=False)
    skipped = ReviewSkip.objects.filter(item=OuterRef("pk"), reviewer=user_id)
    revising = Review.objects.filter(item=OuterRef("pk"), revision_requested=True)
    mine_to_revise = revising.filter(reviewer=user_id)
    return (
        Q(status__in=ACTIVE)
        & (Q(claimed_by__isnull=True) | Q(lease_expires_at__lt=now))
        & in_languages
        & ~Exists(reviewed)
        & ~Exists(skipped)
        & (~Exists(revising) | Exists(mine_to_revise))
    )


def claim_candidates(
    *, user, filters: QueueFilters | None, now: datetime, languages: list[str] | None = None
) -> QuerySet[ReviewItem]:
    return candidates_of(claimable_q(user=user, now=now, languages=languages), filters)


def candidates_of(claimable: Q, filters: QueueFilters | None) -> QuerySet[ReviewItem]:
    """The items of `claimable` (`claimable_q`) that match `filters`, in claim order."""
    if filters is not None:
        claimable &= filters.q()
    return ReviewItem.objects.filter(claimable).order_by("-priority", "id")


def walked(
    queryset: QuerySet[ReviewItem],
    *,
    statuses: Sequence[str],
    languages: Sequence[str],
    limit: int,
    related: Sequence[str] = (),
    annotations: Mapping[str, Any] | None = None,
    starts: Sequence[Q] = (Q(),),
) -> QuerySet[ReviewItem]:
    """`queryset` in queue order (highest priority first), cut to its first `limit` items, read by
    walking an index in that order.

    Where the database can, the items come from a UNION ALL of one walk per language (per status and
    language when one status is asked for): each walks item_active_queue (language, -priority, id over
    the active items) or item_queue (status, language, -priority, id) in order and stops after `limit`
    rows, so the cost does not grow with the queue; the few rows found are then sorted. `ORDER BY
    priority` over `status IN (...) AND language IN (...)` would instead sort every matching row.
    SQLite cannot slice UNION parts, so there each walk is an `id IN (... LIMIT n)` of its own.
    """
    from django.db import connection

    parts = walk_parts(queryset, statuses=statuses, languages=languages, limit=limit, starts=starts)
    if not parts:
        return ReviewItem.objects.none()
    if connection.features.supports_slicing_ordering_in_compound:
        found = Q(pk__in=parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0])
    else:
        # SQLite cannot slice the parts of a UNION: each walk is an `id IN (... LIMIT n)` instead.
        found = Q()
        for part in parts:
            found |= Q(pk__in=part)
    # Annotations (per-item subqueries) go on the outer query: they run for the `limit` rows shown only.
    shown = _with_related(ReviewItem.objects.filter(found), related).annotate(**(annotations or {}))
    return shown.order_by("-priority", "id")[:limit]


def walk_parts(
    queryset: QuerySet[ReviewItem],
    *,
    statuses: Sequence[str],
    languages: Sequence[str],
    limit: int,
    starts: Sequence[Q] = (Q(),),
) -> list[QuerySet]:
    """The index walks of `walked`: the ids of `queryset`'s first `limit` items in queue order, one
    walk per language (per status and language when one status is asked for), and per range of
    `starts` (a keyset's ranges, queue_filters.keyset_ranges, so each walk starts at the keyset
    instead of reading its way there from the top)."""
    ordered = queryset.order_by("-priority", "id")
    # Both active statuses at once is the queue everyone works from: one walk per language.
    by_status = [Q(status__in=ACTIVE)] if set(statuses) == set(ACTIVE) else [Q(status=s) for s in statuses]
    return [
        ordered.filter(status_q, start, language=language).values_list("pk", flat=True)[:limit]
        for status_q in by_status
        for language in languages
        for start in starts
    ]


def _with_related(queryset: QuerySet[ReviewItem], related: Sequence[str]) -> QuerySet[ReviewItem]:
    # select_related() without names would follow every foreign key.
    return queryset.select_related(*related) if related else queryset


def _languages_for(filters: QueueFilters | None, languages: list[str]) -> list[str]:
    if filters is not None and filters.language:
        return [code for code in languages if code.lower() == filters.language.lower()]
    return languages


def _statuses_for(filters: QueueFilters | None) -> tuple[str, ...]:
    return (filters.status,) if filters is not None and filters.status else ACTIVE


def claim_candidate_ids(
    *, user, filters: QueueFilters | None, now: datetime, limit: int, languages: list[str] | None = None
) -> list[int]:
    """The first `limit` claimable items by priority, read without locks in one query (plus the
    languages' when not given), by index walks that stop after `limit` rows each."""
    languages = review_languages(user=user) if languages is None else languages
    candidates = claim_candidates(user=user, filters=filters, now=now, languages=languages)
    statuses = [status for status in _statuses_for(filters) if status in ACTIVE]
    top = walked(candidates, statuses=statuses, languages=_languages_for(filters, languages), limit=limit)
    return list(top.values_list("pk", flat=True))


def held_item(*, user, now: datetime, languages: list[str] | None = None) -> ReviewItem | None:
    """The item `user` holds under a live lease and has not reviewed yet, if any (`languages`: the
    user's `review_languages`, when already known)."""
    in_languages = language_q(user) if languages is None else item_language_q(user, languages)
    return held_by(user_id=user.pk, now=now, in_languages=in_languages).first()


def held_by(*, user_id: int, now: datetime, in_languages: Q) -> QuerySet[ReviewItem]:
    """`held_item` for the user `user_id` whose languages are `in_languages`, as a queryset in claim order."""
    reviewed = Review.objects.filter(item=OuterRef("pk"), reviewer=user_id, revision_requested=False)
    return (
        ReviewItem.objects.filter(in_languages, claimed_by=user_id, lease_expires_at__gte=now, status__in=ACTIVE)
        .exclude(Exists(reviewed))
        .order_by("-priority", "id")
    )

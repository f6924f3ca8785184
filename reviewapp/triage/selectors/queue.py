"""Reads for the review queue page at a fixed number of queries, and the names the queue's other
selectors export (claims, progress, the review screen), so `selectors.queue` stays one import.

A reviewer sees only items in their languages (access.language_q), on every read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db.models import Exists, F, Func, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from reviewapp import access
from reviewapp.access import language_allowed, sees_all_languages
from reviewapp.models import Dataset, Judge, QueueCount, Review, ReviewItem, ReviewSkip
from reviewapp.rows import cache_related
from reviewapp.triage.selectors import queue_sql
from reviewapp.triage.selectors.claims import (
    _languages_for,
    _statuses_for,
    walked,
)
from reviewapp.triage.selectors.progress import (
    Takers,
    item_takers,
)
from reviewapp.triage.selectors.queue_filters import (
    ACTIVE,
    QUEUE_PAGE_SIZE,
    STATUS_CHOICES,
    QueueFilters,
    Reason,
    keyset_ranges,
    languages_q,
)

__all__ = ["QueuePage", "queue_page", "top_items"]

# --- the queue page -----------------------------------------------------------------------------


@dataclass
class ReasonCount:
    code: str
    label: str
    count: int


@dataclass
class OwnProgress:
    reviewed: int
    reviewed_today: int
    skipped: int
    claimable: int
    held_id: int | None  # the item the reviewer holds under a live lease (`claims.held_item`)


@dataclass
class QueuePage:
    filters: QueueFilters
    items: list[ReviewItem]
    total: int
    reasons: list[ReasonCount]
    progress: OwnProgress
    languages: list[str]
    judges: list[Judge]
    datasets: list[Dataset]
    statuses: list[tuple[str, str]] = field(default_factory=lambda: STATUS_CHOICES)
    # Keyset pagination: this page starts after `after` (priority, id); `next_after` starts the next.
    after: tuple[int, int] | None = None
    next_after: str = ""
    takers: dict[int, Takers] = field(default_factory=dict)


@dataclass(frozen=True)
class CountGroup:
    """How many items share a language, judge, dataset, status and list of reasons."""

    language: str
    judge_id: int
    dataset_id: int
    status: str
    reasons: tuple[str, ...]
    n: int


def count_groups(*, user, languages: list[str], statuses: Sequence[str]) -> list[CountGroup]:
    """Every item in `user`'s languages and `statuses`, counted per group, from the kept counts
    (QueueCount): one query over a few rows at any queue size. The groups are few (languages x judges x
    datasets x statuses x the distinct reason lists), so every count on the queue page is a sum over
    them: the total for any filter, the count per reason, and what is waiting for the reviewer."""
    if not languages:
        return []
    return groups_of(count_rows(user=user, languages=languages, statuses=statuses))


def groups_of(rows) -> list[CountGroup]:
    # A list of reasons may be stored in more than one spelling (JSON text on SQLite): merged here.
    merged: dict[tuple, int] = {}
    for language, judge_id, dataset_id, status, reasons, n in rows:
        key = (language, judge_id, dataset_id, status, tuple(reasons or ()))
        merged[key] = merged.get(key, 0) + n
    return [CountGroup(*key, n) for key, n in merged.items() if n > 0]


def count_rows(*, user, languages: Sequence[str] | None, statuses: Sequence[str] | None) -> QuerySet:
    """The kept counts (QueueCount) as (language, judge_id, dataset_id, status, reasons, n) rows, in
    `languages` (every language for a user who sees them all, or when None) and `statuses` (None: all)."""
    rows = QueueCount.objects.filter(n__gt=0)
    if statuses is not None:
        rows = rows.filter(status__in=statuses)
    if languages is not None and not sees_all_languages(user):
        rows = rows.filter(language__in=languages)
    return rows.order_by().values_list("language", "judge_id", "dataset_id", "status", "reasons", "n")


def queue_languages(user, groups: Sequence[CountGroup]) -> list[str]:
    """The item languages `user` may review, sorted (`access.language_allowed`, the rule of
    `access.language_q`): read off the kept counts rather than the items."""
    codes = {group.language for group in groups}
    return sorted((c for c in codes if language_allowed(user, c)), key=lambda code: (code.lower(), code))


def _group_matches(group: CountGroup, filters: QueueFilters, judge_id: int | None) -> bool:
    """`QueueFilters.q(with_reason=False)` for a count group (`judge_id` is the filter's judge)."""
    if group.status not in ((filters.status,) if filters.status else ACTIVE):
        return False
    if filters.language and group.language.lower() != filters.language.lower():
        return False
    if filters.judge and group.judge_id != judge_id:
        return False
    return not (filters.dataset and group.dataset_id != filters.dataset)


def reason_counts(groups: Sequence[CountGroup]) -> list[ReasonCount]:
    """How many items carry each reason (an item with two reasons counts under both)."""
    counts: dict[str, int] = dict.fromkeys(Reason.values, 0)
    for group in groups:
        for code in set(group.reasons):
            if code in counts:
                counts[code] += group.n
    return [ReasonCount(code, label, counts[code]) for code, label in Reason.choices]


def _counted(queryset: QuerySet) -> Coalesce:
    """COUNT(*) of `queryset` as a scalar subquery (no GROUP BY: one row, whatever it matches)."""
    return Coalesce(Subquery(queryset.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n")), 0)


def unclaimable_count_sql(*, user_id: int, now: datetime, languages: list[str]) -> RawSQL:
    """How many active items in `languages` the user `user_id` cannot claim now, as a scalar subquery:
    held under a live lease (by anyone), already reviewed or skipped by them, or sent back to other
    reviewers. Each set is small and found through its own index (item_claims, the reviewer's reviews
    and skips), so this stays cheap however long the queue is."""
    if not languages:
        return RawSQL("0", ())
    # Each set is asked as `id IN (the small set)`, so that it is read from its own index and its items
    # looked up by id: as a join or a filter beside `status` and `language`, SQLite's planner (which
    # keeps no statistics of the reviews, nor of an empty partial index) walked a language's whole
    # active queue instead, probing each item (34 ms at a million turns).
    active = ReviewItem.objects.filter(status__in=ACTIVE, language__in=languages).order_by()
    leased = ReviewItem.objects.filter(claimed_by__isnull=False).exclude(lease_expires_at__lt=now).order_by()
    held = active.filter(pk__in=leased.values("pk"))
    mine = Review.objects.filter(reviewer_id=user_id).order_by()
    reviewed = active.filter(pk__in=mine.filter(revision_requested=False).values("item"))
    skipped = active.filter(pk__in=ReviewSkip.objects.filter(reviewer_id=user_id).order_by().values("item"))
    revising = Review.objects.filter(revision_requested=True).order_by().values("item")
    others_revising = active.filter(pk__in=revising).exclude(pk__in=mine.filter(revision_requested=True).values("item"))
    union = held.values_list("pk").union(
        reviewed.values_list("pk"), skipped.values_list("pk"), others_revising.values_list("pk")
    )
    sql, params = union.query.sql_with_params()
    # The inner SQL is the ORM's own compilation of the union; values stay parameters.
    return RawSQL(f"SELECT COUNT(*) FROM ({sql}) unclaimable", params)  # noqa: S608, S611


def progress_queryset(
    *, user_id: int, sees_all: bool, now: datetime, start_of_day: datetime, languages: list[str]
) -> QuerySet:
    """The reviewer's own numbers as a one-row values queryset: their reviews (in all, and since
    `start_of_day`), their skips, how many active items in `languages` they cannot claim
    (`unclaimable_count_sql`) and the item they hold under a live lease and have not reviewed yet.
    `sees_all` is `access.sees_all_languages` of the user."""
    reviews = Review.objects.filter(reviewer_id=user_id)
    held = (
        ReviewItem.objects.filter(
            languages_q(sees_all=sees_all, languages=languages),
            claimed_by_id=user_id,
            lease_expires_at__gte=now,
            status__in=ACTIVE,
        )
        .exclude(Exists(Review.objects.filter(item=OuterRef("pk"), reviewer_id=user_id, revision_requested=False)))
        .order_by("-priority", "id")
        .values("pk")[:1]
    )
    return (
        get_user_model()
        .objects.filter(pk=user_id)
        .values(
            reviewed=_counted(reviews),
            today=_counted(reviews.filter(created_at__gte=start_of_day)),
            skipped=_counted(ReviewSkip.objects.filter(reviewer_id=user_id)),
            unclaimable=unclaimable_count_sql(user_id=user_id, now=now, languages=languages),
            held=Subquery(held),
        )
    )


def own_progress(*, user, now: datetime, languages: list[str], active_total: int) -> OwnProgress:
    """The reviewer's own numbers, in one query compiled once (`queue_sql.progress_numbers`).
    `active_total` is how many active items are in `languages`; what waits for them is that, less the
    ones they cannot claim (`claimable_q` counted the cheap way, `unclaimable_count_sql`)."""
    start_of_day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    numbers = queue_sql.progress_numbers(user=user, now=now, start_of_day=start_of_day, languages=languages)
    return OwnProgress(
        reviewed=numbers["reviewed"],
        reviewed_today=numbers["today"],
        skipped=numbers["skipped"],
        claimable=active_total - numbers["unclaimable"],
        held_id=numbers["held"],
    )


def after_starts(after: tuple[int, int] | None) -> list[Q]:
    """Items after (priority, id) in queue order (-priority, id), a keyset and never an OFFSET, as where
    the index walks start: the rest of that priority from that id, then every lower priority
    (queue_filters.keyset_ranges; claims.walk_parts gives each range a walk of its own)."""
    if after is None:
        return [Q()]
    priority, item_id = after
    return keyset_ranges(("priority", priority, True), ("id", item_id, False))


def top_items_shown(*, filters: QueueFilters, languages: list[str], sees_all: bool) -> QuerySet[ReviewItem]:
    """The items matching `filters` in the languages of a user who sees them all (`sees_all`) or reviews
    `languages`; a page's keyset is where the walks over them start (`after_starts`)."""
    shown = ReviewItem.objects.filter(filters.q())
    if not sees_all:
        shown = shown.filter(languages_q(sees_all=False, languages=languages))
    return shown


def top_items(
    *, user, filters: QueueFilters, languages: list[str], after: tuple[int, int] | None = None, limit: int = 0
) -> QuerySet[ReviewItem]:
    """A page of items matching `filters` in `user`'s languages, highest priority first, starting
    after the (priority, id) `after` when given."""
    shown = top_items_shown(filters=filters, languages=languages, sees_all=sees_all_languages(user))
    return walked(
        shown,
        statuses=_statuses_for(filters),
        languages=_languages_for(filters, languages),
        limit=limit or QUEUE_PAGE_SIZE,
        starts=after_starts(after),
        # Judges and datasets are few and the page lists them anyway: they are attached from those lists
        # rather than joined, which keeps this query cheap to plan.
        related=("turn", "conversation", "claimed_by"),
        annotations={
            "review_count": _counted(Review.objects.filter(item=OuterRef("pk"))),
            "reviewed_by_me": Exists(Review.objects.filter(item=OuterRef("pk"), reviewer=user)),
        },
    )


def queue_page(
    *, user, filters: QueueFilters, now: datetime | None = None, after: tuple[int, int] | None = None
) -> QueuePage:
    """A page of the queue for `user`, by priority (the first, or the one after `after`), with its
    counts: four queries at any size (plus the request's session, read with its user and profile; leads
    three more for who can take the sent-back items shown): the kept counts with their datasets, the
    judges, the page of items (bounded index walks) and the reviewer's own numbers, each compiled once
    per shape of request (`queue_sql`)."""
    now = now or timezone.now()
    counted = queue_sql.every_count_row()
    every = groups_of(row for row, _ in counted)
    languages = queue_languages(user, every)
    allowed = set(languages)
    reachable = [g for g in every if g.language in allowed]
    judges = queue_sql.all_judges()
    judge_id = next((judge.pk for judge in judges if judge.slug == filters.judge), None)
    # Only datasets with items in the user's languages: a reviewer never learns other datasets' names.
    # (By name, as the counts came.)
    datasets = list({dataset.pk: dataset for row, dataset in counted if row[0] in allowed and row[5] > 0}.values())
    items = queue_sql.page_items(
        user=user, filters=filters, languages=languages, after=after, limit=QUEUE_PAGE_SIZE + 1
    )
    more, items = len(items) > QUEUE_PAGE_SIZE, items[:QUEUE_PAGE_SIZE]
    judges_by_id = {judge.pk: judge for judge in judges}
    datasets_by_id = {dataset.pk: dataset for dataset in datasets}
    for item in items:
        # (An item whose judge or dataset arrived after those lists were read loads it on its own.)
        if item.judge_id in judges_by_id:
            cache_related(item, judge=judges_by_id[item.judge_id])
        if item.dataset_id in datasets_by_id:
            cache_related(item, dataset=datasets_by_id[item.dataset_id])
        item.lease_active = bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)

    # Leads see who can take each sent-back item on the page, and when nobody can.
    takers = item_takers(items=[i for i in items if i.lead_note and i.status in ACTIVE]) if access.is_lead(user) else {}
    for item in items:
        item.takers = takers.get(item.pk)

    statuses = ACTIVE if not filters.status or filters.status in ACTIVE else (*ACTIVE, filters.status)
    groups = [g for g in reachable if g.status in statuses]
    matching = [g for g in groups if _group_matches(g, filters, judge_id)]
    return QueuePage(
        filters=filters,
        items=items,
        total=sum(g.n for g in matching if not filters.reason or filters.reason in g.reasons),
        reasons=reason_counts(matching),
        progress=own_progress(
            user=user,
            now=now,
            languages=languages,
            active_total=sum(g.n for g in groups if g.status in ACTIVE),
        ),
        languages=languages,
        judges=judges,
        datasets=datasets,
        after=after,
        next_after=f"{items[-1].priority}:{items[-1].pk}" if more else "",
        takers=takers,
    )

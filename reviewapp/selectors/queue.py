"""Reads for the review queue page at a fixed number of queries, and the names the queue's other
selectors export (claims, progress, the review screen), so `selectors.queue` stays one import.

A reviewer sees only items in their languages (access.language_q), on every read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from .. import access
from ..access import sees_all_languages
from ..models import Dataset, Judge, Review, ReviewItem, ReviewSkip
from .claims import (
    _languages_for,
    _statuses_for,
    claim_candidate_ids,
    claim_candidates,
    claimable_q,
    held_item,
    walked,
)
from .progress import LanguageProgress, ReviewerProgress, Takers, bar_width, item_takers, progress_tables
from .queue_filters import (
    ACTIVE,
    QUEUE_PAGE_SIZE,
    STATUS_CHOICES,
    QueueFilters,
    Reason,
    Status,
    item_language_q,
    reason_q,
    review_languages,
    visible_items,
)
from .review_screen import (
    CONTEXT_TURNS,
    ReviewScreen,
    check_item,
    item_for_review,
    item_reviews,
    item_verdicts,
    lease_left,
    rating_choices,
    review_screen,
    turn_comments,
)

__all__ = [
    "ACTIVE",
    "CONTEXT_TURNS",
    "QUEUE_PAGE_SIZE",
    "STATUS_CHOICES",
    "LanguageProgress",
    "QueueFilters",
    "QueuePage",
    "Reason",
    "ReviewScreen",
    "ReviewerProgress",
    "Status",
    "Takers",
    "bar_width",
    "check_item",
    "claim_candidate_ids",
    "claim_candidates",
    "claimable_q",
    "held_item",
    "item_for_review",
    "item_language_q",
    "item_reviews",
    "item_takers",
    "item_verdicts",
    "lease_left",
    "progress_tables",
    "queue_page",
    "rating_choices",
    "reason_q",
    "review_languages",
    "review_screen",
    "top_items",
    "turn_comments",
    "visible_items",
    "walked",
]

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
    held: ReviewItem | None


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
    """Every item in `user`'s languages and `statuses`, counted per group: one GROUP BY.

    For the active statuses this reads only the item_active_counts partial index (an index-only scan
    that never touches the table), and the groups are few (languages x judges x datasets x the distinct
    reason lists), so every count on the queue page is a sum over them: the total for any filter, the
    count per reason, and what is waiting for the reviewer.
    """
    if not languages:
        return []
    return [
        CountGroup(language, judge_id, dataset_id, status, tuple(reasons or ()), n)
        for language, judge_id, dataset_id, status, reasons, n in count_rows(
            user=user, languages=languages, statuses=statuses
        )
    ]


def count_rows(*, user, languages: list[str], statuses: Sequence[str]) -> QuerySet:
    """The GROUP BY of `count_groups`: (language, judge_id, dataset_id, status, reasons, n) rows.

    Other statuses than the active ones (a lead looking at closed items) are counted in a second
    branch of the same statement, so the active branch still reads only its partial index."""
    fields = ("language", "judge_id", "dataset_id", "status", "reasons")

    def grouped(in_statuses: Sequence[str]) -> QuerySet:
        rows = ReviewItem.objects.filter(status__in=in_statuses)
        if not sees_all_languages(user):
            rows = rows.filter(language__in=languages)
        return rows.order_by().values(*fields).annotate(n=Count("*")).values_list(*fields, "n")

    others = [status for status in statuses if status not in ACTIVE]
    active = [status for status in statuses if status in ACTIVE]
    if not others or not active:
        return grouped(statuses)
    return grouped(active).union(grouped(others), all=True)


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


def unclaimable_count(*, user, now: datetime, languages: list[str]) -> int:
    """Active items in `languages` that `user` cannot claim now: held under a live lease (by anyone), or
    already reviewed or skipped by them. Each set is small and found through its own index (item_claims,
    the reviewer's reviews and skips), so this stays cheap however long the queue is."""
    if not languages:
        return 0
    active = ReviewItem.objects.filter(status__in=ACTIVE, language__in=languages).order_by()
    held = active.filter(claimed_by__isnull=False).exclude(lease_expires_at__lt=now)
    reviewed = active.filter(reviews__reviewer=user, reviews__revision_requested=False)
    skipped = active.filter(skips__reviewer=user)
    mine_to_revise = Review.objects.filter(reviewer=user, revision_requested=True).values("item")
    others_revising = active.filter(reviews__revision_requested=True).exclude(pk__in=mine_to_revise)
    return (
        held.values_list("pk")
        .union(reviewed.values_list("pk"), skipped.values_list("pk"), others_revising.values_list("pk"))
        .count()
    )


def own_progress(*, user, now: datetime, languages: list[str], active_total: int) -> OwnProgress:
    """The reviewer's own numbers. `active_total` is how many active items are in `languages`; what
    waits for them is that, less the ones they cannot claim (`claimable_q` counted the cheap way)."""
    start_of_day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    reviews = Review.objects.filter(reviewer=user).aggregate(
        total=Count("pk"), today=Count("pk", filter=Q(created_at__gte=start_of_day))
    )
    return OwnProgress(
        reviewed=reviews["total"],
        reviewed_today=reviews["today"],
        skipped=ReviewSkip.objects.filter(reviewer=user).count(),
        claimable=active_total - unclaimable_count(user=user, now=now, languages=languages),
        held=held_item(user=user, now=now, languages=languages),
    )


def after_q(after: tuple[int, int] | None) -> Q:
    """Items after (priority, id) in queue order (-priority, id): a keyset, never an OFFSET."""
    if after is None:
        return Q()
    priority, item_id = after
    return Q(priority__lt=priority) | Q(priority=priority, id__gt=item_id)


def top_items(
    *, user, filters: QueueFilters, languages: list[str], after: tuple[int, int] | None = None, limit: int = 0
) -> QuerySet[ReviewItem]:
    """A page of items matching `filters` in `user`'s languages, highest priority first, starting
    after the (priority, id) `after` when given."""
    shown = ReviewItem.objects.filter(filters.q() & after_q(after))
    if not sees_all_languages(user):
        shown = shown.filter(language__in=languages)
    return walked(
        shown,
        statuses=_statuses_for(filters),
        languages=_languages_for(filters, languages),
        limit=limit or QUEUE_PAGE_SIZE,
        # Judges and datasets are few and the page lists them anyway: they are attached from those lists
        # rather than joined, which keeps this query cheap to plan.
        related=("turn", "conversation", "claimed_by"),
    )


def queue_page(
    *, user, filters: QueueFilters, now: datetime | None = None, after: tuple[int, int] | None = None
) -> QueuePage:
    """A page of the queue for `user`, by priority (the first, or the one after `after`), with its
    counts: a fixed number of queries (ten, plus the request's session, user and profile; leads three
    more for who can take the sent-back items shown) at any size, each reading only a bounded index
    range except the one GROUP BY that counts, which reads only the active items' partial index."""
    now = now or timezone.now()
    languages = review_languages(user=user)
    judges = list(Judge.objects.order_by("slug"))
    judge_id = next((judge.pk for judge in judges if judge.slug == filters.judge), None)

    # Only datasets with items in the user's languages: a reviewer never learns other datasets' names.
    in_reach = ReviewItem.objects.filter(dataset=OuterRef("pk"))
    if not sees_all_languages(user):
        in_reach = in_reach.filter(language__in=languages)
    datasets = list(Dataset.objects.filter(Exists(in_reach)).order_by("name"))
    items = list(top_items(user=user, filters=filters, languages=languages, after=after, limit=QUEUE_PAGE_SIZE + 1))
    more, items = len(items) > QUEUE_PAGE_SIZE, items[:QUEUE_PAGE_SIZE]
    judges_by_id = {judge.pk: judge for judge in judges}
    datasets_by_id = {dataset.pk: dataset for dataset in datasets}
    review_counts = {
        item_id: (n, mine)
        for item_id, n, mine in Review.objects.filter(item__in=[i.pk for i in items])
        .order_by()
        .values("item")
        .annotate(n=Count("pk"), mine=Count("pk", filter=Q(reviewer=user)))
        .values_list("item", "n", "mine")
    }
    for item in items:
        # (An item whose judge or dataset arrived after those lists were read loads it on its own.)
        if item.judge_id in judges_by_id:
            item.judge = judges_by_id[item.judge_id]
        if item.dataset_id in datasets_by_id:
            item.dataset = datasets_by_id[item.dataset_id]
        item.review_count, mine = review_counts.get(item.pk, (0, 0))
        item.reviewed_by_me = mine > 0
        item.lease_active = bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)

    # Leads see who can take each sent-back item on the page, and when nobody can.
    takers = item_takers(items=[i for i in items if i.lead_note and i.status in ACTIVE]) if access.is_lead(user) else {}
    for item in items:
        item.takers = takers.get(item.pk)

    statuses = ACTIVE if not filters.status or filters.status in ACTIVE else (*ACTIVE, filters.status)
    groups = count_groups(user=user, languages=languages, statuses=statuses)
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

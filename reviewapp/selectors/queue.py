"""Reads for the review queue, the progress tables and the turn review screen, at fixed query counts.

A reviewer sees only items in their languages (access.language_q), on every read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from .. import access
from ..access import language_allowed, language_q, sees_all_languages
from ..forms_queue import QueueFilterForm
from ..models import (
    Category,
    Comment,
    Conversation,
    Dataset,
    Judge,
    Profile,
    Review,
    ReviewItem,
    ReviewSkip,
    Role,
    Verdict,
)
from . import corpus

Status = ReviewItem.Status
Reason = ReviewItem.Reason
# Items a reviewer can still label: nobody has given it its k reviews yet.
ACTIVE = (Status.OPEN, Status.IN_REVIEW)
QUEUE_PAGE_SIZE = 50
# Turns shown around the turn under review.
CONTEXT_TURNS = 4
STATUS_CHOICES = [("", "To review"), *Status.choices]


@dataclass(frozen=True)
class QueueFilters:
    """What the queue shows; empty values mean "any". `status` empty means open or in review."""

    language: str = ""
    judge: str = ""
    reason: str = ""
    dataset: int | None = None
    status: str = ""

    @classmethod
    def from_query(cls, params) -> QueueFilters:
        """Parsed by `QueueFilterForm` (query strings and the session alike); junk is dropped."""
        return cls.from_form(QueueFilterForm.from_params(params))

    @classmethod
    def from_form(cls, form: QueueFilterForm) -> QueueFilters:
        return cls(
            language=form.value("language") or "",
            judge=form.value("judge") or "",
            reason=form.value("reason") or "",
            dataset=form.value("dataset"),
            status=form.value("status") or "",
        )

    def q(self, *, with_reason: bool = True) -> Q:
        q = Q(status=self.status) if self.status else Q(status__in=ACTIVE)
        if self.language:
            q &= Q(language__iexact=self.language)
        if self.judge:
            q &= Q(judge__slug=self.judge)
        if self.dataset:
            q &= Q(dataset_id=self.dataset)
        if self.reason and with_reason:
            q &= reason_q(self.reason)
        return q

    def as_query(self) -> dict[str, Any]:
        return {
            key: value
            for key, value in (
                ("language", self.language),
                ("judge", self.judge),
                ("reason", self.reason),
                ("dataset", self.dataset or ""),
                ("status", self.status),
            )
            if value
        }


def reason_q(reason: str) -> Q:
    # `reasons` is a JSON list of reason codes; the quoted code matches one whole element on any database.
    return Q(reasons__icontains=f'"{reason}"')


# A loose index scan: one short probe of conversation_lang_dataset per distinct language, so finding the
# few languages costs the same with a hundred conversations or a million. Plain SQL that SQLite runs too.
_LANGUAGE_WALK = """
WITH RECURSIVE walk(language) AS (
    SELECT MIN(language) FROM {table}
    UNION ALL
    SELECT (SELECT MIN(c.language) FROM {table} c WHERE c.language > walk.language)
    FROM walk WHERE walk.language IS NOT NULL
)
SELECT language FROM walk WHERE language IS NOT NULL
"""


def review_languages(*, user) -> list[str]:
    """The exact language codes `user` may review, sorted: one small query.

    An item copies its conversation's language, so these are the distinct conversation languages that
    access allows (`access.language_allowed`, the same rule as `access.language_q`). Filtering items with
    `language IN (...)` then walks the queue indexes (item_active_queue, item_queue), which lead with the
    language, instead of upper-casing every row the way a case-insensitive prefix match must.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_LANGUAGE_WALK.format(table=connection.ops.quote_name(Conversation._meta.db_table)))
        codes = [row[0] for row in cursor.fetchall()]
    return sorted((code for code in codes if language_allowed(user, code)), key=lambda code: (code.lower(), code))


def item_language_q(user, languages: list[str] | None = None) -> Q:
    """`access.language_q` for review items, in a form the queue indexes can use."""
    if sees_all_languages(user):
        return Q()
    return Q(language__in=review_languages(user=user) if languages is None else languages)


def visible_items(*, user) -> QuerySet[ReviewItem]:
    return ReviewItem.objects.filter(item_language_q(user))


def claimable_q(*, user, now: datetime, languages: list[str] | None = None) -> Q:
    """Items `user` may claim now: active, not held under a live lease, in their languages, never
    reviewed or skipped by them. An item needing k reviews stays here until it has k. An item a lead
    sent back to its original reviewers is theirs alone, to revise their labels."""
    reviewed = Review.objects.filter(item=OuterRef("pk"), reviewer=user, revision_requested=False)
    skipped = ReviewSkip.objects.filter(item=OuterRef("pk"), reviewer=user)
    revising = Review.objects.filter(item=OuterRef("pk"), revision_requested=True)
    mine_to_revise = revising.filter(reviewer=user)
    return (
        Q(status__in=ACTIVE)
        & (Q(claimed_by__isnull=True) | Q(lease_expires_at__lt=now))
        & item_language_q(user, languages)
        & ~Exists(reviewed)
        & ~Exists(skipped)
        & (~Exists(revising) | Exists(mine_to_revise))
    )


def claim_candidates(
    *, user, filters: QueueFilters | None, now: datetime, languages: list[str] | None = None
) -> QuerySet[ReviewItem]:
    q = claimable_q(user=user, now=now, languages=languages)
    if filters is not None:
        q &= filters.q()
    return ReviewItem.objects.filter(q).order_by("-priority", "id")


def walked(
    queryset: QuerySet[ReviewItem],
    *,
    statuses: Sequence[str],
    languages: Sequence[str],
    limit: int,
    related: Sequence[str] = (),
) -> QuerySet[ReviewItem]:
    """`queryset` in queue order (highest priority first), cut to its first `limit` items, read by
    walking an index in that order.

    Where the database can, the items come from a UNION ALL of one walk per language (per status and
    language when one status is asked for): each walks item_active_queue (language, -priority, id over
    the active items) or item_queue (status, language, -priority, id) in order and stops after `limit`
    rows, so the cost does not grow with the queue; the few rows found are then sorted. `ORDER BY
    priority` over `status IN (...) AND language IN (...)` would instead sort every matching row.
    Elsewhere (SQLite) it is the plain ordered query.
    """
    from django.db import connection

    ordered = queryset.order_by("-priority", "id")
    if not connection.features.supports_slicing_ordering_in_compound:
        return _with_related(ordered, related)[:limit]
    # Both active statuses at once is the queue everyone works from: one walk per language.
    by_status = [Q(status__in=ACTIVE)] if set(statuses) == set(ACTIVE) else [Q(status=s) for s in statuses]
    parts = [
        ordered.filter(status_q, language=language).values_list("pk", flat=True)[:limit]
        for status_q in by_status
        for language in languages
    ]
    if not parts:
        return ReviewItem.objects.none()
    union = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    return _with_related(ReviewItem.objects.filter(pk__in=union), related).order_by("-priority", "id")[:limit]


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
    reviewed = Review.objects.filter(item=OuterRef("pk"), reviewer=user, revision_requested=False)
    in_languages = language_q(user) if languages is None else item_language_q(user, languages)
    return (
        ReviewItem.objects.filter(in_languages, claimed_by=user, lease_expires_at__gte=now, status__in=ACTIVE)
        .exclude(Exists(reviewed))
        .order_by("-priority", "id")
        .first()
    )


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


# --- progress for leads -------------------------------------------------------------------------


def bar_width(part: int, whole: int) -> int:
    """A share as a CSS width class step (0, 5, ... 100): bars drawn with classes, no inline style (CSP)."""
    if whole <= 0 or part <= 0:
        return 0
    return max(5, min(100, 5 * round(20 * part / whole)))


@dataclass
class ReviewerProgress:
    user_id: int
    username: str
    reviewed: int = 0
    skipped: int = 0
    claimed: int = 0
    bar: int = 0  # reviews done, against the busiest reviewer's


@dataclass
class LanguageProgress:
    language: str
    by_status: dict[str, int] = field(default_factory=dict)
    claimed: int = 0

    @property
    def open(self) -> int:
        return self.by_status.get(Status.OPEN, 0) + self.by_status.get(Status.IN_REVIEW, 0)

    @property
    def done(self) -> int:
        return self.by_status.get(Status.CLOSED, 0) + self.by_status.get(Status.AWAITING_ADJUDICATION, 0)

    @property
    def total(self) -> int:
        return self.open + self.done

    @property
    def done_bar(self) -> int:
        return bar_width(self.done, self.total)

    @property
    def open_bar(self) -> int:
        return bar_width(self.open, self.total)


def progress_tables(*, user, now: datetime | None = None) -> tuple[list[ReviewerProgress], list[LanguageProgress]]:
    """Per reviewer (reviews, skips, live claims) and per language (items by status, live claims): five queries."""
    now = now or timezone.now()
    items = visible_items(user=user)
    reviewers: dict[int, ReviewerProgress] = {}

    def row(user_id: int, username: str) -> ReviewerProgress:
        return reviewers.setdefault(user_id, ReviewerProgress(user_id, username))

    reviews = Review.objects.filter(item__in=items) if not sees_all_languages(user) else Review.objects.all()
    for user_id, username, n in (
        reviews.order_by()
        .values("reviewer", "reviewer__username")
        .annotate(n=Count("pk"))
        .values_list("reviewer", "reviewer__username", "n")
    ):
        row(user_id, username).reviewed = n
    skips = ReviewSkip.objects.filter(item__in=items) if not sees_all_languages(user) else ReviewSkip.objects.all()
    for user_id, username, n in (
        skips.order_by()
        .values("reviewer", "reviewer__username")
        .annotate(n=Count("pk"))
        .values_list("reviewer", "reviewer__username", "n")
    ):
        row(user_id, username).skipped = n
    live = items.filter(claimed_by__isnull=False, lease_expires_at__gte=now, status__in=ACTIVE).order_by()
    for user_id, username, n in (
        live.values("claimed_by", "claimed_by__username")
        .annotate(n=Count("pk"))
        .values_list("claimed_by", "claimed_by__username", "n")
    ):
        row(user_id, username).claimed = n

    languages: dict[str, LanguageProgress] = {}
    for language, status, n in (
        items.order_by().values("language", "status").annotate(n=Count("pk")).values_list("language", "status", "n")
    ):
        languages.setdefault(language, LanguageProgress(language)).by_status[status] = n
    for language, n in live.values("language").annotate(n=Count("pk")).values_list("language", "n"):
        languages.setdefault(language, LanguageProgress(language)).claimed = n
    busiest = max((r.reviewed for r in reviewers.values()), default=0)
    for progress in reviewers.values():
        progress.bar = bar_width(progress.reviewed, busiest)
    return (
        sorted(reviewers.values(), key=lambda r: r.username.lower()),
        sorted(languages.values(), key=lambda lang: lang.language.lower()),
    )


# --- who can take an item back ------------------------------------------------------------------


@dataclass(frozen=True)
class Takers:
    """Who could label an item sent back: its original reviewers (to revise), or any reviewer of the
    language who has neither reviewed nor skipped it."""

    original: list[str]
    anyone: list[str]
    revising: list[str]  # reviewers asked to revise right now (empty unless sent back to them)

    @property
    def current(self) -> list[str]:
        """Who can take the item as it stands: the reviewers asked to revise, else any eligible reviewer."""
        return self.revising or self.anyone


def item_takers(*, items: Sequence[ReviewItem]) -> dict[int, Takers]:
    """`Takers` for each of `items`: three queries whatever their number (none without items)."""
    if not items:
        return {}
    profiles = list(Profile.objects.filter(user__is_active=True).select_related("user"))
    by_user = {p.user_id: p for p in profiles}
    reviewed: dict[int, dict[int, bool]] = {}
    for item_id, reviewer_id, revising in Review.objects.filter(item__in=items).values_list(
        "item", "reviewer", "revision_requested"
    ):
        reviewed.setdefault(item_id, {})[reviewer_id] = revising
    skipped: dict[int, set[int]] = {}
    for item_id, reviewer_id in ReviewSkip.objects.filter(item__in=items).values_list("item", "reviewer"):
        skipped.setdefault(item_id, set()).add(reviewer_id)
    takers = {}
    for item in items:
        mine = reviewed.get(item.pk, {})
        able = [p for uid in mine if (p := by_user.get(uid)) is not None and access.profile_covers(p, item.language)]
        fresh = [
            p
            for p in profiles
            if p.role == Role.REVIEWER
            and p.user_id not in mine
            and p.user_id not in skipped.get(item.pk, set())
            and access.profile_covers(p, item.language)
        ]
        takers[item.pk] = Takers(
            original=sorted(p.user.get_username() for p in able),
            anyone=sorted(p.user.get_username() for p in fresh),
            revising=sorted(p.user.get_username() for p in able if mine[p.user_id]),
        )
    return takers


# --- the review screen --------------------------------------------------------------------------


def item_for_review(*, item_id: int) -> ReviewItem:
    """Raises ReviewItem.DoesNotExist."""
    return ReviewItem.objects.select_related("judge", "dataset", "conversation__dataset", "turn", "claimed_by").get(
        pk=item_id
    )


# The access helper for review items lives in access.py; this name is kept for code that imports it here.
check_item = access.item_for_reviewer


def item_verdicts(*, item: ReviewItem) -> list[Verdict]:
    """Every verdict of the item's judge on its target, newest version first, runs in order."""
    verdicts = Verdict.objects.filter(judge_version__judge=item.judge_id, conversation=item.conversation_id)
    verdicts = verdicts.filter(turn=item.turn_id) if item.turn_id else verdicts.filter(turn__isnull=True)
    return list(
        verdicts.select_related("judge_version__judge", "sweep", "signature").order_by(
            "-judge_version__created_at", "sweep_id", "run_index", "pk"
        )
    )


def item_reviews(*, item: ReviewItem) -> list[Review]:
    return list(item.reviews.select_related("reviewer").prefetch_related("categories").order_by("created_at", "pk"))


def turn_comments(*, turn_id: int, user) -> list[Comment]:
    """The threads on a turn that `user` may read (`access.comments_visible_to`: in blind review only
    their own until they have labelled it): top-level comments in order, each with `thread` (its
    replies, in order)."""
    comments = Comment.objects.filter(access.comments_visible_to(user), turn_id=turn_id)
    comments = list(
        comments.select_related("author", "judge").prefetch_related("categories").order_by("created_at", "pk")
    )
    by_parent: dict[int | None, list[Comment]] = {}
    for comment in comments:
        by_parent.setdefault(comment.parent_id, []).append(comment)
    for comment in comments:
        comment.thread = by_parent.get(comment.pk, [])
    return by_parent.get(None, [])


def rating_choices(judge: Judge) -> list[int]:
    """The ratings a reviewer types with one digit, when the judge's scale is a short integer range."""
    low, high = judge.scale_min, judge.scale_max
    if judge.scale == Judge.Scale.BINARY and (low is None or high is None):
        low, high = 0, 1
    if low is None or high is None or low != int(low) or high != int(high) or not 0 <= low <= high <= 9:
        return []
    return list(range(int(low), int(high) + 1))


@dataclass
class ReviewScreen:
    item: ReviewItem
    turns: list
    verdicts: list[Verdict]
    reviews: list[Review]
    my_review: Review | None
    comments: list[Comment]
    categories: list[Category]
    ratings: list[int]
    revealed: bool
    held_by_me: bool
    lease_active: bool
    turn: Any = None
    blind: bool = False  # blind review applies to this item (access.item_is_blind)


def review_screen(*, item: ReviewItem, user, now: datetime | None = None) -> ReviewScreen:
    """Everything the turn review screen shows. In blind review (`access.can_see_judgements`) the
    judges' verdicts, other reviewers' labels and comments stay hidden until this reviewer has
    submitted. Gold labels are never shown here:
    reviewers label independently of them."""
    now = now or timezone.now()
    conversation = corpus.conversation_detail(conversation=item.conversation)
    reviews = item_reviews(item=item)
    my_review = next((r for r in reviews if r.reviewer_id == user.pk), None)
    revealed = access.can_see_judgements(user, item)
    turns = conversation.turn_list
    target_index = next((i for i, t in enumerate(turns) if t.pk == item.turn_id), None)
    if target_index is not None:
        turns = turns[max(0, target_index - CONTEXT_TURNS) : target_index + CONTEXT_TURNS + 1]
    for turn in turns:
        # The verdicts panel shows this item's judge; context turns stay plain text, and without gold
        # (nor "agrees with gold" marks) so reviewers label independently of it.
        turn.gold, turn.judged = [], []
        turn.is_target = turn.pk == item.turn_id
    target = turns[min(target_index, CONTEXT_TURNS)] if target_index is not None else None
    lease_active = bool(item.claimed_by_id and item.lease_expires_at and item.lease_expires_at >= now)
    return ReviewScreen(
        item=item,
        turns=turns,
        turn=target,
        verdicts=item_verdicts(item=item) if revealed else [],
        reviews=reviews if revealed else [r for r in reviews if r.reviewer_id == user.pk],
        my_review=my_review,
        comments=turn_comments(turn_id=item.turn_id, user=user) if item.turn_id else [],
        categories=list(Category.objects.filter(active=True).order_by("name")),
        ratings=rating_choices(item.judge),
        revealed=revealed,
        held_by_me=lease_active and item.claimed_by_id == user.pk,
        lease_active=lease_active,
        blind=access.item_is_blind(item),
    )


def lease_left(item: ReviewItem, now: datetime) -> timedelta:
    if not item.lease_expires_at:
        return timedelta(0)
    return max(timedelta(0), item.lease_expires_at - now)

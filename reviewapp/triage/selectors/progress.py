"""The leads' progress tables (per reviewer, per language) and who can take an item sent back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from reviewapp import access
from reviewapp.access import sees_all_languages
from reviewapp.models import Profile, QueueCount, Review, ReviewItem, ReviewSkip, Role
from reviewapp.triage.selectors.queue_filters import ACTIVE, Status, item_language_q

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


def _per_user(rows: QuerySet, user_field: str) -> QuerySet:
    """(user id, username, how many) for each user at `user_field` of `rows`: one grouped query."""
    names = (user_field, f"{user_field}__username")
    return rows.order_by().values(*names).annotate(n=Count("pk")).values_list(*names, "n")


def progress_tables(*, user, now: datetime | None = None) -> tuple[list[ReviewerProgress], list[LanguageProgress]]:
    """Per reviewer (reviews, skips, live claims) and per language (items by status, from the kept queue
    counts, and live claims): five queries."""
    now = now or timezone.now()
    shown = item_language_q(user)
    items = ReviewItem.objects.filter(shown)
    reviewers: dict[int, ReviewerProgress] = {}

    def row(user_id: int, username: str) -> ReviewerProgress:
        return reviewers.setdefault(user_id, ReviewerProgress(user_id, username))

    reviews = Review.objects.filter(item__in=items) if not sees_all_languages(user) else Review.objects.all()
    for user_id, username, n in _per_user(reviews, "reviewer"):
        row(user_id, username).reviewed = n
    skips = ReviewSkip.objects.filter(item__in=items) if not sees_all_languages(user) else ReviewSkip.objects.all()
    for user_id, username, n in _per_user(skips, "reviewer"):
        row(user_id, username).skipped = n
    live = items.filter(claimed_by__isnull=False, lease_expires_at__gte=now, status__in=ACTIVE).order_by()
    for user_id, username, n in _per_user(live, "claimed_by"):
        row(user_id, username).claimed = n

    languages: dict[str, LanguageProgress] = {}
    # Items by language and status: the counts the database keeps (QueueCount), not a count of the items.
    kept = QueueCount.objects.filter(shown, n__gt=0).order_by().values("language", "status")
    for language, status, n in kept.annotate(total=Sum("n")).values_list("language", "status", "total"):
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

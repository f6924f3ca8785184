"""Reads for the comments page and the taxonomy page, at fixed query counts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Count, QuerySet
from django.utils.http import urlencode

from reviewapp.access import comments_visible_to, dataset_visible_q
from reviewapp.models import Category, Comment, Dataset
from reviewapp.triage.selectors.queue_filters import ListFilters, keyset_q

# Where each filter of the comments list looks.
COMMENT_LOOKUPS = {
    "language": "turn__conversation__language__iexact",
    "category": "categories__slug",
    "judge": "judge__slug",
    "dataset": "turn__conversation__dataset_id",
    "flagged": "flagged_for_lead",
}


@dataclass(frozen=True)
class CommentFilters(ListFilters):
    category: str = ""
    flagged: bool = False

    @classmethod
    def from_query(cls, params) -> CommentFilters:
        dataset = params.get("dataset", "").strip()
        return cls(
            language=params.get("language", "").strip()[:35],
            category=params.get("category", "").strip()[:100],
            judge=params.get("judge", "").strip()[:100],
            dataset=int(dataset) if dataset.isdigit() else None,
            flagged=params.get("flagged") == "1",
        )

    def as_query_string(self) -> str:
        return urlencode(self.as_query())


def comments_visible(*, user, filters: CommentFilters) -> QuerySet[Comment]:
    """Comments on turns in `user`'s languages, newest first, with what each row shows joined in."""
    q = comments_visible_to(user) & filters.where(COMMENT_LOOKUPS)
    return (
        Comment.objects.filter(q)
        .select_related("author", "judge", "parent", "turn__conversation__dataset")
        .prefetch_related("categories")
        .order_by("-created_at", "-pk")
    )


COMMENTS_PER_PAGE = 50
# "after this comment": the last row of the previous page, as its time (microseconds since 1970):id.
CURSOR = re.compile(r"[0-9]{1,17}:[0-9]{1,10}")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


@dataclass
class CommentPage:
    comments: list[Comment]
    total: int
    # Keyset pagination: this page starts after the comment `after` (created_at, id); `next_after` starts the next.
    after: tuple[datetime, int] | None = None
    next_after: str = ""


def comment_cursor(value: str) -> tuple[datetime, int] | None:
    """The (created_at, id) of a `next_after` cursor; None for anything else."""
    if not CURSOR.fullmatch(value):
        return None
    micros, pk = value.split(":")
    return EPOCH + int(micros) * MICROSECOND, int(pk)


def comment_page(*, user, filters: CommentFilters, after: tuple[datetime, int] | None = None) -> CommentPage:
    """A page of `comments_visible`, the first or the one after the comment `after`, and how many there
    are: two queries (and one for the page's categories), never an OFFSET."""
    comments = comments_visible(user=user, filters=filters)
    shown = comments.filter(keyset_q(("created_at", after[0], True), ("pk", after[1], True))) if after else comments
    rows = list(shown[: COMMENTS_PER_PAGE + 1])
    more, rows = len(rows) > COMMENTS_PER_PAGE, rows[:COMMENTS_PER_PAGE]
    last = rows[-1] if more else None
    return CommentPage(
        comments=rows,
        total=comments.count(),
        after=after,
        next_after=f"{(last.created_at - EPOCH) // MICROSECOND}:{last.pk}" if last else "",
    )


def datasets_with_comments(*, user) -> list[Dataset]:
    visible = Comment.objects.filter(comments_visible_to(user))
    return list(
        Dataset.objects.filter(dataset_visible_q(user), pk__in=visible.values("turn__conversation__dataset")).order_by(
            "name"
        )
    )


def categories_with_use() -> list[Category]:
    """Every category with how often reviews and comments used it."""
    return list(
        Category.objects.annotate(
            review_uses=Count("reviews", distinct=True), comment_uses=Count("comments", distinct=True)
        ).order_by("-active", "name")
    )


def active_categories() -> list[Category]:
    """The categories a reviewer, lead or comment may use now, by name (retired ones are kept for history)."""
    return list(Category.objects.filter(active=True).order_by("name"))

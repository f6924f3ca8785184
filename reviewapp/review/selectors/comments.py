"""Reads for the comments page and the taxonomy page, at fixed query counts."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet
from django.utils.http import urlencode

from reviewapp.access import comments_visible_to, dataset_visible_q
from reviewapp.models import Category, Comment, Dataset
from reviewapp.triage.selectors.queue_filters import ListFilters

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

"""Reads for the comments page and the taxonomy page, at fixed query counts."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.utils.http import urlencode

from reviewapp.access import comments_visible_to, dataset_visible_q
from reviewapp.models import Category, Comment, Dataset


@dataclass(frozen=True)
class CommentFilters:
    language: str = ""
    category: str = ""
    judge: str = ""
    dataset: int | None = None
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
        pairs = {
            "language": self.language,
            "category": self.category,
            "judge": self.judge,
            "dataset": self.dataset or "",
            "flagged": "1" if self.flagged else "",
        }
        return urlencode({k: v for k, v in pairs.items() if v})


def comments_visible(*, user, filters: CommentFilters) -> QuerySet[Comment]:
    """Comments on turns in `user`'s languages, newest first, with what each row shows joined in."""
    q = comments_visible_to(user)
    if filters.language:
        q &= Q(turn__conversation__language__iexact=filters.language)
    if filters.category:
        q &= Q(categories__slug=filters.category)
    if filters.judge:
        q &= Q(judge__slug=filters.judge)
    if filters.dataset:
        q &= Q(turn__conversation__dataset_id=filters.dataset)
    if filters.flagged:
        q &= Q(flagged_for_lead=True)
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

"""What an export draws from: its filters, the gold labels within them, and reviewer pseudonyms."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from reviewapp.access import language_match_q
from reviewapp.models import GoldLabel, Judge
from reviewapp.models.review import GOLD_SOURCE_ORDER

CHUNK_SIZE = 2000
# Gold for a target comes from the best source it has: a lead's decision, then unanimous reviews,
# then the label the data came with.
SOURCE_PRIORITY = GOLD_SOURCE_ORDER
# A turn row carries the turns before it as context; the EVA shapes carry the whole conversation.
CONTEXT_TURNS = 6
# The columns of a gold label both exports read first: its target and what it says.
GOLD_COLUMNS = ("id", "conversation_id", "turn_id", "source", "rating", "label", "passed")


# --- pseudonyms ---------------------------------------------------------------------------------------


def pseudonym(user_id: int | None) -> str | None:
    """A stable, non-reversible reviewer id: an HMAC of the user id keyed by SECRET_KEY."""
    if user_id is None:
        return None
    return _pseudonym(settings.SECRET_KEY, user_id)


@lru_cache(maxsize=4096)
def _pseudonym(secret: str, user_id: int) -> str:
    digest = hmac.new(secret.encode(), f"reviewer:{user_id}".encode(), hashlib.sha256)
    return "r-" + digest.hexdigest()[:16]


# --- filters ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportFilters:
    languages: tuple[str, ...] = ()
    dataset_ids: tuple[int, ...] = ()
    gold_sources: tuple[str, ...] = ()
    date_from: date | None = None
    date_to: date | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportFilters:
        def day(value):
            return date.fromisoformat(value) if value else None

        return cls(
            languages=tuple(data.get("languages") or ()),
            dataset_ids=tuple(int(pk) for pk in data.get("datasets") or ()),
            gold_sources=tuple(data.get("gold_sources") or ()),
            date_from=day(data.get("date_from")),
            date_to=day(data.get("date_to")),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "languages": list(self.languages),
            "datasets": list(self.dataset_ids),
            "gold_sources": list(self.gold_sources or SOURCE_PRIORITY),
            "date_from": self.date_from.isoformat() if self.date_from else None,
            "date_to": self.date_to.isoformat() if self.date_to else None,
        }


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def gold_labels_for(*, judge: Judge, filters: ExportFilters) -> QuerySet[GoldLabel]:
    """The gold labels an export draws from: the judge's, not excluded, within the filters."""
    qs = GoldLabel.objects.filter(judge=judge, excluded=False)
    qs = qs.filter(source__in=list(filters.gold_sources or SOURCE_PRIORITY))
    if filters.languages:
        language_q = Q(pk__in=[])
        for language in filters.languages:
            language_q |= language_match_q(language, "conversation__language")
        qs = qs.filter(language_q)
    if filters.dataset_ids:
        qs = qs.filter(conversation__dataset_id__in=list(filters.dataset_ids))
    if filters.date_from:
        qs = qs.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to:
        qs = qs.filter(created_at__lt=_day_start(filters.date_to) + timedelta(days=1))
    return qs


def export_target_count(*, judge: Judge, filters: ExportFilters) -> int:
    """How many rows the export will have: one per labelled target (turn or conversation).

    When the labels drawn on all have one source (every label imported, say), each is its own
    target: a judge has one label per turn and source, and one per conversation and source
    (gold_unique_turn, gold_unique_conversation). Their count then comes from one scan, without the
    DISTINCT over every target (at a million labels 0.12 s instead of 0.69). Otherwise the targets
    are counted."""
    labels = gold_labels_for(judge=judge, filters=filters)
    one_source = labels.aggregate(n=Count("pk"), first=Min("source"), last=Max("source"))
    if one_source["first"] == one_source["last"]:  # one source, or none (no label: 0)
        return one_source["n"]
    return labels.values("conversation_id", "turn_id").distinct().count()

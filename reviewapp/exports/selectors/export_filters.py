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
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from reviewapp.access import language_match_q
from reviewapp.models import GoldLabel, Judge
from reviewapp.models.review import GOLD_SOURCE_ORDER

CHUNK_SIZE = 2000
# `export_target_count` looks up the labels of the less common sources while they are at most this
# share of all: one index lookup each is cheaper than a DISTINCT over every target up to about a
# tenth (measured at 300,000 labels), and twice as dear from an eighth on.
LOOKUP_SHARE = 0.05
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

    A judge has one label per turn and source, and one per conversation and source
    (gold_unique_turn, gold_unique_conversation), so a target with k labels has them from k sources.
    The labels are counted by source in one scan; with one source (every label imported, say) each
    is its own target. When the other sources than the most common hold at most LOOKUP_SHARE of the
    labels (a few reviewed beside many imported), the targets are the labels less those whose target
    has a label of a source ranked before theirs (the most common first, then by name), looked up for
    the other sources' labels alone, one index lookup each; otherwise the targets are counted
    (a DISTINCT over every one). At 300,000 labels: 55-114 ms against 135-140 for the DISTINCT with
    0.3-9% of them reviewed, 286-414 ms against 143-184 with 12-50%."""
    labels = gold_labels_for(judge=judge, filters=filters)
    by_source = dict(labels.order_by().values_list("source").annotate(n=Count("pk")))
    total = sum(by_source.values())
    if len(by_source) < 2:  # one source, or none (no label: 0)
        return total
    ranked = sorted(by_source, key=lambda source: (-by_source[source], source))
    if total - by_source[ranked[0]] > LOOKUP_SHARE * total:
        return labels.values("conversation_id", "turn_id").distinct().count()
    same_target = labels.filter(conversation_id=OuterRef("conversation_id"))
    later: dict[str, Count] = {}
    for rank, source in enumerate(ranked[1:], start=1):
        before = same_target.filter(source__in=ranked[:rank])
        later[f"turn_{rank}"] = Count(
            "pk", filter=Q(source=source, turn__isnull=False) & Exists(before.filter(turn_id=OuterRef("turn_id")))
        )
        later[f"conversation_{rank}"] = Count(
            "pk", filter=Q(source=source, turn__isnull=True) & Exists(before.filter(turn__isnull=True))
        )
    return total - sum(labels.filter(source__in=ranked[1:]).aggregate(**later).values())

"""Reads for exports: the gold-labelled targets of a judge, streamed in chunks with what people and judges said.

`export_rows` never loads the whole export: it walks the gold labels with `.iterator(chunk_size=...)`
and, once per chunk, fetches the conversations' turns, the reviews, comments and verdicts of that
chunk in a fixed number of queries. Memory follows the chunk size, not the row count.
"""

from __future__ import annotations

import hashlib
import hmac
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.utils import timezone

from ..access import is_lead, language_match_q
from ..models import (
    Comment,
    Conversation,
    ExportSnapshot,
    GoldLabel,
    Judge,
    ReviewItem,
    Turn,
    Verdict,
)
from ..models.review import GOLD_SOURCE_ORDER
from .gold import winning_label

CHUNK_SIZE = 2000
# Gold for a target comes from the best source it has: a lead's decision, then unanimous reviews,
# then the label the data came with.
SOURCE_PRIORITY = GOLD_SOURCE_ORDER
# A turn row carries the turns before it as context; the EVA shapes carry the whole conversation.
CONTEXT_TURNS = 6


# --- access -----------------------------------------------------------------------------------------


def check_snapshot(user, snapshot: ExportSnapshot | None = None) -> ExportSnapshot | None:
    """Exports are for leads and admins: they hold every language and every reviewer's (pseudonymised) labels."""
    if not is_lead(user):
        raise PermissionDenied("Exports are for leads and admins.")
    return snapshot


def snapshots_visible(*, user) -> QuerySet[ExportSnapshot]:
    check_snapshot(user)
    return ExportSnapshot.objects.select_related("judge", "created_by").order_by("-created_at", "-id")


# --- pseudonyms ---------------------------------------------------------------------------------------


def pseudonym(user_id: int | None) -> str | None:
    """A stable, non-reversible reviewer id: an HMAC of the user id keyed by SECRET_KEY."""
    if user_id is None:
        return None
    digest = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{user_id}".encode(), hashlib.sha256)
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
    """How many rows the export will have: one per labelled target (turn or conversation)."""
    return gold_labels_for(judge=judge, filters=filters).values("conversation_id", "turn_id").distinct().count()


# --- rows ---------------------------------------------------------------------------------------------


@dataclass
class ExportRow:
    """One labelled target with everything said about it; writers turn it into their format."""

    conversation: Conversation
    turn: Turn | None
    turns: list[Turn]  # every turn of the conversation, by position (shared by the rows of a chunk)
    gold: GoldLabel
    reviews: list[dict[str, Any]] = field(default_factory=list)
    adjudication: dict[str, Any] | None = None
    comments: list[dict[str, Any]] = field(default_factory=list)
    verdicts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def language(self) -> str:
        return self.conversation.language

    def context(self) -> list[dict[str, Any]]:
        """The turns before this one (or the whole conversation for a conversation-level row)."""
        if self.turn is None:
            before = self.turns
        else:
            before = [t for t in self.turns if t.position < self.turn.position][-CONTEXT_TURNS:]
        return [{"position": t.position, "role": t.role, "text": t.text} for t in before]


def _best(labels: Sequence[GoldLabel]) -> GoldLabel:
    best = winning_label(labels)
    assert best is not None  # the queryset holds included labels only
    return best


def _target_groups(qs: QuerySet[GoldLabel], chunk_size: int) -> Iterator[list[GoldLabel]]:
    """Chunks of best gold labels, one per target; a target's labels are consecutive in this order."""
    chunk: list[GoldLabel] = []
    current_key: tuple[int, int | None] | None = None
    current: list[GoldLabel] = []
    ordered = qs.select_related("conversation__dataset", "turn").order_by("conversation_id", "turn_id", "id")
    for label in ordered.iterator(chunk_size=chunk_size):
        key = (label.conversation_id, label.turn_id)
        if key != current_key:
            if current:
                chunk.append(_best(current))
                if len(chunk) >= chunk_size:
                    yield chunk
                    chunk = []
            current_key, current = key, []
        current.append(label)
    if current:
        chunk.append(_best(current))
    if chunk:
        yield chunk


def _categories(objects: Iterable) -> list[str]:
    return sorted(category.slug for category in objects)


def _verdict_dict(verdict: Verdict) -> dict[str, Any]:
    return {
        "sweep": verdict.sweep_id,
        "run": verdict.run_index,
        "tier": verdict.tier,
        "status": verdict.status,
        "rating": verdict.rating,
        "label": verdict.label,
        "passed": verdict.passed,
        "flags": verdict.flags,
        "explanation": verdict.explanation,
    }


def _attach(judge: Judge, golds: list[GoldLabel]) -> list[ExportRow]:
    """One chunk: turns, review items with reviews, comments and verdicts, in a fixed number of queries."""
    conversation_ids = {g.conversation_id for g in golds}
    turn_ids = {g.turn_id for g in golds if g.turn_id is not None}
    whole_conversations = [g.conversation_id for g in golds if g.turn_id is None]

    turns_by_conversation: dict[int, list[Turn]] = defaultdict(list)
    for turn in Turn.objects.filter(conversation_id__in=conversation_ids).order_by("conversation_id", "position"):
        turns_by_conversation[turn.conversation_id].append(turn)

    def target_q(prefix: str = "") -> Q:
        return Q(**{f"{prefix}turn_id__in": turn_ids}) | Q(
            **{f"{prefix}conversation_id__in": whole_conversations, f"{prefix}turn__isnull": True}
        )

    def key(conversation_id: int, turn_id: int | None) -> tuple[int, int | None]:
        return (conversation_id, turn_id)

    items = list(
        ReviewItem.objects.filter(target_q(), judge=judge)
        .select_related("adjudication")
        .prefetch_related("reviews__categories", "adjudication__categories")
    )
    reviews: dict[tuple, list[dict]] = {}
    adjudications: dict[tuple, dict] = {}
    for item in items:
        item_key = key(item.conversation_id, item.turn_id)
        reviews[item_key] = [
            {
                "reviewer": pseudonym(review.reviewer_id),
                "rating": review.rating,
                "label": review.label,
                "passed": review.passed,
                "categories": _categories(review.categories.all()),
                "comment": review.comment,
                "quoted_span": review.quoted_span,
                "created_at": review.created_at.isoformat(),
            }
            for review in sorted(item.reviews.all(), key=lambda r: r.pk)
        ]
        adjudication = getattr(item, "adjudication", None)
        if adjudication is not None:
            adjudications[item_key] = {
                "lead": pseudonym(adjudication.lead_id),
                "rating": adjudication.rating,
                "label": adjudication.label,
                "passed": adjudication.passed,
                "categories": _categories(adjudication.categories.all()),
                "rationale": adjudication.rationale,
            }

    comments: dict[tuple, list[dict]] = defaultdict(list)
    comment_qs = (
        Comment.objects.filter(Q(turn_id__in=turn_ids) | Q(turn__conversation_id__in=whole_conversations))
        .filter(Q(judge=judge) | Q(judge__isnull=True))
        .select_related("turn")
        .prefetch_related("categories")
        .order_by("created_at", "id")
    )
    whole = set(whole_conversations)
    for comment in comment_qs:
        entry = {
            "author": pseudonym(comment.author_id),
            "turn_position": comment.turn.position,
            "body": comment.body,
            "categories": _categories(comment.categories.all()),
            "quoted_span": comment.quoted_span,
            "reply_to": comment.parent_id,
            "id": comment.pk,
            "created_at": comment.created_at.isoformat(),
        }
        if comment.turn_id in turn_ids:
            comments[key(comment.turn.conversation_id, comment.turn_id)].append(entry)
        if comment.turn.conversation_id in whole:
            comments[key(comment.turn.conversation_id, None)].append(entry)

    verdicts: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    verdict_qs = (
        Verdict.objects.filter(target_q(), judge_version__judge=judge)
        .select_related("judge_version")
        .order_by("judge_version_id", "sweep_id", "run_index", "id")
    )
    for verdict in verdict_qs:
        verdicts[key(verdict.conversation_id, verdict.turn_id)][verdict.judge_version.version].append(
            _verdict_dict(verdict)
        )

    rows = []
    for gold in golds:
        gold_key = key(gold.conversation_id, gold.turn_id)
        rows.append(
            ExportRow(
                conversation=gold.conversation,
                turn=gold.turn,
                turns=turns_by_conversation[gold.conversation_id],
                gold=gold,
                reviews=reviews.get(gold_key, []),
                adjudication=adjudications.get(gold_key),
                comments=comments.get(gold_key, []),
                verdicts=dict(verdicts.get(gold_key, {})),
            )
        )
    return rows


def export_rows(*, judge: Judge, filters: ExportFilters, chunk_size: int = CHUNK_SIZE) -> Iterator[list[ExportRow]]:
    """The export's rows in chunks, ordered by conversation then turn (a conversation's rows are consecutive)."""
    for golds in _target_groups(gold_labels_for(judge=judge, filters=filters), chunk_size):
        yield _attach(judge, golds)

"""The slice a quality figure is about, and the gold of its targets."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from operator import itemgetter
from typing import Any, Literal

from django.db.models import Q, TextField
from django.db.models.functions import Cast

from reviewapp.access import language_match_q
from reviewapp.models import Dataset, GoldLabel, Judge, Review, ReviewItem, Sweep, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.gold import SOURCE_AT, winning_gold_values
from scoring import agreement
from scoring.errors import TribunalError

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None)
Convention = Literal["excluded", "wrong"]
CONVENTIONS: tuple[Convention, ...] = ("excluded", "wrong")
UNRESOLVED_LABEL = "unresolved"
DISPUTE_REASONS = {
    ReviewItem.Reason.UNRESOLVED,
    ReviewItem.Reason.UNCERTAIN,
    ReviewItem.Reason.RUNS_DISAGREE,
    ReviewItem.Reason.JUDGES_DISAGREE,
    ReviewItem.Reason.HIGH_VARIANCE,
    ReviewItem.Reason.VERSION_MOVED,
    ReviewItem.Reason.GOLD_DISAGREES,
}
# The statuses a judge's answer can have; a verdict of any other status says the judge did not rate the
# target at all, so it is neither scored nor counted as unresolved.
RATED = (Verdict.Status.RESOLVED, Verdict.Status.UNRESOLVED, Verdict.Status.ERROR)
TREND_BOOTSTRAP = 0
MOVED_SHOWN = 200
ESTIMATORS = {
    "accuracy": "Wilson score interval (95%)",
    "macro_f1": "conversation-level bootstrap (95%), macro average over the classes present in the slice",
    "kappa": "conversation-level bootstrap (95%)",
    "qa": "Hajek estimator (weights 1 / inclusion probability)",
    "runs": "mean and sample standard deviation over the runs of one sweep on the same targets",
}


def target_key(row: dict, prefix: str = "") -> TargetKey:
    return (row[f"{prefix}conversation_id"], row[f"{prefix}turn_id"])


def language_q(language: str, field: str) -> Q:
    return language_match_q(language, field) if language else Q()


def outcome(judge: Judge, *, rating: float | None, passed: bool | None, label: str = "") -> str | None:
    """The outcome value `judge` is scored on for one answer, or None when it has none (see selectors.outcomes)."""
    return outcomes.outcome_for(judge, rating=rating, passed=passed, label=label).value


def scale_labels(judge: Judge) -> list[str]:
    return outcomes.scale_labels(judge) or []


def slice_labels(judge: Judge, *columns: Iterable[str]) -> list[str]:
    """The judge's bounded scale, else the labels the slice's own pairs use (numbers in numeric order)."""
    fixed = outcomes.scale_labels(judge)
    if fixed is not None:
        return list(fixed)
    return agreement.label_order(*[list(c) for c in columns])


# --- the slice ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """What a figure is about besides the version: datasets, a sweep, a language, verdict dates."""

    dataset_ids: tuple[int, ...] = ()
    sweep_id: int | None = None
    language: str = ""
    date_from: date | None = None
    date_to: date | None = None
    unresolved: Convention = "excluded"
    dataset_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unresolved not in CONVENTIONS:
            raise ValueError(f"unresolved is excluded or wrong, not {self.unresolved!r}")

    def verdict_q(self, prefix: str = "") -> Q:
        q = language_q(self.language, f"{prefix}conversation__language")
        if self.dataset_ids:
            q &= Q(**{f"{prefix}conversation__dataset_id__in": list(self.dataset_ids)})
        if self.sweep_id is not None:
            q &= Q(**{f"{prefix}sweep_id": self.sweep_id})
        if self.date_from is not None:
            q &= Q(**{f"{prefix}created_at__date__gte": self.date_from})
        if self.date_to is not None:
            q &= Q(**{f"{prefix}created_at__date__lte": self.date_to})
        return q

    def target_q(self, prefix: str = "") -> Q:
        """The slice's targets, for rows that hang off a conversation (gold, items, reviews)."""
        q = language_q(self.language, f"{prefix}conversation__language")
        if self.dataset_ids:
            q &= Q(**{f"{prefix}conversation__dataset_id__in": list(self.dataset_ids)})
        return q

    def as_dict(self) -> dict[str, Any]:
        return {
            "datasets": list(self.dataset_names) or None,
            "sweep": self.sweep_id,
            "language": self.language or None,
            "date_from": self.date_from.isoformat() if self.date_from else None,
            "date_to": self.date_to.isoformat() if self.date_to else None,
            "unresolved": self.unresolved,
        }

    def describe(self) -> str:
        parts = []
        if self.dataset_names:
            parts.append("datasets " + ", ".join(self.dataset_names))
        if self.sweep_id is not None:
            parts.append(f"sweep {self.sweep_id}")
        if self.language:
            parts.append(f"language {self.language}")
        if self.date_from or self.date_to:
            parts.append(f"verdicts {self.date_from or '…'} to {self.date_to or '…'}")
        return "; ".join(parts) or "every dataset, sweep, language and date"


class SliceError(TribunalError, ValueError):
    """A slice naming a dataset or sweep that does not exist, or dates in the wrong order."""


def slice_for(
    *,
    datasets: Iterable[str] = (),
    sweep_id: int | None = None,
    language: str = "",
    date_from: date | None = None,
    date_to: date | None = None,
    unresolved: str = "excluded",
) -> Slice:
    """The slice these filters name: one query for the datasets, one for the sweep; unknown ones are errors."""
    names = list(dict.fromkeys(n for n in datasets if n))
    found = dict(Dataset.objects.filter(name__in=names).values_list("name", "pk")) if names else {}
    missing = [n for n in names if n not in found]
    if missing:
        raise SliceError(f"No dataset named {', '.join(repr(n) for n in missing)}.")
    if sweep_id is not None and not Sweep.objects.filter(pk=sweep_id).exists():
        raise SliceError(f"No sweep {sweep_id}.")
    if date_from and date_to and date_from > date_to:
        raise SliceError(f"The date range starts on {date_from}, after it ends ({date_to}).")
    if unresolved not in CONVENTIONS:
        raise SliceError(f"Unresolved answers are excluded or wrong, not {unresolved!r}.")
    return Slice(
        dataset_ids=tuple(found[n] for n in names),
        dataset_names=tuple(names),
        sweep_id=sweep_id,
        language=language.strip(),
        date_from=date_from,
        date_to=date_to,
        unresolved=unresolved,  # type: ignore[arg-type]
    )


# --- gold -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gold:
    """A target's winning gold label as the judge's outcome (value None when refused, with the reason)."""

    outcome: str | None
    source: str
    categories: tuple[str, ...] = ()
    refused: str = ""
    conversion: str = ""
    sub_scores: dict[str, Any] = field(default_factory=dict)  # a weighted judge's 0-100 sub-scores, when given


def as_gold(judge: Judge, label: GoldLabel) -> Gold:
    o = outcomes.outcome_for(judge, rating=label.rating, passed=label.passed, label=label.label, source="gold")
    given = (label.metadata or {}).get("sub_scores") if judge.scale == Judge.Scale.WEIGHTED else None
    return Gold(
        o.value,
        label.source,
        tuple(label.failure_modes or ()),
        o.refused,
        o.conversion,
        dict(given) if isinstance(given, dict) else {},
    )


def gold_fields(*, weighted: bool) -> list:
    """The columns `gold_kinds` reads, after the source: failure modes as their JSON text (a few distinct
    values, decoded once each) and, for weighted judges, the sub-scores."""
    fields: list = ["rating", "passed", "label", Cast("failure_modes", output_field=TextField())]
    if weighted:
        fields.append("metadata__sub_scores")
    return fields


@dataclass
class GoldKinds:
    """A judge's winning gold as `as_gold` reads it, target by target, each label one of a few distinct
    kinds (Gold is frozen, so targets share them; a weighted judge's are each their own, with its sub-scores)."""

    targets: list[TargetKey]
    kind: list[int]  # per target, its Gold in `kinds`
    kinds: list[Gold]

    def as_dict(self) -> dict[TargetKey, Gold]:
        return dict(zip(self.targets, map(self.kinds.__getitem__, self.kind), strict=True))


def gold_kinds(judge: Judge, rows: dict[TargetKey, tuple]) -> GoldKinds:
    """`as_gold` of the rows `winning_gold_values(fields=gold_fields(...))` gives, each distinct label once."""
    read = outcomes.Outcomes(judge, "gold")
    weighted = judge.scale == Judge.Scale.WEIGHTED
    categories: dict[str | None, tuple[str, ...]] = {}
    kinds: list[Gold] = []

    def make(row: tuple) -> int:
        source, rating, passed, label, modes = row[:5]
        said = read(rating, passed, label)
        if modes not in categories:
            categories[modes] = tuple(json.loads(modes) or ()) if modes is not None else ()
        given = row[5] if weighted else None
        kinds.append(
            Gold(
                said.value,
                source,
                categories[modes],
                said.refused,
                said.conversion,
                dict(given) if isinstance(given, dict) else {},
            )
        )
        return len(kinds) - 1

    labels = list(map(itemgetter(slice(SOURCE_AT, None if weighted else SOURCE_AT + 5)), rows.values()))
    if weighted or not outcomes.all_keyable([row[1] for row in labels]):
        # A weighted judge's sub-scores are each its own; -0.0 and 0.0 (or NaN) ratings are one dict key.
        kind = [make(row) for row in labels]
    else:
        known = {row: make(row) for row in set(labels)}
        kind = list(map(known.__getitem__, labels))
    return GoldKinds(list(rows), kind, kinds)


def judge_gold_kinds(*, judge: Judge, slice: Slice) -> GoldKinds:
    """`judge_gold` by kinds: one query."""
    rows = winning_gold_values(
        judge=judge,
        fields=gold_fields(weighted=judge.scale == Judge.Scale.WEIGHTED),
        language=slice.language,
        dataset_ids=slice.dataset_ids,
    )
    return gold_kinds(judge, rows[judge.pk])


def judge_gold(*, judge: Judge, language: str = "", slice: Slice | None = None) -> dict[TargetKey, Gold]:
    """The winning gold of every target of `judge` in the slice, as outcomes: one query."""
    return judge_gold_kinds(judge=judge, slice=slice or Slice(language=language)).as_dict()


@dataclass
class ReviewRow:
    review_id: int
    item_id: int
    reviewer_id: int
    target: TargetKey
    language: str
    outcome: str | None


def review_rows(judge: Judge, slice: Slice) -> list[ReviewRow]:
    """Every review of the judge's items in the slice's targets: one query."""
    rows = []
    said = outcomes.Outcomes(judge)
    for r in (
        Review.objects.filter(slice.target_q("item__"), item__judge=judge)
        .order_by("item_id", "created_at", "pk")
        .values(
            "id",
            "item_id",
            "reviewer_id",
            "rating",
            "passed",
            "label",
            "item__conversation_id",
            "item__turn_id",
            "item__language",
        )
    ):
        rows.append(
            ReviewRow(
                review_id=r["id"],
                item_id=r["item_id"],
                reviewer_id=r["reviewer_id"],
                target=target_key(r, "item__"),
                language=r["item__language"],
                outcome=said(r["rating"], r["passed"], r["label"]).value,
            )
        )
    return rows

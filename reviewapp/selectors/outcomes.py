"""The outcome a judge is scored on, for any verdict, review or gold label of that judge.

A judge declares one outcome: an ordinal judge its rating ("1" .. "3"), a binary, weighted or rubric
judge pass/fail, a judge with an open label set its label. `outcome_for` turns a row's rating, passed
and label into that outcome, converts a value on another field only by a stated rule (the
conversion is named), and otherwise refuses with the reason: gold `passed: true` against an ordinal
judge's rating is refused and counted, never scored.

This is the Django side of the rule: it builds the rule from a `Judge` row and hands the values to
`scoring.outcomes`, which holds the rule itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..models import Judge


@dataclass(frozen=True)
class Outcome:
    value: str | None
    conversion: str = ""
    refused: str = ""


@dataclass(frozen=True)
class OutcomeRule:
    kind: str  # ordinal | binary | weighted | label
    scale_min: float | None = None
    scale_max: float | None = None
    pass_threshold: float | None = None

    @property
    def field(self) -> str:
        return {"ordinal": "rating", "label": "label"}.get(self.kind, "passed")

    def labels(self) -> list[str] | None:
        if self.kind in ("binary", "weighted"):
            return ["pass", "fail"]
        bounded = self.scale_min is not None and self.scale_max is not None
        if self.kind == "ordinal" and bounded and self.scale_max - self.scale_min <= 100:  # type: ignore[operator]
            return [f"{float(r):g}" for r in range(int(self.scale_min), int(self.scale_max) + 1)]
        return None


def outcome_of(
    rule: OutcomeRule, *, rating: float | None, passed: bool | None, label: str = "", source: str = ""
) -> Outcome:
    if rule.kind == "ordinal":
        if rating is None:
            given = "passed" if passed is not None else "label" if label else ""
            return Outcome(None, refused=f"on `{given}`, judge scored on rating" if given else "no rating")
        if not math.isfinite(rating) or not (rule.scale_min or 0) <= rating <= (rule.scale_max or 0):
            return Outcome(None, refused=f"rating {rating:g} outside the scale")
        return Outcome(f"{rating:g}")
    if rule.kind in ("binary", "weighted"):
        if passed is not None:
            return Outcome("pass" if passed else "fail")
        if rating is not None and rule.pass_threshold is not None and math.isfinite(rating):
            conversion = f"rating >= {rule.pass_threshold:g} is pass"
            return Outcome("pass" if rating >= rule.pass_threshold else "fail", conversion=conversion)
        given = "rating" if rating is not None else "label" if label else ""
        return Outcome(None, refused=f"on `{given}`, judge scored on passed" if given else "no pass/fail")
    if label:
        return Outcome(label)
    return Outcome(None, refused="no label")


__all__ = ["Outcome", "OutcomeRule", "agrees", "outcome_for", "rule_for", "scale_labels"]

_KIND = {
    Judge.Scale.ORDINAL: "ordinal",
    Judge.Scale.BINARY: "binary",
    Judge.Scale.WEIGHTED: "weighted",
    Judge.Scale.RUBRIC: "binary",
}


def rule_for(judge: Judge) -> OutcomeRule:
    """The outcome rule `judge` declares (cached on the row: one rule per judge per request)."""
    cached = getattr(judge, "_outcome_rule", None)
    if cached is not None:
        return cached
    kind = _KIND.get(judge.scale, "label")
    if kind == "ordinal" and (judge.scale_min is None or judge.scale_max is None):
        # No declared bounds: scored on its rating all the same, as an open label set ("2", "3" ...).
        kind = "label"
        judge._outcome_open_rating = True  # type: ignore[attr-defined]
    rule = OutcomeRule(
        kind=kind,
        scale_min=judge.scale_min,
        scale_max=judge.scale_max,
        pass_threshold=judge.scale_max if kind == "binary" else None,
    )
    judge._outcome_rule = rule  # type: ignore[attr-defined]
    return rule


def scale_labels(judge: Judge) -> list[str] | None:
    """The judge's bounded label set, or None for an open set (then a slice's own pairs give the labels)."""
    return rule_for(judge).labels()


def outcome_for(
    judge: Judge, *, rating: float | None, passed: bool | None, label: str = "", source: str = ""
) -> Outcome:
    rule = rule_for(judge)
    if getattr(judge, "_outcome_open_rating", False):
        if rating is None:
            given = "passed" if passed is not None else "label" if label else ""
            reason = f"gives {given} but no rating; this judge is scored on its rating" if given else "gives no rating"
            return Outcome(None, refused=f"{source}: {reason}" if source else reason)
        return outcome_of(rule, rating=None, passed=None, label=f"{rating:g}", source=source)
    return outcome_of(rule, rating=rating, passed=passed, label=label or "", source=source)


def _values(row: Any) -> dict[str, Any]:
    if isinstance(row, dict):
        return {"rating": row.get("rating"), "passed": row.get("passed"), "label": row.get("label") or ""}
    return {"rating": row.rating, "passed": row.passed, "label": row.label or ""}


def agrees(judge: Judge, *, judged: Any, gold: Any) -> bool | None:
    """Whether a verdict (or review) gives the gold label's outcome; None when either has none."""
    a = outcome_for(judge, **_values(judged))
    b = outcome_for(judge, **_values(gold))
    if a.value is None or b.value is None:
        return None
    return a.value == b.value

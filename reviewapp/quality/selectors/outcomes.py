"""The outcome a judge is scored on, for any verdict, review or gold label of that judge.

A judge declares one outcome: an ordinal judge its rating ("1" .. "3"), a binary or rubric judge
pass/fail, a weighted judge pass/fail at its threshold, a judge with an open label set its label.
The rule itself lives in `scoring.outcomes`; this module builds it from a `Judge` row and hands it
the row's rating, passed and label. A value on another field is converted only by a stated rule
(named in the outcome), otherwise refused with the reason: gold `passed: true` against an ordinal
judge's rating is refused and counted, never scored.

An ordinal judge with no declared bounds is scored on its rating all the same, as an open label set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from reviewapp.models import Judge, JudgeVersion
from scoring.outcomes import Outcome, OutcomeRule, OutcomeRuleError, outcome_of, rule_for_scale

__all__ = [
    "Outcome",
    "OutcomeRule",
    "Outcomes",
    "agrees",
    "outcome_for",
    "pass_fail_rule",
    "rule_for",
    "scale_labels",
]


def rule_for(judge: Judge) -> OutcomeRule:
    """The outcome rule `judge` declares (cached on the row: built once per judge per request)."""
    cached = getattr(judge, "_outcome_rule", None)
    if cached is not None:
        return cached
    try:
        rule = rule_for_scale(judge.scale, scale_min=judge.scale_min, scale_max=judge.scale_max)
    except OutcomeRuleError:
        rule = OutcomeRule("label")
        judge._outcome_open_rating = judge.scale == Judge.Scale.ORDINAL  # type: ignore[attr-defined]
    judge._outcome_rule = rule  # type: ignore[attr-defined]
    return rule


def pass_fail_rule(judge: Judge, version: JudgeVersion | None = None) -> OutcomeRule | None:
    """The judge's pass/fail view (ordinal ratings through the version's declared pass threshold), or None
    when nothing says where pass starts."""
    rule = rule_for(judge)
    if rule.kind in ("binary", "weighted"):
        return rule
    threshold = (version.spec or {}).get("pass_threshold") if version is not None else None
    if rule.kind != "ordinal" or threshold is None:
        return None
    try:
        return OutcomeRule(
            "ordinal", scale_min=rule.scale_min, scale_max=rule.scale_max, pass_threshold=float(threshold)
        ).pass_fail()
    except (OutcomeRuleError, TypeError, ValueError):
        return None


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
        return outcome_of(rule, label=f"{rating:g}", source=source)
    return outcome_of(rule, rating=rating, passed=passed, label=label or "", source=source)


def keyable(rating: float | None) -> bool:
    """Whether a rating can key a remembered outcome: -0.0 is the same dict key as 0.0 but not the same
    label of an open-rating judge ("-0"), and NaN is never equal to itself."""
    return rating is None or (rating == rating and (rating != 0 or math.copysign(1.0, rating) > 0))


def all_keyable(ratings: Sequence[float | None]) -> bool:
    """`keyable` of every rating, at C speed: a column of database ratings, None for no rating."""
    from numpy import array, isnan, signbit

    values = array(ratings, dtype=float)  # None is NaN here: real NaN are those beyond the Nones
    return not (signbit(values) & (values == 0)).any() and int(isnan(values).sum()) == list(ratings).count(None)


class Outcomes:
    """`outcome_for` of one judge, each distinct (rating, passed, label) worked out once.

    A page scores every gold label and verdict of a judge, 100k rows of a handful of distinct answers:
    the rule runs once per answer, not per row. Keys are database values (a float rating, a bool passed).
    """

    def __init__(self, judge: Judge, source: str = "") -> None:
        self.judge, self.source = judge, source
        self.known: dict[tuple[float | None, bool | None, str], Outcome] = {}

    def __call__(self, rating: float | None, passed: bool | None, label: str = "") -> Outcome:
        key = (rating, passed, label)
        found = self.known.get(key)
        if found is None or (rating == 0 and not keyable(rating)):
            found = outcome_for(self.judge, rating=rating, passed=passed, label=label, source=self.source)
            if keyable(rating):
                self.known[key] = found
        return found


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

"""Aggregation of weighted sub-metrics and of rubric criteria into one judge outcome.

Weighted judges: every sub-metric is scored 0..100; the overall score is the weighted sum. A
critical sub-metric below its threshold fails the whole judge whatever the overall score (a reply
in the wrong language is useless however clear it is).

Rubric judges: binary criteria, each with a threshold and a required flag. The judge passes when
every required criterion passes. Optional criteria do not decide pass/fail; they give a 0-4
diagnostic score (the share of optional criteria met, scaled to 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scoring.specs import Criterion

DIAGNOSTIC_MAX = 4.0


@dataclass(frozen=True)
class WeightedOutcome:
    overall: float
    passed: bool | None
    failed_critical: tuple[str, ...]


def weighted_aggregate(
    sub_scores: Mapping[str, float],
    weights: Mapping[str, float],
    *,
    critical: Sequence[str] = (),
    thresholds: Mapping[str, float] | None = None,
    pass_threshold: float | None = None,
) -> WeightedOutcome:
    """Weighted sum of complete sub-scores. Raises KeyError when a weighted sub-metric is absent."""
    thresholds = thresholds or {}
    overall = round(sum(float(sub_scores[name]) * weight for name, weight in weights.items()), 4)
    failed = tuple(name for name in critical if float(sub_scores[name]) < thresholds.get(name, 0.0))
    if failed:
        passed: bool | None = False
    elif pass_threshold is None:
        passed = None
    else:
        passed = overall >= pass_threshold
    return WeightedOutcome(overall=overall, passed=passed, failed_critical=failed)


@dataclass(frozen=True)
class CriterionOutcome:
    name: str
    required: bool
    score: float
    passed: bool


@dataclass(frozen=True)
class RubricOutcome:
    passed: bool
    diagnostic: float | None
    failed_required: tuple[str, ...]
    optional_met: int
    optional_total: int
    outcomes: tuple[CriterionOutcome, ...]


def criterion_passes(criterion: Criterion, score: float) -> bool:
    return score >= criterion.threshold


def rubric_aggregate(criteria: Sequence[Criterion], scores: Mapping[str, float]) -> RubricOutcome:
    """Aggregate criterion scores. Raises KeyError when a criterion has no score."""
    outcomes = tuple(
        CriterionOutcome(
            name=c.name,
            required=c.required,
            score=float(scores[c.name]),
            passed=criterion_passes(c, float(scores[c.name])),
        )
        for c in criteria
    )
    failed_required = tuple(o.name for o in outcomes if o.required and not o.passed)
    optional = [o for o in outcomes if not o.required]
    met = sum(1 for o in optional if o.passed)
    diagnostic = round(DIAGNOSTIC_MAX * met / len(optional), 2) if optional else None
    return RubricOutcome(
        passed=not failed_required,
        diagnostic=diagnostic,
        failed_required=failed_required,
        optional_met=met,
        optional_total=len(optional),
        outcomes=outcomes,
    )

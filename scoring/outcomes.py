"""The one rule that turns a verdict, a review or a gold label into the outcome a judge is scored on.

A judge declares its kind, and with it the one field it is scored on:

* ``ordinal``  -> the rating, a whole point of the bounded scale ``scale_min..scale_max`` ("1", "2", "3");
* ``binary``   -> passed ("pass" / "fail");
* ``weighted`` -> passed at the judge's pass threshold (0-100 sub-scores are compared apart, as the mean
  absolute difference per sub-metric: `sub_score_differences`);
* ``label``    -> an open label set (the label text itself).

A value found on another field is converted only by a stated rule, and the conversion is named in
``Outcome.conversion``; anything else is refused with the reason in ``Outcome.refused`` and must be
counted, never scored. Out-of-scale, non-finite or non-whole ratings are refused too.

API::

    rule = OutcomeRule("ordinal", scale_min=1, scale_max=3, pass_threshold=3)
    rule = rule_for_scale("rubric", scale_min=None, scale_max=None, pass_threshold=None)  # Judge.scale names
    rule.labels()            # ["1", "2", "3"]; ["pass", "fail"] for binary/weighted; None for an open set
    rule.pass_fail()         # the binary view of an ordinal/weighted rule (ratings through the threshold)
    outcome_of(rule, rating=3.0, passed=None, label="", source="gold", status="resolved")
        -> Outcome(value="3", field="rating", conversion="", refused="")
    pair_outcome(rule, gold=Answer(...), judge=Answer(...))
        -> PairOutcome(gold=Outcome, judge=Outcome); .scored, .refused, .conversions
    score_pairs(rule, [(gold_answer, judge_answer), ...])
        -> ScoredPairs(gold=[...], judge=[...], index=[...], refused=Counter, conversions=Counter)
    sub_score_differences([(gold_scores, judge_scores), ...]) -> {name: SubScoreDifference(n, mae, ...)}

Conversions (the only ones):

* binary judge, rating only: ``rating >= T`` is pass, T = the pass threshold, else the scale top (1 by
  default): named ``"rating>=T -> passed"``;
* weighted judge, rating (the overall 0-100 score) only, with a pass threshold: the same rule;
* binary/weighted judge, label only, the label being exactly "pass" or "fail" (any case): ``"label -> passed"``;
* ordinal judge, label only, the label being a point of the scale ("3"): ``"label -> rating"``.

So gold ``passed: true`` against an ordinal judge is refused ("no rule turns passed into a rating");
``rule.pass_fail()`` is the explicit, named way to score an ordinal judge on pass/fail instead.
A record whose passed contradicts its own rating under the threshold is refused, not resolved.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from scoring.errors import TribunalError

Kind = Literal["ordinal", "binary", "weighted", "label"]
KINDS: tuple[Kind, ...] = ("ordinal", "binary", "weighted", "label")
PASS, FAIL = "pass", "fail"
# A bounded ordinal scale is listed point by point; beyond this many points it is not a rating scale.
MAX_ORDINAL_POINTS = 101


class OutcomeRuleError(TribunalError, ValueError):
    """A judge declaration that cannot be scored (unknown kind, unbounded ordinal scale ...)."""


def _finite_number(value: object) -> float | None:
    """The value as a float when it is a real, finite number (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _fmt(number: float) -> str:
    # + 0.0 turns -0.0 into 0.0: a rating of -0.0 is the point 0 of the scale, not a label "-0".
    return f"{number + 0.0:g}"


@dataclass(frozen=True)
class OutcomeRule:
    kind: Kind
    scale_min: float | None = None
    scale_max: float | None = None
    pass_threshold: float | None = None
    # Set on a rule made by `pass_fail()`: the kind it was derived from, for naming conversions.
    derived_from: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise OutcomeRuleError(f"unknown judge kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        for name in ("scale_min", "scale_max", "pass_threshold"):
            value = getattr(self, name)
            if value is not None and _finite_number(value) is None:
                raise OutcomeRuleError(f"{name} must be a finite number, got {value!r}")
        low, high = self.scale_min, self.scale_max
        if low is not None and high is not None and low >= high:
            raise OutcomeRuleError(f"scale_min {low:g} must be below scale_max {high:g}")
        if self.kind == "ordinal":
            if low is None or high is None:
                raise OutcomeRuleError("an ordinal judge needs a bounded scale (scale_min and scale_max)")
            if not (float(low).is_integer() and float(high).is_integer()):
                raise OutcomeRuleError(f"an ordinal scale runs between whole points, got {low:g}..{high:g}")
            if high - low + 1 > MAX_ORDINAL_POINTS:
                raise OutcomeRuleError(f"an ordinal scale of {high - low + 1:g} points is not a rating scale")

    # --- what the rule scores on ----------------------------------------------------------------

    @property
    def field(self) -> str:
        return {"ordinal": "rating", "binary": "passed", "weighted": "passed", "label": "label"}[self.kind]

    def labels(self) -> list[str] | None:
        """The bounded label set in display order, or None for an open label set."""
        if self.kind == "ordinal":
            assert self.scale_min is not None and self.scale_max is not None
            return [_fmt(float(r)) for r in range(int(self.scale_min), int(self.scale_max) + 1)]
        if self.kind in ("binary", "weighted"):
            return [PASS, FAIL]
        return None

    def threshold(self) -> float | None:
        """The rating from which an answer passes: the pass threshold, or for binary the scale top (1)."""
        if self.pass_threshold is not None:
            return float(self.pass_threshold)
        if self.kind == "binary":
            return float(self.scale_max) if self.scale_max is not None else 1.0
        return None

    def pass_fail(self) -> OutcomeRule:
        """The binary view of this rule: ratings become pass/fail through the pass threshold (named).

        Refused (OutcomeRuleError) when the judge has no pass threshold: nothing would say where pass starts.
        """
        if self.kind in ("binary", "weighted"):
            return self
        if self.kind == "label" or self.pass_threshold is None:
            raise OutcomeRuleError(f"a {self.kind} judge without a pass threshold has no pass/fail view")
        return OutcomeRule(
            "binary",
            scale_min=self.scale_min,
            scale_max=self.scale_max,
            pass_threshold=self.pass_threshold,
            derived_from=self.kind,
        )

    def in_scale(self, rating: float) -> bool:
        low, high = self.scale_min, self.scale_max
        if self.kind == "binary":
            low = 0.0 if low is None else low
            high = 1.0 if high is None else high
        if self.kind == "weighted":
            low = 0.0 if low is None else low
            high = 100.0 if high is None else high
        return (low is None or rating >= low) and (high is None or rating <= high)

    def scale_text(self) -> str:
        if self.kind == "binary":
            return f"{_fmt(self.scale_min or 0.0)}..{_fmt(self.scale_max if self.scale_max is not None else 1.0)}"
        if self.kind == "weighted":
            return f"{_fmt(self.scale_min or 0.0)}..{_fmt(self.scale_max if self.scale_max is not None else 100.0)}"
        low = "" if self.scale_min is None else _fmt(self.scale_min)
        high = "" if self.scale_max is None else _fmt(self.scale_max)
        return f"{low}..{high}"


def rule_for_scale(
    scale: str,
    *,
    scale_min: float | None = None,
    scale_max: float | None = None,
    pass_threshold: float | None = None,
) -> OutcomeRule:
    """The rule for a judge declared with Tribunal's scale names (binary, ordinal, weighted, rubric, label).

    A rubric judge is scored on passed, like a binary one.
    """
    kind = {"rubric": "binary"}.get(scale, scale)
    if kind not in KINDS:
        raise OutcomeRuleError(f"unknown judge scale {scale!r}: expected binary, ordinal, weighted, rubric or label")
    return OutcomeRule(cast(Kind, kind), scale_min=scale_min, scale_max=scale_max, pass_threshold=pass_threshold)


# --- one answer -> one outcome ----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The value an answer is scored as, or None with the reason it cannot be scored."""

    value: str | None
    field: str = ""  # the field the value was read from: rating, passed or label
    conversion: str = ""  # "" when read from the rule's own field, otherwise the stated rule applied
    refused: str = ""

    @property
    def ok(self) -> bool:
        return self.value is not None


@dataclass(frozen=True)
class Answer:
    """What a verdict, a review or a gold label says, field by field."""

    rating: float | None = None
    passed: bool | None = None
    label: str = ""
    status: str = "resolved"  # a verdict's status: unresolved and error answers are refused


def _refuse(source: str, reason: str) -> Outcome:
    return Outcome(None, refused=f"{source}: {reason}" if source else reason)


def _passed_from_rating(rule: OutcomeRule, rating: float) -> bool | None:
    threshold = rule.threshold()
    return None if threshold is None else rating >= threshold


def outcome_of(
    rule: OutcomeRule,
    *,
    rating: float | None = None,
    passed: bool | None = None,
    label: str | None = "",
    source: str = "",
    status: str = "resolved",
) -> Outcome:
    """The outcome `rule` scores this answer as; `source` ("gold", "verdict", "review") prefixes refusals.

    A verdict whose `status` is not "resolved" (unresolved, error) is refused whatever fields it
    carries: an unresolved answer is never right or wrong by accident.
    """
    if status != "resolved":
        return _refuse(source, f"the answer is {status or 'without a status'}, not resolved")
    label = (label or "").strip()
    if rating is not None and _finite_number(rating) is None:
        return _refuse(source, f"rating {rating!r} is not a finite number")
    if passed is not None and not isinstance(passed, bool):
        return _refuse(source, f"passed {passed!r} is not true or false")
    number = None if rating is None else float(rating)
    if number is not None and not rule.in_scale(number):
        return _refuse(source, f"rating {_fmt(number)} is outside the scale {rule.scale_text()}")

    if rule.kind == "ordinal":
        return _ordinal(rule, number, passed, label, source)
    if rule.kind == "label":
        if label:
            return Outcome(label, field="label")
        other = "rating" if number is not None else "passed" if passed is not None else ""
        if other:
            return _refuse(source, f"gives {other} but no label; an open-label judge is scored on its label")
        return _refuse(source, "gives no label")
    return _pass_fail(rule, number, passed, label, source)


def _ordinal(rule: OutcomeRule, rating: float | None, passed: bool | None, label: str, source: str) -> Outcome:
    labels = rule.labels() or []
    if rating is not None:
        if not rating.is_integer():
            return _refuse(source, f"rating {_fmt(rating)} is not a whole point of the scale {rule.scale_text()}")
        return Outcome(_fmt(rating), field="rating")
    if label:
        number = _label_number(label)
        if number is not None and _fmt(number) in labels:
            return Outcome(_fmt(number), field="label", conversion="label -> rating")
        return _refuse(source, f"label {label!r} is not a point of the scale {rule.scale_text()}")
    if passed is not None:
        return _refuse(
            source,
            "gives passed but no rating; no rule turns passed into a rating of an ordinal judge "
            "(score it on pass/fail with the judge's pass threshold instead)",
        )
    return _refuse(source, "gives no rating")


def _label_number(label: str) -> float | None:
    try:
        number = float(label)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _pass_fail(rule: OutcomeRule, rating: float | None, passed: bool | None, label: str, source: str) -> Outcome:
    outcome = _pass_fail_value(rule, rating, passed, label, source)
    said = label.lower()
    if outcome.value is not None and outcome.field != "label" and said in (PASS, FAIL) and said != outcome.value:
        return _refuse(source, f"label {label!r} contradicts its {outcome.field}, which gives {outcome.value}")
    return outcome


def _pass_fail_value(rule: OutcomeRule, rating: float | None, passed: bool | None, label: str, source: str) -> Outcome:
    threshold = rule.threshold()
    from_rating = None if rating is None else _passed_from_rating(rule, rating)
    if rule.kind == "binary" and rule.derived_from != "ordinal" and rating is not None and not rating.is_integer():
        return _refuse(source, f"rating {_fmt(rating)} is not a whole point of the binary scale")
    if rule.derived_from == "ordinal" and rating is not None and not rating.is_integer():
        return _refuse(source, f"rating {_fmt(rating)} is not a whole point of the scale {rule.scale_text()}")
    if passed is not None:
        # A weighted judge's passed is authoritative: a failed critical sub-metric fails a high overall score.
        if rule.kind == "binary" and from_rating is not None and from_rating != passed:
            return _refuse(
                source,
                f"passed is {str(passed).lower()} but its rating {_fmt(rating or 0.0)} "
                f"{'reaches' if from_rating else 'is below'} the pass threshold {_fmt(threshold or 0.0)}",
            )
        return Outcome(PASS if passed else FAIL, field="passed")
    if rating is not None:
        if from_rating is None:
            return _refuse(source, f"gives a rating ({_fmt(rating)}) but the judge has no pass threshold")
        return Outcome(
            PASS if from_rating else FAIL, field="rating", conversion=f"rating>={_fmt(threshold or 0.0)} -> passed"
        )
    if label:
        lowered = label.lower()
        if lowered in (PASS, FAIL):
            return Outcome(lowered, field="label", conversion="label -> passed")
        return _refuse(source, f"label {label!r} is neither pass nor fail")
    return _refuse(source, "gives neither passed nor a rating")


# --- pairs --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairOutcome:
    gold: Outcome
    judge: Outcome

    @property
    def scored(self) -> bool:
        return self.gold.ok and self.judge.ok

    @property
    def refused(self) -> str:
        """Why the pair is not scored ("" when it is): the gold's reason first."""
        return self.gold.refused or self.judge.refused

    @property
    def conversions(self) -> tuple[str, ...]:
        return tuple(f"{who} {o.conversion}" for who, o in (("gold", self.gold), ("judge", self.judge)) if o.conversion)


def pair_outcome(rule: OutcomeRule, *, gold: Answer, judge: Answer) -> PairOutcome:
    return PairOutcome(
        gold=outcome_of(
            rule, rating=gold.rating, passed=gold.passed, label=gold.label, source="gold", status=gold.status
        ),
        judge=outcome_of(
            rule, rating=judge.rating, passed=judge.passed, label=judge.label, source="judge", status=judge.status
        ),
    )


@dataclass
class ScoredPairs:
    """The pairs a rule can score, in input order, and a count of every refusal and conversion by reason."""

    gold: list[str] = field(default_factory=list)
    judge: list[str] = field(default_factory=list)
    index: list[int] = field(default_factory=list)  # position of each scored pair in the input
    refused: Counter[str] = field(default_factory=Counter)
    conversions: Counter[str] = field(default_factory=Counter)

    @property
    def n(self) -> int:
        return len(self.gold)

    @property
    def n_refused(self) -> int:
        return sum(self.refused.values())


def score_pairs(rule: OutcomeRule, pairs: Iterable[tuple[Answer, Answer]]) -> ScoredPairs:
    """Every (gold, judge) pair through `rule`: scored pairs kept, refused ones counted by reason."""
    out = ScoredPairs()
    for position, (gold, judge) in enumerate(pairs):
        result = pair_outcome(rule, gold=gold, judge=judge)
        if not result.scored:
            out.refused[result.refused] += 1
            continue
        assert result.gold.value is not None and result.judge.value is not None
        out.gold.append(result.gold.value)
        out.judge.append(result.judge.value)
        out.index.append(position)
        for conversion in result.conversions:
            out.conversions[conversion] += 1
    return out


# --- sub-scores of weighted judges -------------------------------------------------------------------


@dataclass(frozen=True)
class SubScoreDifference:
    """Mean absolute difference between gold and judge on one sub-metric, with a 95% t interval."""

    name: str
    n: int
    mae: float | None
    low: float | None = None
    high: float | None = None
    refused: int = 0  # pairs where one side has no finite 0-100 score for this sub-metric

    def as_dict(self) -> dict[str, float | int | str | None]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {
            "name": self.name,
            "n": self.n,
            "mae": r(self.mae),
            "low": r(self.low),
            "high": r(self.high),
            "refused": self.refused,
        }


def sub_score_differences(
    pairs: Iterable[tuple[Mapping[str, object], Mapping[str, object]]],
    *,
    names: Sequence[str] | None = None,
    low: float = 0.0,
    high: float = 100.0,
    confidence: float = 0.95,
) -> dict[str, SubScoreDifference]:
    """Per sub-metric: over pairs where both gold and judge give a finite score in low..high, the mean
    absolute difference, its n and a t interval (none below two pairs or when every difference is equal).

    `names` fixes the sub-metrics (the judge's declared ones); without it, every name either side uses.
    """
    rows = list(pairs)
    if names is None:
        seen: dict[str, None] = {}
        for gold, judge in rows:
            for name in (*gold, *judge):
                seen.setdefault(str(name), None)
        names = list(seen)
    out: dict[str, SubScoreDifference] = {}
    for name in names:
        diffs: list[float] = []
        refused = 0
        for gold, judge in rows:
            g, j = _finite_number(gold.get(name)), _finite_number(judge.get(name))
            if g is None or j is None or not (low <= g <= high and low <= j <= high):
                refused += 1
                continue
            diffs.append(abs(g - j))
        n = len(diffs)
        if n == 0:
            out[name] = SubScoreDifference(name, 0, None, refused=refused)
            continue
        mae = math.fsum(diffs) / n
        lo = hi = None
        if n > 1:
            sd = math.sqrt(math.fsum((d - mae) ** 2 for d in diffs) / (n - 1))
            if sd > 0:
                from scipy import stats

                half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
                lo, hi = max(0.0, mae - half), mae + half
        out[name] = SubScoreDifference(name, n, mae, lo, hi, refused)
    return out

"""Agreement statistics on plain lists: how often a judge matches gold, and whether a new version moved.

Point estimates are scikit-learn's (accuracy, macro-F1, per-class F1, Cohen's kappa unweighted and
quadratic-weighted, the confusion matrix), read off the confusion matrix in one vectorised pass
(`metrics_from_confusion`, held equal to scikit-learn by the tests) because a page computes many slices
and the bootstrap a thousand resamples of each; Krippendorff's alpha comes from `krippendorff`, tests
from `scipy.stats.binomtest`, proportion intervals from statsmodels.

Every interval is a 95% interval that means it:

* accuracy and every other proportion: Wilson (`proportion_interval`, Clopper-Pearson by name). When
  pairs are weighted or clustered (turns of one conversation), Wilson is taken at the effective sample
  size n_eff = p(1-p) / v, v the cluster-robust linearised variance of the (weighted) proportion, never
  above n; when v is 0 (all right or all wrong) n_eff is the Kish size of the cluster totals, which is
  the number of conversations for unweighted turns. An all-correct slice of 12 is [0.76, 1], not [1, 1].
* macro-F1, kappa, quadratic kappa: a bootstrap that resamples clusters (conversations), not pairs;
  without clusters each pair is its own cluster. The interval is Wilson at the effective size the
  bootstrap variance gives (n_eff = p(1-p) / var, kappa on the (k + 1) / 2 scale), which holds its
  coverage near 1 better than the replicates' percentiles (`bootstrap_interval="percentile"` gives
  those). When every replicate gives the same value (a degenerate distribution) or more than 5% of
  replicates leave the figure undefined, no interval is reported (low and high None), never [1, 1].

Macro-F1 is over the classes present in the slice's gold and predictions (scikit-learn's default and
EVA's); per-class F1 is still listed for every label passed in `labels` (the judge's full scale).

A slice too small for a claim is "insufficient evidence" (`evidence`): fewer than MIN_EVIDENCE_N = 30
pairs, or a Wilson half-width above MAX_HALF_WIDTH = 0.10; `labels_needed` says how many labels bring
the Wilson interval to +-5 (or +-3) points at the observed rate, and `evidence` scales that by the
design effect n / effective n when pairs are clustered or weighted.

Runs: `run_accuracy` / `runs_accuracy` under two conventions, "excluded" (unresolved and failed answers
left out of the denominator) and "wrong" (EVA's: a fixed denominator of every gold target of the run,
unresolved and failed counted wrong); `mean_std` is mean and sample std (ddof=1) over runs.

API used by the app (this module, `scoring.classification` for the report and `scoring.before_after` for
movement): classification_report(gold, judge, labels=, weights=, clusters=, n_boot=, seed=,
bootstrap_interval=) -> ClassificationReport (accuracy/macro_f1/kappa/kappa_quadratic as Estimate
{value, low, high}, evidence, per_class_f1, support, confusion, macro_f1_labels, clusters,
effective_n); proportion_interval(k, n, method=); evidence(n, k, effective_n=); effective_size;
labels_needed(p_hat, half_width); weighted_accuracy; mean_std; RunCounts, run_accuracy, runs_accuracy;
krippendorff_alpha(units, level=); pairwise_agreement; movement_matrix; movement_vs_noise; mcnemar_exact.

Labels are strings ("pass", "fail", "3"); gold comes first, the judge second, everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from scoring.lazy import lazy_import

# numpy is loaded by the first statistic computed, not by every page or command that imports this.
if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

Level = Literal["nominal", "ordinal", "interval", "ratio"]
IntervalMethod = Literal["wilson", "clopper-pearson"]
BootstrapInterval = Literal["wilson", "percentile"]
UnresolvedConvention = Literal["excluded", "wrong"]
DEFAULT_BOOTSTRAP = 1000
CONFIDENCE = 0.95
MIN_EVIDENCE_N = 30
MAX_HALF_WIDTH = 0.10
# More undefined replicates than this share (e.g. kappa on a one-label resample) and no interval is given.
MAX_UNDEFINED_SHARE = 0.05


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval (None when there is none to give)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": rounded(self.value), "low": rounded(self.low), "high": rounded(self.high)}

    @property
    def half_width(self) -> float | None:
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2


# --- proportions and evidence -----------------------------------------------------------------------


def proportion_interval(
    k: float, n: float, *, method: IntervalMethod = "wilson", confidence: float = CONFIDENCE
) -> Estimate:
    """k successes out of n: the proportion with its Wilson (default) or Clopper-Pearson interval.

    `k` and `n` may be fractional (an effective sample size); Clopper-Pearson then uses the beta
    quantiles at those values. n = 0 gives Estimate(None).
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"{k} successes out of {n} is not a proportion")
    if n == 0:
        return Estimate(None)
    name = {"wilson": "wilson", "clopper-pearson": "beta"}.get(method)
    if name is None:
        raise ValueError(f"unknown interval method {method!r}: expected wilson or clopper-pearson")
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=1 - confidence, method=name)
    p = k / n
    # Rounding leaves Wilson's bound at 0.9999999999999999 for an all-correct slice: hold p inside.
    return Estimate(p, min(p, max(0.0, float(low))), max(p, min(1.0, float(high))))


def effective_size(p: float, variance: float, fallback: float) -> float:
    """The sample size at which a proportion p would have this variance: p(1-p) / variance.

    With no variance, `fallback` (e.g. the labelled count). At p = 0 or 1 with some variance (a
    weighted estimate can sit on the edge and still be uncertain), p(1-p) is 0 and says nothing:
    the size a p = 1/2 proportion would have, 1/4 / variance, capped at `fallback`. Never below 1.
    """
    if not variance > 1e-15:
        return max(1.0, float(fallback))
    spread = p * (1 - p)
    if spread <= 0:
        return max(1.0, min(float(fallback), 0.25 / variance))
    return max(1.0, spread / variance)


def _wilson_half_width(p: float, n: float, z: float) -> float:
    return z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))


def labels_needed(p_hat: float, half_width: float = 0.05, *, confidence: float = CONFIDENCE) -> int:
    """The smallest n whose Wilson interval at the rate `p_hat` is at most +-`half_width` wide.

    It assumes the observed rate holds as labels are added (an all-correct slice plans for p = 1, the
    narrowest case; plan for p = 0.5 to be safe whatever the rate).
    """
    if not 0 <= p_hat <= 1 or math.isnan(p_hat):
        raise ValueError(f"rate {p_hat!r} is not a proportion")
    if not 0 < half_width < 0.5:
        raise ValueError(f"half-width {half_width!r} must be between 0 and 0.5")
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + confidence / 2))
    # The Wilson half-width falls as n grows whatever p is: search for the first n under the target.
    low, high = 1, 2
    while _wilson_half_width(p_hat, high, z) > half_width:
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        if _wilson_half_width(p_hat, middle, z) > half_width:
            low = middle + 1
        else:
            high = middle
    return low


@dataclass(frozen=True)
class Evidence:
    """Whether a proportion from n pairs supports a claim, and how many labels would make it."""

    n: float
    k: float
    estimate: Estimate
    sufficient: bool
    reason: str
    needed_5: int | None  # labels in all for a Wilson interval of +-5 points at this rate (and design effect)
    needed_3: int | None  # ... and of +-3 points
    more_for_5: int | None  # labels still to add for +-5 points
    more_for_3: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": rounded(self.n),
            "sufficient": self.sufficient,
            "reason": self.reason,
            "half_width": rounded(self.estimate.half_width),
            "labels_needed_5": self.needed_5,
            "labels_needed_3": self.needed_3,
            "more_for_5": self.more_for_5,
            "more_for_3": self.more_for_3,
        }


def evidence(
    n: float,
    k: float,
    *,
    effective_n: float | None = None,
    min_n: int = MIN_EVIDENCE_N,
    max_half_width: float = MAX_HALF_WIDTH,
    confidence: float = CONFIDENCE,
) -> Evidence:
    """k right out of n pairs: insufficient below `min_n` pairs or when the Wilson half-width exceeds
    `max_half_width`; with the labels needed, in all and still to add, for +-5 and +-3 points.

    With `effective_n` (clustered or weighted pairs) the interval is Wilson at that size, and the labels
    needed are scaled by the design effect n / effective_n: labels are added as the slice's pairs come,
    a conversation's turns together.
    """
    if n <= 0:
        return Evidence(n, k, Estimate(None), False, "no pairs", None, None, None, None)
    n_eff = float(n) if effective_n is None or not effective_n > 0 else float(effective_n)
    p = k / n
    estimate = proportion_interval(p * n_eff, n_eff, confidence=confidence)
    design_effect = n / n_eff
    needed_5 = math.ceil(labels_needed(p, 0.05, confidence=confidence) * design_effect - 1e-9)
    needed_3 = math.ceil(labels_needed(p, 0.03, confidence=confidence) * design_effect - 1e-9)
    half = estimate.half_width or 0.0
    reasons = []
    if n < min_n:
        reasons.append(f"n = {n:g} is below {min_n}")
    if half > max_half_width:
        reasons.append(f"the 95% interval is +-{half * 100:.1f} points (more than +-{max_half_width * 100:g})")
    return Evidence(
        n=n,
        k=k,
        estimate=estimate,
        sufficient=not reasons,
        reason="; ".join(reasons),
        needed_5=needed_5,
        needed_3=needed_3,
        more_for_5=max(0, math.ceil(needed_5 - n)),
        more_for_3=max(0, math.ceil(needed_3 - n)),
    )


def rounded(value: float | None, digits: int = 4) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), digits)


def none_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def label_order(*columns: Sequence[str]) -> list[str]:
    """Every label seen, numbers in numeric order, then "pass" before "fail", then the rest."""
    seen = {label for column in columns for label in column}

    def key(label: str) -> tuple[int, float, str]:
        try:
            return (0, float(label), label)
        except ValueError:
            return (1, {"pass": 0.0, "fail": 1.0}.get(label, 2.0), label)

    return sorted(seen, key=key)


def numeric_labels(labels: Sequence[str]) -> bool:
    return len(labels) > 0 and all(_is_number(label) for label in labels)


# --- repeated runs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    runs: int
    mean: float | None
    std: float | None  # sample standard deviation (ddof=1); None with fewer than two runs

    def as_dict(self) -> dict[str, float | int | None]:
        return {"runs": self.runs, "mean": rounded(self.mean), "std": rounded(self.std)}


def mean_std(values: Sequence[float | None]) -> Spread:
    """Mean +- sample standard deviation (ddof=1) of one metric over repeated runs (EVA's way)."""
    finite = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if finite.size == 0:
        return Spread(0, None, None)
    std = float(np.std(finite, ddof=1)) if finite.size > 1 else None
    return Spread(int(finite.size), float(finite.mean()), std)


@dataclass(frozen=True)
class RunCounts:
    """One run of a judge over its gold targets."""

    targets: int  # gold targets the run was asked about (EVA's fixed denominator)
    correct: int  # resolved answers equal to gold
    unresolved: int = 0  # answers that could not be parsed, were out of range or hedged
    failed: int = 0  # calls that errored: no answer at all

    def __post_init__(self) -> None:
        if min(self.targets, self.correct, self.unresolved, self.failed) < 0:
            raise ValueError(f"negative count in {self}")
        if self.correct + self.unresolved + self.failed > self.targets:
            raise ValueError(
                f"{self.correct} correct + {self.unresolved} unresolved + {self.failed} failed "
                f"exceeds the run's {self.targets} targets"
            )

    @property
    def resolved(self) -> int:
        return self.targets - self.unresolved - self.failed


def run_accuracy(run: RunCounts, *, unresolved: UnresolvedConvention = "excluded") -> float | None:
    """A run's accuracy: over resolved answers ("excluded"), or over every target with unresolved and
    failed answers counted wrong ("wrong", EVA's convention). None when the denominator is 0."""
    if unresolved == "excluded":
        denominator = run.resolved
    elif unresolved == "wrong":
        denominator = run.targets
    else:
        raise ValueError(f"unknown convention {unresolved!r}: expected excluded or wrong")
    return run.correct / denominator if denominator else None


def runs_accuracy(runs: Sequence[RunCounts], *, unresolved: UnresolvedConvention = "excluded") -> Spread:
    """Mean +- sample std of per-run accuracy under one convention (EVA: 94, 94, 97 of 137 -> 69.34% +- 1.26%)."""
    return mean_std([run_accuracy(run, unresolved=unresolved) for run in runs])


# --- agreement between people ---------------------------------------------------------------------


def krippendorff_alpha(units: Sequence[Sequence[str | float]], *, level: Level = "nominal") -> float | None:
    """Krippendorff's alpha over units (items), each the labels its raters gave (any number per unit).

    Labels may be strings ("3", "pass") or numbers (73.5). Use level="ordinal" for an ordinal scale and
    level="interval" for weighted 0-100 scores, where 73.5 against 74 is nearly agreement, not a miss.
    Units with fewer than two labels carry no agreement information and are left out. None when
    no pairable unit remains or only one label value was ever used (alpha is undefined).
    """
    pairable = [[_label_text(v) for v in unit] for unit in units if len(unit) >= 2]
    values = label_order(*pairable)
    if len(pairable) < 1 or len(values) < 2:
        return None
    if level in ("interval", "ratio") and not all(_is_number(v) for v in values):
        raise ValueError(f"{level} alpha needs numeric labels, got {values}")
    numeric = level in ("interval", "ratio")
    code = {value: float(value) if numeric else float(i) for i, value in enumerate(values)}
    width = max(len(unit) for unit in pairable)
    # krippendorff wants raters x units; a row is a rating slot, not a person: alpha only counts pairs
    # within a unit, so which rater gave which label does not change it. Nominal and ordinal codes
    # follow label_order (numbers in numeric order: ordinal alpha depends on ranks only); interval and
    # ratio alpha get the numbers themselves.
    data = np.full((width, len(pairable)), np.nan)
    for column, unit in enumerate(pairable):
        for row, value in enumerate(unit):
            data[row, column] = code[value]
    import krippendorff

    alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return None if math.isnan(alpha) else alpha


def _label_text(value: str | float) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not math.isfinite(float(value)):
        raise ValueError(f"label {value!r} is not a finite number or a string")
    return repr(float(value))


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def pairwise_agreement(units: Sequence[Sequence[str]]) -> tuple[int, int]:
    """(agreeing pairs, pairs) over every pair of labels given to the same unit."""
    agree = pairs = 0
    for unit in units:
        for i in range(len(unit)):
            for j in range(i + 1, len(unit)):
                pairs += 1
                agree += unit[i] == unit[j]
    return agree, pairs

"""Honest estimates from a random QA sample: what share of all targets a judge gets right (or passes).

A QA sample is a sample only if it is drawn at random, independently of any agreement, with known
inclusion probabilities. `qa_sample` draws one: stratified by a key such as the language, a simple
random sample without replacement of n_h = ceil(rate_h * N_h) targets in each stratum (so each
non-empty stratum gets at least one when its rate is above 0), chosen as the n_h smallest
sha256(seed, stratum, key) values. The draw is deterministic for a seed, needs no state, and is nested:
as a stratum grows, the targets already drawn stay drawn while n_h allows. Every drawn target's
inclusion probability is n_h / N_h, returned with it.

`proportion_estimate` turns the labelled part of such a sample into an estimate of a population
proportion, by name:

* ``hajek`` (default): sum(w y) / sum(w), w = 1 / probability;
* ``horvitz-thompson``: sum(w y) / N, N the population size (given, or the design's sum of weights).

Sampled targets still without gold are counted as ``missing``; within a stratum the labelled ones
stand for the missing ones (the weights are divided by the stratum's labelled share: missing at
random within a stratum, an assumption the shown missing share lets a reader judge). The variance is
the stratified linearisation (Taylor) variance with the finite population correction (or, for a
Poisson sample drawn target by target, the Poisson variance sum (1 - pi) u^2; a stratum with a
single labelled item adds the largest variance a proportion can have, 1/4, not none); the interval
is Wilson at the effective sample size n_eff = p(1-p) / variance (n_eff = the labelled count when the
variance is 0, e.g. all right), so it stays inside [0, 1] and does not collapse on a perfect sample.

`prediction_powered_rate` corrects a judge's own pass rate with the human-labelled random sample by
prediction-powered inference (PPI++ with power tuning, `ppi_py.ppi_mean_ci` and
`ppi_mean_pointestimate`), and sets beside it the judge's raw rate on all targets and the human-only
estimate (Wilson on the labelled sample), with the ratio of interval widths: below 1 the judge's
labels narrow the interval. The PPI interval is Wilson at the effective size p(1-p) / the PPI
variance (ppi_py's own normal interval, kept as ``ppi_clt``, under-covers near 0 or 1 on small
labelled samples: 0.79-0.83 at n = 60 and a pass rate of 0.95, where this one covers 0.93-0.95).

API::

    qa_sample(keys, strata, rate, seed, min_per_stratum=0) -> [(key, probability), ...]
    proportion_estimate([SampleItem(stratum, probability, value | None), ...], estimator="hajek",
                        design="stratified" | "poisson")
        -> WeightedProportion(estimator, value, low, high, se, n_sampled, n_labelled, missing, ...,
           .evidence: insufficient evidence and labels needed at the effective size)
    prediction_powered_rate(human, judge_labelled, judge_unlabelled)
        -> PredictionPowered(ppi, human, judge_raw, n_labelled, n_unlabelled, width_ratio, method,
           ppi_clt, effective_n)
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, Literal

from scoring.agreement import CONFIDENCE, Estimate, Evidence, effective_size, proportion_interval
from scoring.agreement import evidence as agreement_evidence
from scoring.lazy import lazy_import

# numpy is loaded by the first statistic computed, not by every page or command that imports this.
if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

Estimator = Literal["hajek", "horvitz-thompson"]
Design = Literal["stratified", "poisson"]


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), digits)


# --- drawing the sample ---------------------------------------------------------------------------


def _rank(seed: int | str, stratum: str, key: Hashable) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{stratum}\x1f{key}".encode()).digest()


def qa_sample[K: Hashable](
    keys: Sequence[K],
    strata: Sequence[str],
    rate: float | Mapping[str, float],
    seed: int | str,
    *,
    min_per_stratum: int = 0,
) -> list[tuple[K, float]]:
    """A stratified random sample of `keys` (one stratum per key, e.g. its language), each drawn key with
    its inclusion probability, in input order. `rate` is one rate for every stratum or one per stratum
    (a stratum missing from the mapping, or at rate 0, is not sampled; `min_per_stratum` applies to the
    others). Nothing about agreement goes in."""
    if len(keys) != len(strata):
        raise ValueError(f"{len(strata)} strata for {len(keys)} keys")
    if len(set(keys)) != len(keys):
        raise ValueError("keys must be unique: a target can be drawn only once")
    if min_per_stratum < 0:
        raise ValueError("min_per_stratum must not be negative")
    members: dict[str, list[int]] = defaultdict(list)
    for position, stratum in enumerate(strata):
        members[stratum].append(position)
    chosen: dict[int, float] = {}
    for stratum, positions in members.items():
        r = rate.get(stratum, 0.0) if isinstance(rate, Mapping) else rate
        if not 0 <= r <= 1 or math.isnan(r):
            raise ValueError(f"sampling rate {r!r} for stratum {stratum!r} is not between 0 and 1")
        size = len(positions)
        if r == 0:
            continue  # a rate of 0 (or no rate for the stratum) means: not sampled, whatever the minimum
        take = min(size, max(min_per_stratum, math.ceil(r * size)))
        ranked = sorted(positions, key=lambda p: _rank(seed, stratum, keys[p]))
        for position in ranked[:take]:
            chosen[position] = take / size
    return [(keys[p], chosen[p]) for p in sorted(chosen)]


# --- design-based estimates -------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleItem:
    stratum: str
    probability: float  # inclusion probability of this target in the sample
    value: bool | None  # the judge was right (or the target passed); None: no gold yet


@dataclass(frozen=True)
class WeightedProportion:
    estimator: str
    value: float | None
    low: float | None
    high: float | None
    se: float | None
    n_sampled: int
    n_labelled: int
    missing: int  # sampled targets still without gold
    effective_n: float
    population: float  # the population size the sample stands for
    interval: str = "wilson at effective n, linearised variance"
    design: str = "stratified"

    @property
    def missing_share(self) -> float | None:
        return self.missing / self.n_sampled if self.n_sampled else None

    @property
    def estimate(self) -> Estimate:
        return Estimate(self.value, self.low, self.high)

    @property
    def evidence(self) -> Evidence:
        """Insufficient evidence and labels needed, at this estimate's effective size."""
        if self.value is None or self.n_labelled == 0:
            return agreement_evidence(0, 0)
        p = min(1.0, max(0.0, self.value))
        return agreement_evidence(self.n_labelled, p * self.n_labelled, effective_n=self.effective_n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimator,
            "value": _round(self.value),
            "low": _round(self.low),
            "high": _round(self.high),
            "se": _round(self.se),
            "n_sampled": self.n_sampled,
            "n_labelled": self.n_labelled,
            "missing": self.missing,
            "missing_share": _round(self.missing_share),
            "effective_n": _round(self.effective_n),
            "population": _round(self.population),
            "interval": self.interval,
            "design": self.design,
            "evidence": self.evidence.as_dict(),
        }


def proportion_estimate(
    items: Sequence[SampleItem],
    *,
    estimator: Estimator = "hajek",
    population: float | None = None,
    design: Design = "stratified",
    confidence: float = CONFIDENCE,
) -> WeightedProportion:
    """The population proportion of `value` from a random sample, by the named estimator.

    `design` says how the sample was drawn, which the variance depends on: "stratified" (a fixed number
    per stratum, as `qa_sample` draws) or "poisson" (each target drawn on its own with its probability,
    so the sample size is random too; the strata then only group the missing-gold adjustment).
    """
    if estimator not in ("hajek", "horvitz-thompson"):
        raise ValueError(f"unknown estimator {estimator!r}: expected hajek or horvitz-thompson")
    if design not in ("stratified", "poisson"):
        raise ValueError(f"unknown design {design!r}: expected stratified or poisson")
    for position, item in enumerate(items):
        if not 0 < item.probability <= 1 or math.isnan(item.probability):
            raise ValueError(f"item {position}: inclusion probability {item.probability!r} is not in (0, 1]")
        if item.value is not None and not isinstance(item.value, bool | np.bool_):
            raise ValueError(f"item {position}: value {item.value!r} is not true, false or None")
    return proportion_estimate_columns(
        [item.stratum for item in items],
        np.array([item.probability for item in items], dtype=float),
        np.array([bool(item.value) for item in items], dtype=bool),
        np.array([item.value is not None for item in items], dtype=bool),
        estimator=estimator,
        population=population,
        design=design,
        confidence=confidence,
    )


def proportion_estimate_columns(
    stratum_of: Sequence[str],
    probability: np.ndarray,
    value: np.ndarray,
    labelled: np.ndarray,
    *,
    estimator: Estimator = "hajek",
    population: float | None = None,
    design: Design = "stratified",
    confidence: float = CONFIDENCE,
) -> WeightedProportion:
    """`proportion_estimate` of a sample held as columns: item i is in stratum `stratum_of[i]`, drawn with
    `probability[i]`, with `value[i]` when `labelled[i]` (booleans) and no gold yet otherwise. The same
    arithmetic in the same order, without an object per item (a QA sample of a large slice)."""
    if estimator not in ("hajek", "horvitz-thompson"):
        raise ValueError(f"unknown estimator {estimator!r}: expected hajek or horvitz-thompson")
    if design not in ("stratified", "poisson"):
        raise ValueError(f"unknown design {design!r}: expected stratified or poisson")
    probability = np.asarray(probability, dtype=float)
    outside = np.flatnonzero(~((probability > 0) & (probability <= 1)))
    if outside.size:
        position = int(outside[0])
        raise ValueError(f"item {position}: inclusion probability {float(probability[position])!r} is not in (0, 1]")
    count = len(stratum_of)
    by_stratum: dict[str, np.ndarray] = {}
    if count:
        names = np.asarray(stratum_of)
        for stratum in dict.fromkeys(stratum_of):
            by_stratum[stratum] = names == stratum
    design_size = math.fsum((1 / probability).tolist())
    size = design_size if population is None else float(population)
    n_labelled = int(np.count_nonzero(labelled))
    missing = count - n_labelled

    def empty() -> WeightedProportion:
        return WeightedProportion(estimator, None, None, None, None, count, 0, missing, 0.0, size)

    if n_labelled == 0:
        return empty()
    unlabelled_strata = [s for s, rows in by_stratum.items() if not labelled[rows].any()]
    if unlabelled_strata and estimator == "horvitz-thompson":
        raise ValueError(
            f"strata {sorted(unlabelled_strata)} have no labelled item: a Horvitz-Thompson total would leave them out"
        )
    # Weights: 1 / probability, divided by the stratum's labelled share (missing at random within it).
    strata: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
    for stratum, rows in by_stratum.items():
        done = rows & labelled
        n_done = int(np.count_nonzero(done))
        if not n_done:
            continue
        share = n_done / int(np.count_nonzero(rows))
        w = 1 / (probability[done] * share)
        y = np.where(value[done], 1.0, 0.0)
        stratum_size = math.fsum((1 / probability[rows]).tolist())
        strata[stratum] = (w, y, stratum_size)
    total_weight = math.fsum(float(w.sum()) for w, _, _ in strata.values())
    weighted_sum = math.fsum(float((w * y).sum()) for w, y, _ in strata.values())
    denominator = total_weight if estimator == "hajek" else size
    p = weighted_sum / denominator
    variance = 0.0
    for w, y, stratum_size in strata.values():
        m = len(w)
        u = w * (y - p) / denominator if estimator == "hajek" else w * y / denominator
        if design == "poisson":
            # Independent draws: V = sum (1 - pi) (y / pi)^2 for a total, pi the (adjusted) probability.
            variance += float((np.clip(1 - 1 / w, 0.0, 1.0) * u**2).sum())
            continue
        fpc = max(0.0, 1 - m / stratum_size)
        if m < 2:
            # One labelled item says nothing about its stratum's spread: count the largest a
            # proportion can have (1/4), rather than none.
            variance += fpc * float(w[0] / denominator) ** 2 * 0.25
            continue
        variance += fpc * m / (m - 1) * float(((u - u.mean()) ** 2).sum())
    clipped = min(1.0, max(0.0, p))
    n_eff = effective_size(clipped, variance, n_labelled)
    interval = proportion_interval(clipped * n_eff, n_eff, confidence=confidence)
    return WeightedProportion(
        estimator=estimator,
        value=p,
        low=interval.low,
        high=interval.high,
        se=math.sqrt(variance),
        n_sampled=count,
        n_labelled=n_labelled,
        missing=missing,
        effective_n=n_eff,
        population=size,
        design=design,
    )


# --- prediction-powered inference -----------------------------------------------------------------------


@dataclass(frozen=True)
class PredictionPowered:
    """A judge's pass rate three ways, for one judge version x language."""

    ppi: Estimate  # the judge's rate corrected by the human labels, with its PPI++ interval
    human: Estimate  # humans only: the labelled sample's rate with its Wilson interval
    judge_raw: float | None  # the judge's own rate on every target, labelled and unlabelled
    n_labelled: int
    n_unlabelled: int
    width_ratio: float | None  # PPI width / human-only width: below 1, the judge narrows the interval
    method: str = "PPI++ (ppi_py, power-tuned) at its effective n with Wilson; Wilson for humans only"
    ppi_clt: Estimate = field(default_factory=lambda: Estimate(None))  # ppi_py's own normal interval, for reference
    effective_n: float = 0.0  # p(1-p) / PPI variance: how many human labels the corrected rate is worth

    def as_dict(self) -> dict[str, Any]:
        return {
            "ppi": self.ppi.as_dict(),
            "ppi_clt": self.ppi_clt.as_dict(),
            "effective_n": _round(self.effective_n),
            "human": self.human.as_dict(),
            "judge_raw": _round(self.judge_raw),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "width_ratio": _round(self.width_ratio),
            "method": self.method,
        }


def _booleans(name: str, values: Sequence[bool] | np.ndarray) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == bool:
        return values.astype(float)
    for position, value in enumerate(values):
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{name}[{position}] is {value!r}, not true or false (leave unresolved answers out)")
    return np.array([1.0 if v else 0.0 for v in values])


def prediction_powered_rate(
    human: Sequence[bool] | np.ndarray,
    judge_labelled: Sequence[bool] | np.ndarray,
    judge_unlabelled: Sequence[bool] | np.ndarray,
    *,
    confidence: float = CONFIDENCE,
) -> PredictionPowered:
    """The pass rate of a population of targets from a uniform random labelled sample.

    `human[i]` and `judge_labelled[i]` are what people and the judge say of the i-th labelled target;
    `judge_unlabelled` is the judge on every other target. Targets where the judge is unresolved have no
    prediction: the caller leaves them out (and shows how many), nothing here guesses for them.
    """
    if len(human) != len(judge_labelled):
        raise ValueError(f"{len(human)} human labels for {len(judge_labelled)} judge labels")
    y = _booleans("human", human)
    yhat = _booleans("judge_labelled", judge_labelled)
    yhat_unlabelled = _booleans("judge_unlabelled", judge_unlabelled)
    n, big_n = len(y), len(yhat_unlabelled)
    everything = np.concatenate([yhat, yhat_unlabelled])
    judge_raw = float(everything.mean()) if everything.size else None
    human_estimate = proportion_interval(float(y.sum()), n, confidence=confidence)
    if n < 2 or big_n < 1:
        return PredictionPowered(Estimate(None), human_estimate, judge_raw, n, big_n, None)
    # ppi_py takes over a second to import: only the callers of this function pay for it (the sampler
    # above runs inside a sweep's closing transaction, where a slow import holds the write lock).
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    method = PredictionPowered.method
    lam: float | None = None
    if float(np.var(yhat)) == 0 and float(np.var(yhat_unlabelled)) == 0:
        # The judge says the same of every target: power tuning has nothing to tune on (0 / 0), and
        # plain PPI (lambda = 1) then reduces to the human rate.
        lam = 1.0
        method = "PPI (ppi_py, lambda = 1: the judge's labels do not vary) at its effective n with Wilson"
    value = float(np.asarray(ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=lam)).ravel()[0])
    low_raw, high_raw = ppi_mean_ci(y, yhat, yhat_unlabelled, alpha=1 - confidence, lam=lam)
    low = float(np.asarray(low_raw).ravel()[0])
    high = float(np.asarray(high_raw).ravel()[0])
    clt = Estimate(value, low, high)
    # ppi_py's interval is normal (value +- z se): near 0 or 1 with a small labelled sample it covers
    # far less than 95% (0.83 at n = 60 and a rate of 0.95). Its variance is kept and the interval is
    # Wilson at the effective size n_eff = p(1-p) / se^2, as for every other proportion here; with no
    # spread at all (se = 0) n_eff is the labelled count, so a perfect sample does not claim certainty.
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    se = (high - low) / (2 * z) if math.isfinite(low) and math.isfinite(high) else 0.0
    p = min(1.0, max(0.0, value))
    n_eff = effective_size(p, se**2, n)
    wilson = proportion_interval(p * n_eff, n_eff, confidence=confidence)
    ppi = Estimate(value, wilson.low, wilson.high)
    ratio = None
    if human_estimate.low is not None and human_estimate.high is not None and human_estimate.high > human_estimate.low:
        assert ppi.low is not None and ppi.high is not None
        ratio = (ppi.high - ppi.low) / (human_estimate.high - human_estimate.low)
    return PredictionPowered(ppi, human_estimate, judge_raw, n, big_n, ratio, method, clt, n_eff)

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

API used by the app: classification_report(gold, judge, labels=, weights=, clusters=, n_boot=, seed=,
bootstrap_interval=) -> ClassificationReport (accuracy/macro_f1/kappa/kappa_quadratic as Estimate
{value, low, high}, evidence, per_class_f1, support, confusion, macro_f1_labels, clusters,
effective_n); proportion_interval(k, n, method=); evidence(n, k, effective_n=); effective_size;
labels_needed(p_hat, half_width); weighted_accuracy; mean_std; RunCounts, run_accuracy, runs_accuracy;
krippendorff_alpha(units, level=); pairwise_agreement; movement_matrix; movement_vs_noise; mcnemar_exact.

Labels are strings ("pass", "fail", "3"); gold comes first, the judge second, everywhere.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .lazy import lazy_import

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
# Keep one bootstrap chunk under this many resampled cells, so memory stays flat on big sets.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval (None when there is none to give)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": _round(self.value), "low": _round(self.low), "high": _round(self.high)}

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
            "n": _round(self.n),
            "sufficient": self.sufficient,
            "reason": self.reason,
            "half_width": _round(self.estimate.half_width),
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


# --- classification report -----------------------------------------------------------------------


@dataclass(frozen=True)
class ClassificationReport:
    n: int
    labels: list[str]
    accuracy: Estimate
    macro_f1: Estimate
    kappa: Estimate
    per_class_f1: dict[str, float]
    support: dict[str, int]
    confusion: list[list[float]]  # rows: gold label, columns: judge label, in `labels` order
    weighted: bool = False
    total_weight: float = 0.0
    kappa_quadratic: Estimate | None = None  # for numeric (ordinal) labels only
    macro_f1_labels: list[str] = field(default_factory=list)  # the classes macro-F1 averages over
    clusters: int = 0  # resampling units of the bootstrap (conversations, or pairs)
    effective_n: float = 0.0  # the sample size the accuracy interval is taken at
    correct: float = 0.0  # (weighted) count of pairs where the judge equals gold
    evidence: Evidence | None = None
    accuracy_method: str = "wilson"

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "weighted": self.weighted,
            "labels": self.labels,
            "accuracy": self.accuracy.as_dict(),
            "macro_f1": self.macro_f1.as_dict(),
            "kappa": self.kappa.as_dict(),
            "kappa_quadratic": self.kappa_quadratic.as_dict() if self.kappa_quadratic else None,
            "macro_f1_labels": self.macro_f1_labels,
            "per_class_f1": {k: _round(v) for k, v in self.per_class_f1.items()},
            "support": self.support,
            "confusion": self.confusion,
            "clusters": self.clusters,
            "effective_n": _round(self.effective_n),
            "accuracy_interval": self.accuracy_method,
            "evidence": self.evidence.as_dict() if self.evidence else None,
        }


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), digits)


def _none_if_nan(value: float) -> float | None:
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


def _numeric_labels(labels: Sequence[str]) -> bool:
    return len(labels) > 0 and all(_is_number(label) for label in labels)


# --- metrics read off confusion matrices (vectorised over a leading axis) ------------------------------


def metrics_from_confusion(confusion: np.ndarray, *, quadratic: bool = False) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and Cohen's kappa from confusion matrices shaped (..., k, k), rows gold.

    Macro-F1 averages over the classes present (some true or predicted case), as scikit-learn does
    when not given `labels`; kappa is NaN when both raters used one single label (chance agreement 1),
    as in scikit-learn. With `quadratic`, also "kappa_quadratic": weights (i - j)^2 over label positions,
    scikit-learn's `weights="quadratic"`.
    """
    c = np.asarray(confusion, dtype=float)
    total = c.sum(axis=(-2, -1))
    tp = np.diagonal(c, axis1=-2, axis2=-1)
    gold = c.sum(axis=-1)
    predicted = c.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = tp.sum(axis=-1) / total
        denominator = gold + predicted
        present = denominator > 0
        f1 = np.where(present, 2 * tp / np.where(present, denominator, 1), 0.0)
        macro_f1 = f1.sum(axis=-1) / present.sum(axis=-1)
        expected = (gold * predicted).sum(axis=-1) / (total * total)
        kappa = (accuracy - expected) / (1 - expected)
        out = {"accuracy": accuracy, "macro_f1": macro_f1, "kappa": kappa}
        if quadratic:
            k = c.shape[-1]
            positions = np.arange(k, dtype=float)
            w = (positions[:, None] - positions[None, :]) ** 2
            chance = gold[..., :, None] * predicted[..., None, :] / total[..., None, None]
            out["kappa_quadratic"] = 1 - (w * c).sum(axis=(-2, -1)) / (w * chance).sum(axis=(-2, -1))
    return out


def _per_class_f1(confusion: np.ndarray) -> np.ndarray:
    """F1 of each class (rows gold), 0 for a class with no true and no predicted case (zero_division=0)."""
    tp = np.diagonal(confusion)
    denominator = confusion.sum(axis=1) + confusion.sum(axis=0)
    return np.where(denominator > 0, 2 * tp / np.where(denominator > 0, denominator, 1), 0.0)


def _cluster_codes(clusters: Sequence[Hashable] | None, n: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster ids for {n} pairs")
    codes: dict[Hashable, int] = {}
    return np.array([codes.setdefault(c, len(codes)) for c in clusters], dtype=int), len(codes)


def _bootstrap_confusions(
    gold_index: np.ndarray,
    judge_index: np.ndarray,
    weights: np.ndarray,
    k: int,
    n_boot: int,
    seed: int,
    cluster: np.ndarray | None = None,
    n_clusters: int | None = None,
) -> np.ndarray:
    """n_boot confusion matrices, each from a resample (with replacement) of the clusters.

    Each cluster's (weighted) confusion counts are summed once; a replicate draws G clusters with
    replacement and adds their counts. Without clusters each pair is its own cluster. Clusters with
    the same counts are interchangeable, so a replicate draws how many of each kind it takes
    (multinomial over the distinct kinds, in proportion to how many clusters are of that kind) when
    kinds are few: the same distribution as drawing clusters one by one, at a cost that grows with the
    kinds, not the pairs (at most k*k kinds for unweighted pairs without clusters).
    """
    n = len(gold_index)
    if cluster is None:
        cluster, n_clusters = np.arange(n), n
    assert n_clusters is not None
    rng = np.random.default_rng(seed)
    cell = gold_index * k + judge_index
    per_cluster = np.zeros((n_clusters, k * k))
    np.add.at(per_cluster, (cluster, cell), weights)
    kinds, how_many = np.unique(per_cluster, axis=0, return_counts=True)
    by_kind = len(kinds) * 4 < n_clusters  # few kinds: draw counts per kind; else draw clusters
    units = len(kinds) if by_kind else n_clusters
    out = np.empty((n_boot, k * k))
    chunk = max(1, _CHUNK_CELLS // max(units, 1))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        if by_kind:
            out[start : start + size] = rng.multinomial(n_clusters, how_many / n_clusters, size=size) @ kinds
            continue
        draws = rng.integers(0, n_clusters, size=(size, n_clusters))
        offsets = (np.arange(size) * n_clusters)[:, None]
        times = np.bincount((draws + offsets).ravel(), minlength=size * n_clusters).reshape(size, n_clusters)
        out[start : start + size] = times @ per_cluster
    return out.reshape(n_boot, k, k)


def _interval(
    values: np.ndarray,
    confidence: float,
    *,
    point: float = math.nan,
    method: BootstrapInterval = "wilson",
    signed: bool = False,
) -> tuple[float | None, float | None]:
    """The interval from bootstrap replicates, or none when they are degenerate or too often undefined.

    "percentile": the replicates' quantiles. "wilson": Wilson at the effective size p(1-p) / the
    replicates' variance around the point estimate `point` (a figure in [0, 1]; `signed` figures in
    [-1, 1] such as kappa are mapped to (x + 1) / 2 and back), which keeps its coverage near 0 and 1
    where the percentile interval falls short (0.81 against 0.87 for macro-F1 at 0.97 on 15
    conversations, 0.89 against 0.94 at 0.95 on 20).
    """
    finite = values[~np.isnan(values)]
    if finite.size < 2 or finite.size < (1 - MAX_UNDEFINED_SHARE) * values.size:
        return None, None
    if float(np.ptp(finite)) <= 1e-12:
        return None, None
    if method == "percentile" or math.isnan(point):
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(finite, [tail, 100 - tail])
        return float(low), float(high)
    scale = 2.0 if signed else 1.0
    p = min(1.0, max(0.0, (point + 1) / 2 if signed else point))
    sd = float(np.std(finite, ddof=1)) / scale
    n_eff = effective_size(p, sd**2, finite.size)
    interval = proportion_interval(p * n_eff, n_eff, confidence=confidence)
    assert interval.low is not None and interval.high is not None
    if signed:
        return 2 * interval.low - 1, 2 * interval.high - 1
    return interval.low, interval.high


def _accuracy_interval(
    right: np.ndarray, w: np.ndarray, cluster: np.ndarray, n_clusters: int, *, plain: bool, confidence: float
) -> tuple[Estimate, float, str]:
    """Wilson for accuracy: at n for independent unweighted pairs, else at the effective sample size."""
    n = len(right)
    if plain:
        k = float(right.sum())
        return proportion_interval(k, n, confidence=confidence), float(n), "wilson"
    total = float(w.sum())
    if total <= 0:
        return Estimate(None), 0.0, "wilson"
    p = float((w * right).sum()) / total
    residual = np.zeros(n_clusters)
    np.add.at(residual, cluster, w * (right - p))
    cluster_weight = np.zeros(n_clusters)
    np.add.at(cluster_weight, cluster, w)
    variance = n_clusters / (n_clusters - 1) * float((residual**2).sum()) / total**2 if n_clusters > 1 else 0.0
    kish = float(cluster_weight.sum() ** 2 / (cluster_weight**2).sum())
    n_eff = min(float(n), effective_size(p, variance, kish))
    estimate = proportion_interval(p * n_eff, n_eff, confidence=confidence)
    return Estimate(p, estimate.low, estimate.high), n_eff, "wilson, effective n"


def classification_report(
    gold: Sequence[str],
    judge: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
    clusters: Sequence[Hashable] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    bootstrap_interval: BootstrapInterval = "wilson",
) -> ClassificationReport:
    """How well `judge` matches `gold`: accuracy with a Wilson interval, macro-F1 and kappa with a
    cluster bootstrap (Wilson at its effective size, or its percentiles), quadratic kappa when every
    label is a number, and the evidence verdict.

    `labels` is the judge's full label set (its scale): per-class F1, support and the confusion matrix
    follow it, and quadratic kappa weighs by positions in it; macro-F1 averages only the classes present.
    With `weights` (1 / sampling probability of each pair) every figure is a weighted estimate of the
    population the sample was drawn from. `clusters` (a conversation id per pair) makes the bootstrap
    resample conversations and the accuracy interval account for errors shared within one.
    """
    if len(gold) != len(judge):
        raise ValueError(f"gold has {len(gold)} labels and judge {len(judge)}")
    if weights is not None and len(weights) != len(gold):
        raise ValueError(f"{len(weights)} weights for {len(gold)} pairs")
    labels = list(labels) if labels is not None else label_order(gold, judge)
    unknown = sorted((set(gold) | set(judge)) - set(labels))
    if unknown:
        raise ValueError(f"labels {unknown} are not in the label set {labels}")
    n = len(gold)
    cluster, n_clusters = _cluster_codes(clusters, n)
    quadratic = _numeric_labels(labels)
    if n == 0:
        empty = Estimate(None)
        return ClassificationReport(
            0, labels, empty, empty, empty, {}, {}, [], weights is not None,
            kappa_quadratic=empty if quadratic else None, evidence=evidence(0, 0),
        )  # fmt: skip
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if (w <= 0).any() or not np.isfinite(w).all():
        # A weight is 1 / a sampling probability: a pair of weight 0 would be in the slice and not in it.
        raise ValueError("weights must be finite and positive")
    y_true, y_pred = list(gold), list(judge)
    present = label_order(y_true, y_pred)
    if quadratic:
        labels = sorted(labels, key=float)

    index = {label: i for i, label in enumerate(labels)}
    gold_index = np.array([index[g] for g in y_true])
    judge_index = np.array([index[j] for j in y_pred])
    k = len(labels)
    # The point estimates are read off the (weighted) confusion matrix with the same vectorised readings
    # the bootstrap uses: tests hold them equal to scikit-learn's accuracy_score, f1_score (per class and
    # macro over the classes present), cohen_kappa_score (plain and quadratic) and confusion_matrix, at
    # a fraction of the cost of six scikit-learn calls per slice.
    confusion = np.bincount(gold_index * k + judge_index, weights=w, minlength=k * k).reshape(k, k)
    read = metrics_from_confusion(confusion, quadratic=quadratic)
    accuracy = float(read["accuracy"])
    macro_f1 = float(read["macro_f1"])
    single_label = len(present) < 2
    kappa = math.nan if single_label else float(read["kappa"])
    kappa_q = float(read["kappa_quadratic"]) if quadratic and not single_label else math.nan
    per_class = _per_class_f1(confusion)
    intervals: dict[str, tuple[float | None, float | None]] = {}
    if n_boot > 0 and n_clusters > 1:
        replicates = metrics_from_confusion(
            _bootstrap_confusions(gold_index, judge_index, w, len(labels), n_boot, seed, cluster, n_clusters),
            quadratic=quadratic,
        )
        points = {"macro_f1": macro_f1, "kappa": kappa, "kappa_quadratic": kappa_q}
        intervals = {
            name: _interval(
                replicates[name], confidence, point=point, method=bootstrap_interval, signed=name != "macro_f1"
            )
            for name, point in points.items()
            if name in replicates
        }

    def estimate(name: str, value: float) -> Estimate:
        low, high = intervals.get(name, (None, None))
        return Estimate(_none_if_nan(value), low, high)

    right = (gold_index == judge_index).astype(float)
    accuracy_estimate, n_eff, method = _accuracy_interval(
        right, w, cluster, n_clusters, plain=weights is None and clusters is None, confidence=confidence
    )
    accuracy_estimate = Estimate(accuracy, accuracy_estimate.low, accuracy_estimate.high)
    support = Counter(y_true)
    return ClassificationReport(
        n=n,
        labels=labels,
        accuracy=accuracy_estimate,
        macro_f1=estimate("macro_f1", macro_f1),
        kappa=estimate("kappa", kappa),
        per_class_f1={label: float(score) for label, score in zip(labels, per_class, strict=True)},
        support={label: support.get(label, 0) for label in labels},
        confusion=[[float(x) if weights is not None else round(x) for x in row] for row in confusion.tolist()],
        weighted=weights is not None,
        total_weight=float(w.sum()),
        kappa_quadratic=estimate("kappa_quadratic", kappa_q) if quadratic else None,
        macro_f1_labels=present,
        clusters=n_clusters,
        effective_n=n_eff,
        correct=float((w * right).sum()),
        evidence=evidence(n, accuracy * n, effective_n=n_eff, confidence=confidence),
        accuracy_method=method,
    )


def weighted_accuracy(
    correct: Sequence[bool],
    weights: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """The share of the population a judge gets right, from a sample drawn with unequal probabilities.

    Each pair counts `weight` = 1 / its sampling probability times (the Hajek estimator), so strata
    sampled heavily do not dominate the estimate the way they do an unweighted mean. The interval is
    Wilson at the effective sample size (linearised variance); `scoring.estimates` has the stratified
    design-based estimators.
    """
    report = classification_report(
        ["right"] * len(correct),
        ["right" if c else "wrong" for c in correct],
        labels=["right", "wrong"],
        weights=weights,
        clusters=clusters,
        n_boot=0,
        confidence=confidence,
        seed=seed,
    )
    return report.accuracy


# --- repeated runs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    runs: int
    mean: float | None
    std: float | None  # sample standard deviation (ddof=1); None with fewer than two runs

    def as_dict(self) -> dict[str, float | int | None]:
        return {"runs": self.runs, "mean": _round(self.mean), "std": _round(self.std)}


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


# --- before/after ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Movement:
    labels: list[str]
    matrix: list[list[int]]  # rows: before (A), columns: after (B)
    n: int
    moved: int
    moves: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.moved / self.n if self.n else 0.0


def movement_matrix(before: Sequence[str], after: Sequence[str], *, labels: Sequence[str] | None = None) -> Movement:
    """How each target's label moved from A to B: a labels x labels count matrix and the off-diagonal moves."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} labels before and {len(after)} after")
    labels = list(labels) if labels is not None else label_order(before, after)
    from sklearn.metrics import confusion_matrix

    matrix = confusion_matrix(list(before), list(after), labels=labels) if before else np.zeros((len(labels),) * 2)
    moves = {
        (a, b): int(matrix[i][j]) for i, a in enumerate(labels) for j, b in enumerate(labels) if i != j and matrix[i][j]
    }
    return Movement(
        labels=labels,
        matrix=[[int(x) for x in row] for row in np.asarray(matrix).tolist()],
        n=len(before),
        moved=sum(moves.values()),
        moves=moves,
    )


@dataclass(frozen=True)
class NoiseComparison:
    """B's movement against a rerun of A on the same targets (paired, exact McNemar test)."""

    n: int
    version_moved: int
    noise_moved: int
    only_version: int  # moved from A to B but not between A's two runs
    only_noise: int  # moved between A's runs but not from A to B
    p_value: float
    alpha: float
    exceeds_noise: bool

    @property
    def version_rate(self) -> float:
        return self.version_moved / self.n if self.n else 0.0

    @property
    def noise_rate(self) -> float:
        return self.noise_moved / self.n if self.n else 0.0

    def statement(self, a: str = "A", b: str = "B") -> str:
        if self.n == 0:
            return f"No target has both a rerun of {a} and a verdict of {b}: the noise baseline cannot be measured."
        head = (
            f"{b} moved {self.version_moved} of {self.n} targets ({self.version_rate:.1%}); "
            f"rerunning {a} with no change moved {self.noise_moved} ({self.noise_rate:.1%}). "
        )
        test = (
            f"Exact McNemar test on the {self.only_version + self.only_noise} targets that moved in only one of "
            f"the two ({self.only_version} vs {self.only_noise}): p = {self.p_value:.3g}. "
        )
        if self.exceeds_noise:
            verdict = f"The change from {a} to {b} is larger than run-to-run noise (p < {self.alpha:g})."
        else:
            verdict = f"The change from {a} to {b} is not distinguishable from run-to-run noise (p >= {self.alpha:g})."
        return head + test + verdict

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "version_moved": self.version_moved,
            "noise_moved": self.noise_moved,
            "only_version": self.only_version,
            "only_noise": self.only_noise,
            "p_value": self.p_value,
            "exceeds_noise": self.exceeds_noise,
        }


def movement_vs_noise(
    version_moved: Sequence[bool], noise_moved: Sequence[bool], *, alpha: float = 0.05
) -> NoiseComparison:
    """Is B's movement larger than what rerunning A moves? One pair of booleans per target.

    Exact McNemar test: among targets that moved in exactly one comparison, under "B moves no more than
    noise" each is equally likely to be a version-only or a noise-only move; a one-sided binomial
    test on the version-only count says whether B moves more.
    """
    if len(version_moved) != len(noise_moved):
        raise ValueError(f"{len(version_moved)} version flags and {len(noise_moved)} noise flags")
    only_version = sum(1 for v, r in zip(version_moved, noise_moved, strict=True) if v and not r)
    only_noise = sum(1 for v, r in zip(version_moved, noise_moved, strict=True) if r and not v)
    discordant = only_version + only_noise
    from scipy.stats import binomtest

    p_value = float(binomtest(only_version, discordant, 0.5, alternative="greater").pvalue) if discordant else 1.0
    return NoiseComparison(
        n=len(version_moved),
        version_moved=sum(bool(v) for v in version_moved),
        noise_moved=sum(bool(r) for r in noise_moved),
        only_version=only_version,
        only_noise=only_noise,
        p_value=p_value,
        alpha=alpha,
        exceeds_noise=p_value < alpha,
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (e.g. pass->fail vs fail->pass)."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)

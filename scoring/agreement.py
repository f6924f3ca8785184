"""Agreement statistics on plain lists: how often a judge matches gold, and whether a new version moved.

Point estimates come from scikit-learn (accuracy, macro-F1, per-class F1, Cohen's kappa, the
confusion matrix), Krippendorff's alpha from `krippendorff`, tests from `scipy.stats.binomtest`.

Bootstrap intervals need a thousand recomputations per group; calling scikit-learn a thousand times
costs seconds per group, too slow for a page. So the resamples are drawn as confusion matrices in one
vectorised pass and each metric is read off them (`metrics_from_confusion`); tests check that these
readings equal scikit-learn's on the unresampled data, weighted and unweighted.

Labels are strings ("pass", "fail", "3"); gold comes first, the judge second, everywhere.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import krippendorff
import numpy as np
from scipy.stats import binomtest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score

Level = Literal["nominal", "ordinal", "interval", "ratio"]
DEFAULT_BOOTSTRAP = 1000
CONFIDENCE = 0.95
# Keep one bootstrap chunk under this many resampled cells, so memory stays flat on big sets.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class Estimate:
    """A value with its bootstrap interval (None when there is nothing to resample)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": _round(self.value), "low": _round(self.low), "high": _round(self.high)}


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

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "weighted": self.weighted,
            "labels": self.labels,
            "accuracy": self.accuracy.as_dict(),
            "macro_f1": self.macro_f1.as_dict(),
            "kappa": self.kappa.as_dict(),
            "per_class_f1": {k: _round(v) for k, v in self.per_class_f1.items()},
            "support": self.support,
            "confusion": self.confusion,
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


# --- metrics read off confusion matrices (vectorised over a leading axis) ------------------------------


def metrics_from_confusion(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and Cohen's kappa from confusion matrices shaped (..., k, k), rows gold.

    Per-class F1 is 0 for a class with no true and no predicted case (scikit-learn's zero_division=0);
    kappa is NaN when both raters used one single label (chance agreement 1), as in scikit-learn.
    """
    c = np.asarray(confusion, dtype=float)
    total = c.sum(axis=(-2, -1))
    tp = np.diagonal(c, axis1=-2, axis2=-1)
    gold = c.sum(axis=-1)
    predicted = c.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = tp.sum(axis=-1) / total
        denominator = gold + predicted
        f1 = np.where(denominator > 0, 2 * tp / np.where(denominator > 0, denominator, 1), 0.0)
        expected = (gold * predicted).sum(axis=-1) / (total * total)
        kappa = (accuracy - expected) / (1 - expected)
    return {"accuracy": accuracy, "macro_f1": f1.mean(axis=-1), "kappa": kappa}


def _bootstrap_confusions(
    gold_index: np.ndarray, judge_index: np.ndarray, weights: np.ndarray, k: int, n_boot: int, seed: int
) -> np.ndarray:
    """n_boot confusion matrices, each from a resample (with replacement) of the n pairs."""
    n = len(gold_index)
    rng = np.random.default_rng(seed)
    cell = gold_index * k + judge_index
    out = np.empty((n_boot, k, k))
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        draws = rng.integers(0, n, size=(size, n))
        offsets = (np.arange(size) * k * k)[:, None]
        counts = np.bincount((cell[draws] + offsets).ravel(), weights=weights[draws].ravel(), minlength=size * k * k)
        out[start : start + size] = counts.reshape(size, k, k)
    return out


def _interval(values: np.ndarray, confidence: float) -> tuple[float | None, float | None]:
    finite = values[~np.isnan(values)]
    if finite.size == 0:
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def classification_report(
    gold: Sequence[str],
    judge: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> ClassificationReport:
    """How well `judge` matches `gold`, with percentile bootstrap intervals.

    With `weights` (1 / sampling probability of each pair) every figure is a weighted estimate of the
    population the sample was drawn from, and the bootstrap resamples pairs with their weights.
    """
    if len(gold) != len(judge):
        raise ValueError(f"gold has {len(gold)} labels and judge {len(judge)}")
    if weights is not None and len(weights) != len(gold):
        raise ValueError(f"{len(weights)} weights for {len(gold)} pairs")
    labels = list(labels) if labels is not None else label_order(gold, judge)
    n = len(gold)
    if n == 0:
        empty = Estimate(None)
        return ClassificationReport(0, labels, empty, empty, empty, {}, {}, [], weights is not None)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    if (w < 0).any():
        raise ValueError("weights must not be negative")
    sample_weight = None if weights is None else w
    y_true, y_pred = list(gold), list(judge)

    accuracy = float(accuracy_score(y_true, y_pred, sample_weight=sample_weight))
    per_class = f1_score(y_true, y_pred, labels=labels, average=None, sample_weight=sample_weight, zero_division=0)
    macro_f1 = float(np.mean(per_class))
    single_label = len(set(y_true) | set(y_pred)) < 2
    kappa = (
        math.nan
        if single_label
        else float(cohen_kappa_score(y_true, y_pred, labels=labels, sample_weight=sample_weight))
    )
    confusion = confusion_matrix(y_true, y_pred, labels=labels, sample_weight=sample_weight)

    intervals: dict[str, tuple[float | None, float | None]] = {}
    if n_boot > 0 and n > 1:
        index = {label: i for i, label in enumerate(labels)}
        replicates = metrics_from_confusion(
            _bootstrap_confusions(
                np.array([index[g] for g in y_true]),
                np.array([index[j] for j in y_pred]),
                w,
                len(labels),
                n_boot,
                seed,
            )
        )
        intervals = {name: _interval(values, confidence) for name, values in replicates.items()}

    def estimate(name: str, value: float) -> Estimate:
        low, high = intervals.get(name, (None, None))
        return Estimate(_none_if_nan(value), low, high)

    support = Counter(y_true)
    return ClassificationReport(
        n=n,
        labels=labels,
        accuracy=estimate("accuracy", accuracy),
        macro_f1=estimate("macro_f1", macro_f1),
        kappa=estimate("kappa", kappa),
        per_class_f1={label: float(score) for label, score in zip(labels, per_class, strict=True)},
        support={label: support.get(label, 0) for label in labels},
        confusion=[[float(x) if weights is not None else int(x) for x in row] for row in confusion.tolist()],
        weighted=weights is not None,
        total_weight=float(w.sum()),
    )


def weighted_accuracy(
    correct: Sequence[bool],
    weights: Sequence[float],
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> Estimate:
    """The share of the population a judge gets right, from a sample drawn with unequal probabilities.

    Each pair counts `weight` = 1 / its sampling probability times (the Hajek estimator), so strata
    sampled heavily do not dominate the estimate the way they do an unweighted mean.
    """
    report = classification_report(
        ["right"] * len(correct),
        ["right" if c else "wrong" for c in correct],
        labels=["right", "wrong"],
        weights=weights,
        n_boot=n_boot,
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
    """Mean +- standard deviation of one metric over repeated runs (EVA's way of reporting judges)."""
    finite = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if finite.size == 0:
        return Spread(0, None, None)
    std = float(np.std(finite, ddof=1)) if finite.size > 1 else None
    return Spread(int(finite.size), float(finite.mean()), std)


# --- agreement between people ---------------------------------------------------------------------


def krippendorff_alpha(units: Sequence[Sequence[str]], *, level: Level = "nominal") -> float | None:
    """Krippendorff's alpha over units (items), each the labels its raters gave (any number per unit).

    Units with fewer than two labels carry no agreement information and are left out. None when
    fewer than two pairable units remain or only one label value was ever used (alpha is undefined).
    """
    pairable = [list(unit) for unit in units if len(unit) >= 2]
    values = label_order(*pairable)
    if len(pairable) < 1 or len(values) < 2:
        return None
    code = {value: float(i) for i, value in enumerate(values)}
    width = max(len(unit) for unit in pairable)
    # krippendorff wants raters x units; a row is a rating slot, not a person: alpha only counts pairs
    # within a unit, so which rater gave which label does not change it. Codes follow label_order, so
    # ordinal alpha sees numbers in numeric order.
    data = np.full((width, len(pairable)), np.nan)
    for column, unit in enumerate(pairable):
        for row, value in enumerate(unit):
            data[row, column] = code[value]
    if level in ("interval", "ratio"):
        if not all(_is_number(v) for v in values):
            raise ValueError(f"{level} alpha needs numeric labels, got {values}")
        data = np.vectorize(lambda c: float(values[int(c)]) if not math.isnan(c) else math.nan)(data)
    alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return None if math.isnan(alpha) else alpha


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
    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)

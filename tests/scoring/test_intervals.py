"""Intervals, slices, evidence and runs of scoring.agreement, checked against the libraries."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score
from statsmodels.stats.proportion import proportion_confint

from scoring import agreement, classification
from scoring.agreement import RunCounts

SCALES = {
    "binary": ["pass", "fail"],
    "three": ["1", "2", "3"],
    "five": ["1", "2", "3", "4", "5"],
}


def random_pairs(labels: list[str], n: int, *, error_rate: float, seed: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    gold = [str(x) for x in rng.choice(labels, n)]
    judge = [str(rng.choice([x for x in labels if x != g])) if rng.random() < error_rate else g for g in gold]
    return gold, judge


# --- proportions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (12, 12), (0, 12), (7, 30), (29, 30), (431, 479)])
def test_proportion_interval_is_statsmodels_wilson_and_clopper_pearson(k, n):
    wilson = agreement.proportion_interval(k, n)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson.value == pytest.approx(k / n)
    assert (wilson.low, wilson.high) == pytest.approx((max(0, low), min(1, high)))
    scipy_ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert (wilson.low, wilson.high) == pytest.approx((scipy_ci.low, scipy_ci.high))

    exact = agreement.proportion_interval(k, n, method="clopper-pearson")
    scipy_exact = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert (exact.low, exact.high) == pytest.approx((scipy_exact.low, scipy_exact.high))


def test_proportion_interval_refuses_what_is_not_a_proportion():
    assert agreement.proportion_interval(0, 0).value is None
    with pytest.raises(ValueError, match="not a proportion"):
        agreement.proportion_interval(5, 4)
    with pytest.raises(ValueError, match="unknown interval method"):
        agreement.proportion_interval(1, 2, method="wald")


def test_an_all_correct_slice_of_12_has_a_lower_bound_well_below_1():
    gold = ["3", "2", "1"] * 4
    report = classification.classification_report(gold, gold, labels=["1", "2", "3"], n_boot=500)
    assert report.accuracy.value == 1.0
    assert report.accuracy.low == pytest.approx(proportion_confint(12, 12, method="wilson")[0])
    assert report.accuracy.low < 0.8 and report.accuracy.high == pytest.approx(1.0)
    # Every resample gives macro-F1 1 and kappa 1: a degenerate bootstrap gives no interval, not [1, 1].
    for estimate in (report.macro_f1, report.kappa, report.kappa_quadratic):
        assert estimate.value == pytest.approx(1.0)
        assert estimate.low is None and estimate.high is None
    assert not report.evidence.sufficient
    assert "below 30" in report.evidence.reason


# --- evidence --------------------------------------------------------------------------------------------


def statsmodels_half_width(p: float, n: int, confidence: float = 0.95) -> float:
    low, high = proportion_confint(p * n, n, alpha=1 - confidence, method="wilson")
    return (high - low) / 2


@pytest.mark.parametrize("p", [0.0, 0.5, 0.8, 0.9, 0.97, 1.0])
@pytest.mark.parametrize("half_width", [0.05, 0.03])
def test_labels_needed_is_the_first_n_statsmodels_puts_within_the_half_width(p, half_width):
    needed = agreement.labels_needed(p, half_width)
    # Search statsmodels' own intervals around the answer: n meets the target and n - 1 does not.
    assert statsmodels_half_width(p, needed) <= half_width + 1e-12
    assert statsmodels_half_width(p, needed - 1) > half_width
    if p == 0.5:
        brute = next(n for n in range(1, 5000) if statsmodels_half_width(p, n) <= half_width)
        assert needed == brute


def test_evidence_floor_and_labels_still_needed():
    small = agreement.evidence(12, 12)
    assert not small.sufficient and small.estimate.low < 0.8
    assert small.needed_5 == agreement.labels_needed(1.0, 0.05)
    assert small.more_for_5 == small.needed_5 - 12

    wide = agreement.evidence(40, 20)  # n >= 30 but +-15 points
    assert not wide.sufficient and "interval is +-" in wide.reason and "below" not in wide.reason
    assert wide.needed_5 == agreement.labels_needed(0.5, 0.05)
    assert wide.more_for_3 == agreement.labels_needed(0.5, 0.03) - 40

    enough = agreement.evidence(400, 360)
    assert enough.sufficient and enough.reason == ""
    assert enough.more_for_5 == 0

    assert agreement.evidence(0, 0).reason == "no pairs"
    with pytest.raises(ValueError):
        agreement.labels_needed(1.2)


# --- the report on one slice -------------------------------------------------------------------------


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize(("n", "error_rate", "seed"), [(1, 0.0, 0), (2, 0.5, 1), (25, 0.2, 2), (300, 0.3, 3)])
def test_report_equals_scikit_learn_on_three_scales(scale, n, error_rate, seed):
    labels = SCALES[scale]
    gold, judge = random_pairs(labels, n, error_rate=error_rate, seed=seed)
    report = classification.classification_report(gold, judge, labels=labels, n_boot=200)

    assert report.n == n
    assert report.accuracy.value == pytest.approx(accuracy_score(gold, judge))
    assert report.macro_f1.value == pytest.approx(f1_score(gold, judge, average="macro", zero_division=0))
    per_class = f1_score(gold, judge, labels=labels, average=None, zero_division=0)
    assert [report.per_class_f1[label] for label in labels] == pytest.approx(list(per_class))
    assert report.confusion == confusion_matrix(gold, judge, labels=labels).tolist()
    if len(set(gold) | set(judge)) > 1:
        assert report.kappa.value == pytest.approx(cohen_kappa_score(gold, judge))
    else:
        assert report.kappa.value is None
    low, high = proportion_confint(sum(g == j for g, j in zip(gold, judge, strict=True)), n, method="wilson")
    assert (report.accuracy.low, report.accuracy.high) == pytest.approx((max(0, low), min(1, high)))
    if scale == "binary":
        assert report.kappa_quadratic is None
    elif len(set(gold) | set(judge)) > 1:
        expected = cohen_kappa_score(gold, judge, labels=labels, weights="quadratic")
        assert report.kappa_quadratic.value == pytest.approx(expected)


def test_macro_f1_is_over_the_classes_present_whatever_the_scale_or_other_labels():
    """Another version answering "4", or another dataset's pass/fail, must not move this slice's macro-F1."""
    gold = ["3", "3", "3", "2", "2", "3", "3", "2", "3", "3"]
    judge = ["3", "3", "2", "2", "2", "3", "3", "3", "3", "3"]
    base = classification.classification_report(gold, judge, n_boot=0)
    wide = classification.classification_report(gold, judge, labels=["1", "2", "3", "4", "5"], n_boot=0)
    expected = f1_score(gold, judge, average="macro")
    assert base.macro_f1.value == pytest.approx(expected)
    assert wide.macro_f1.value == pytest.approx(expected)
    assert wide.macro_f1_labels == ["2", "3"]
    assert wide.per_class_f1["1"] == 0.0 and wide.support["5"] == 0
    assert list(wide.per_class_f1) == ["1", "2", "3", "4", "5"]


def test_quadratic_kappa_uses_the_full_scale_and_numeric_order():
    gold = ["1", "1", "3", "3", "5", "5", "1", "5"]
    judge = ["1", "3", "3", "5", "5", "5", "1", "3"]
    scale = ["5", "4", "3", "2", "1"]  # given in any order: weighed in numeric order
    report = classification.classification_report(gold, judge, labels=scale, n_boot=0)
    assert report.labels == ["1", "2", "3", "4", "5"]
    expected = cohen_kappa_score(gold, judge, labels=["1", "2", "3", "4", "5"], weights="quadratic")
    assert report.kappa_quadratic.value == pytest.approx(expected)
    assert report.kappa_quadratic.value != pytest.approx(report.kappa.value)


def test_vectorised_quadratic_kappa_reads_like_scikit_learn():
    labels = ["0", "1", "2", "3", "4"]
    rng = np.random.default_rng(5)
    for _ in range(20):
        gold, judge = random_pairs(labels, int(rng.integers(5, 80)), error_rate=0.4, seed=int(rng.integers(1e6)))
        weights = rng.uniform(0.1, 5, len(gold))
        for w in (None, weights):
            matrix = confusion_matrix(gold, judge, labels=labels, sample_weight=w)
            read = classification.metrics_from_confusion(matrix, quadratic=True)
            expected = cohen_kappa_score(gold, judge, labels=labels, weights="quadratic", sample_weight=w)
            assert float(read["kappa_quadratic"]) == pytest.approx(expected)


def test_adversarial_slices():
    empty = classification.classification_report([], [], labels=["pass", "fail"])
    assert empty.n == 0 and empty.accuracy.value is None and empty.evidence.reason == "no pairs"
    assert empty.as_dict()["accuracy"] == {"value": None, "low": None, "high": None}

    one = classification.classification_report(["pass"], ["fail"], labels=["pass", "fail"])
    assert one.accuracy.value == 0.0 and one.macro_f1.value == 0.0
    assert one.macro_f1.low is None  # one cluster: nothing to resample
    assert one.accuracy.high == pytest.approx(proportion_confint(0, 1, method="wilson")[1])

    single_class = classification.classification_report(["fail"] * 40, ["fail"] * 40, labels=["pass", "fail"])
    assert single_class.kappa.value is None and single_class.macro_f1.value == 1.0
    assert single_class.macro_f1_labels == ["fail"]
    assert single_class.accuracy.low == pytest.approx(proportion_confint(40, 40, method="wilson")[0])

    with pytest.raises(ValueError, match="not in the label set"):
        classification.classification_report(["pass"], ["3"], labels=["pass", "fail"])
    with pytest.raises(ValueError, match="cluster ids"):
        classification.classification_report(["pass"], ["pass"], clusters=[1, 2])


def clustered_pairs(n_conv: int, turns: int, *, seed: int) -> tuple[list[str], list[str], list[int]]:
    """Conversations where the judge is either mostly right or mostly wrong on every turn."""
    rng = np.random.default_rng(seed)
    gold, judge, clusters = [], [], []
    for c in range(n_conv):
        error = 0.7 if rng.random() < 0.3 else 0.05
        for _ in range(turns):
            g = str(rng.choice(["1", "2", "3"]))
            j = str(rng.choice([x for x in ("1", "2", "3") if x != g])) if rng.random() < error else g
            gold.append(g)
            judge.append(j)
            clusters.append(c)
    return gold, judge, clusters


def test_cluster_bootstrap_is_wider_when_errors_cluster_and_identical_without_clusters():
    gold, judge, clusters = clustered_pairs(40, 10, seed=4)
    by_pair = classification.classification_report(gold, judge, n_boot=800, seed=1)
    by_pair_explicit = classification.classification_report(
        gold, judge, clusters=list(range(len(gold))), n_boot=800, seed=1
    )
    by_conv = classification.classification_report(gold, judge, clusters=clusters, n_boot=800, seed=1)
    assert by_pair.macro_f1 == by_pair_explicit.macro_f1
    assert by_conv.clusters == 40 and by_pair.clusters == 400
    assert by_conv.macro_f1.value == by_pair.macro_f1.value
    assert by_conv.macro_f1.half_width > 1.4 * by_pair.macro_f1.half_width
    assert by_conv.kappa.half_width > 1.4 * by_pair.kappa.half_width
    # Accuracy stays Wilson, at the effective size the clustering leaves.
    assert by_conv.accuracy_method == "wilson, effective n"
    assert 40 <= by_conv.effective_n < 400
    p = by_conv.accuracy.value
    low, high = proportion_confint(p * by_conv.effective_n, by_conv.effective_n, method="wilson")
    assert (by_conv.accuracy.low, by_conv.accuracy.high) == pytest.approx((low, high))


def test_effective_n_of_an_all_correct_clustered_slice_is_the_number_of_conversations():
    gold = ["pass"] * 30
    report = classification.classification_report(gold, gold, clusters=[i // 10 for i in range(30)])
    assert report.effective_n == 3
    assert report.accuracy.low == pytest.approx(proportion_confint(3, 3, method="wilson")[0])


def test_weighted_effective_n_matches_the_linearised_variance():
    rng = np.random.default_rng(8)
    right = rng.random(200) < 0.8
    weights = rng.choice([1.0, 4.0, 20.0], 200)
    report = classification.classification_report(
        ["r"] * 200, ["r" if r else "w" for r in right], labels=["r", "w"], weights=weights, n_boot=0
    )
    p = float(np.average(right, weights=weights))
    # Independent reading: the variance of a ratio estimator, n/(n-1) sum(w^2 (y-p)^2) / (sum w)^2.
    v = 200 / 199 * float(np.sum(weights**2 * (right - p) ** 2)) / weights.sum() ** 2
    assert report.accuracy.value == pytest.approx(p)
    assert report.effective_n == pytest.approx(min(200, p * (1 - p) / v))


# --- runs ----------------------------------------------------------------------------------------------


def test_eva_convention_reproduces_eva_faithfulness_figure():
    """EVA: 94, 94 and 97 right out of 137 targets (unparsable answers counted wrong) -> 69.34% +- 1.26%."""
    runs = [RunCounts(137, 94, unresolved=5), RunCounts(137, 94, unresolved=2, failed=1), RunCounts(137, 97)]
    eva = agreement.runs_accuracy(runs, unresolved="wrong")
    assert eva.runs == 3
    assert round(eva.mean * 100, 2) == 69.34 and round(eva.std * 100, 2) == 1.26
    assert eva.std == pytest.approx(np.std([94 / 137, 94 / 137, 97 / 137], ddof=1))

    excluded = agreement.runs_accuracy(runs, unresolved="excluded")
    assert excluded.mean == pytest.approx(np.mean([94 / 132, 94 / 134, 97 / 137]))
    assert excluded.std == pytest.approx(np.std([94 / 132, 94 / 134, 97 / 137], ddof=1))

    assert agreement.run_accuracy(RunCounts(3, 0, unresolved=3)) is None
    assert agreement.run_accuracy(RunCounts(3, 0, unresolved=3), unresolved="wrong") == 0.0
    with pytest.raises(ValueError, match="exceeds"):
        RunCounts(10, 8, unresolved=3)
    with pytest.raises(ValueError, match="unknown convention"):
        agreement.run_accuracy(RunCounts(1, 1), unresolved="dropped")


# --- alpha on weighted 0-100 scores ----------------------------------------------------------------------


def test_interval_alpha_on_weighted_scores_equals_the_krippendorff_package():
    rng = np.random.default_rng(12)
    truth = rng.uniform(20, 95, 150)
    raters = np.vstack([np.round(truth + rng.normal(0, s, 150) * 2) / 2 for s in (0.5, 1.0, 1.5)])
    raters = np.clip(raters, 0, 100)
    raters[1, ::7] = np.nan
    units = [[float(v) for v in raters[:, i] if not math.isnan(v)] for i in range(150)]

    interval = agreement.krippendorff_alpha(units, level="interval")
    assert interval == pytest.approx(krippendorff.alpha(reliability_data=raters, level_of_measurement="interval"))
    assert interval > 0.99
    # The same scores as strings give the same alpha; nominal treats 73.5 vs 74 as a miss.
    as_text = [[f"{v:g}" for v in unit] for unit in units]
    assert agreement.krippendorff_alpha(as_text, level="interval") == pytest.approx(interval)
    nominal = agreement.krippendorff_alpha(units, level="nominal")
    assert nominal == pytest.approx(krippendorff.alpha(reliability_data=raters, level_of_measurement="nominal"))
    assert nominal < 0.5
    with pytest.raises(ValueError, match="numeric labels"):
        agreement.krippendorff_alpha([["pass", "fail"], ["pass", "pass"]], level="interval")


# --- any input ---------------------------------------------------------------------------------------------

pair_lists = st.lists(st.tuples(st.sampled_from(["1", "2", "3"]), st.sampled_from(["1", "2", "3"])), max_size=40)


@settings(max_examples=150, deadline=None)
@given(pairs=pair_lists, weighted=st.booleans(), data=st.data())
def test_any_slice_reads_like_scikit_learn(pairs, weighted, data):
    gold = [g for g, _ in pairs]
    judge = [j for _, j in pairs]
    weights = data.draw(st.lists(st.floats(0.1, 50), min_size=len(pairs), max_size=len(pairs))) if weighted else None
    report = classification.classification_report(gold, judge, labels=["1", "2", "3"], weights=weights, n_boot=50)
    if not pairs:
        assert report.accuracy.value is None
        return
    assert report.accuracy.value == pytest.approx(accuracy_score(gold, judge, sample_weight=weights))
    present = sorted(set(gold) | set(judge))
    assert report.macro_f1.value == pytest.approx(
        f1_score(gold, judge, labels=present, average="macro", sample_weight=weights, zero_division=0)
    )
    assert [report.per_class_f1[x] for x in "123"] == pytest.approx(
        list(f1_score(gold, judge, labels=["1", "2", "3"], average=None, sample_weight=weights, zero_division=0))
    )
    if len(present) > 1:
        assert report.kappa.value == pytest.approx(cohen_kappa_score(gold, judge, sample_weight=weights), abs=1e-9)
        expected = cohen_kappa_score(gold, judge, labels=["1", "2", "3"], weights="quadratic", sample_weight=weights)
        if math.isnan(expected):
            assert report.kappa_quadratic.value is None
        else:
            assert report.kappa_quadratic.value == pytest.approx(expected, abs=1e-9)
    for estimate in (report.accuracy, report.macro_f1, report.kappa):
        if estimate.low is not None:
            assert estimate.low <= estimate.high
            assert 0 <= report.accuracy.low <= report.accuracy.value <= report.accuracy.high <= 1


def test_both_ways_of_drawing_resamples_have_the_spread_theory_gives():
    """Few kinds of cluster: counts per kind are drawn; many kinds: clusters are drawn. Same distribution."""
    rng = np.random.default_rng(17)
    n = 600
    gold = rng.integers(0, 3, n)
    judge = np.where(rng.random(n) < 0.8, gold, (gold + 1) % 3)
    right = (gold == judge).astype(float)
    p = right.mean()

    pairs = classification._bootstrap_confusions(gold, judge, np.ones(n), 3, 4000, 1)  # <= 9 kinds
    accuracy = np.trace(pairs, axis1=1, axis2=2) / n
    assert accuracy.std() == pytest.approx(math.sqrt(p * (1 - p) / n), rel=0.06)

    cluster = np.repeat(np.arange(150), 4)  # 150 conversations of 4 turns: many distinct kinds
    conv = classification._bootstrap_confusions(gold, judge, np.ones(n), 3, 4000, 2, cluster, 150)
    accuracy = np.trace(conv, axis1=1, axis2=2) / n
    per_cluster = np.bincount(cluster, weights=right - p)
    assert accuracy.std() == pytest.approx(math.sqrt((per_cluster**2).sum()) / n, rel=0.08)
    assert conv.sum(axis=(1, 2)) == pytest.approx(np.full(4000, n))


def test_labels_needed_scale_with_the_design_effect_of_clustered_pairs():
    plain = agreement.evidence(100, 80)
    clustered = agreement.evidence(100, 80, effective_n=25)  # design effect 4
    assert clustered.needed_5 == math.ceil(agreement.labels_needed(0.8, 0.05) * 4)
    assert clustered.more_for_5 == clustered.needed_5 - 100
    assert plain.needed_5 == agreement.labels_needed(0.8, 0.05)
    low, high = proportion_confint(20, 25, method="wilson")
    assert (clustered.estimate.low, clustered.estimate.high) == pytest.approx((low, high))
    assert plain.sufficient and not clustered.sufficient  # +-7.8 points at n = 100, +-15 at an effective 25
    gold, judge, clusters = clustered_pairs(40, 10, seed=4)
    report = classification.classification_report(gold, judge, clusters=clusters, n_boot=0)
    assert report.evidence.estimate == report.accuracy
    assert report.evidence.n == 400


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_weights_must_be_finite_and_positive(bad):
    with pytest.raises(ValueError, match="finite and positive"):
        classification.classification_report(["pass", "fail"], ["pass", "pass"], weights=[1.0, bad])


def test_bootstrap_intervals_are_read_off_the_replicates_as_documented():
    gold, judge, clusters = clustered_pairs(30, 6, seed=9)
    labels = ["1", "2", "3"]
    index = {label: i for i, label in enumerate(labels)}
    g = np.array([index[x] for x in gold])
    j = np.array([index[x] for x in judge])
    codes = np.array(clusters)
    replicates = classification.metrics_from_confusion(
        classification._bootstrap_confusions(g, j, np.ones(len(g)), 3, 500, 3, codes, 30), quadratic=True
    )
    pct = classification.classification_report(
        gold, judge, labels=labels, clusters=clusters, n_boot=500, seed=3, bootstrap_interval="percentile"
    )
    assert (pct.macro_f1.low, pct.macro_f1.high) == pytest.approx(
        tuple(np.percentile(replicates["macro_f1"], [2.5, 97.5]))
    )
    assert (pct.kappa.low, pct.kappa.high) == pytest.approx(tuple(np.percentile(replicates["kappa"], [2.5, 97.5])))

    report = classification.classification_report(gold, judge, labels=labels, clusters=clusters, n_boot=500, seed=3)
    f1, sd = report.macro_f1.value, replicates["macro_f1"].std(ddof=1)
    n_eff = f1 * (1 - f1) / sd**2
    assert (report.macro_f1.low, report.macro_f1.high) == pytest.approx(
        proportion_confint(f1 * n_eff, n_eff, method="wilson")
    )
    k, sd = (report.kappa.value + 1) / 2, replicates["kappa"].std(ddof=1) / 2
    n_eff = k * (1 - k) / sd**2
    low, high = proportion_confint(k * n_eff, n_eff, method="wilson")
    assert (report.kappa.low, report.kappa.high) == pytest.approx((2 * low - 1, 2 * high - 1))


def test_effective_size_at_the_edges():
    assert agreement.effective_size(0.8, 0.0016, 100) == pytest.approx(100)  # 0.16 / 0.0016
    assert agreement.effective_size(0.8, 0.0, 37) == 37
    assert agreement.effective_size(1.0, 0.01, 50) == pytest.approx(25)  # 0.25 / 0.01
    assert agreement.effective_size(1.0, 0.0001, 50) == 50
    assert agreement.effective_size(0.5, 10.0, 50) == 1.0
    assert agreement.evidence(10, 10, effective_n=0.0).estimate == agreement.proportion_interval(10, 10)

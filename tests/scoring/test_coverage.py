"""Do the 95% intervals cover a known truth about 95% of the time? Seeded simulations, a few hundred draws each.

A band of 0.91-0.99 over a few hundred draws allows for Monte Carlo error (sd ~0.012 at 300 draws)
while catching the failures these intervals replaced: a percentile bootstrap collapsing to [1, 1]
(coverage 0.59 at n = 30, accuracy 0.97), turns resampled as if independent (0.75 when errors cluster
by conversation), and a QA estimate that ignores its weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from scoring import agreement, classification
from scoring.estimates import SampleItem, prediction_powered_rate, proportion_estimate, qa_sample

BAND = (0.91, 0.99)


def covers(low: float | None, high: float | None, truth: float) -> bool:
    return low is not None and high is not None and low <= truth <= high


# --- Wilson for accuracy -----------------------------------------------------------------------------------


def exact_coverage(interval, n: int, p: float) -> float:
    """Coverage summed over every possible count k, weighted by its binomial probability."""
    return float(sum(binom.pmf(k, n, p) for k in range(n + 1) if covers(*interval(k, n), p)))


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    e = agreement.proportion_interval(k, n)
    return e.low, e.high


def percentile_bootstrap(k: int, n: int) -> tuple[float, float]:
    """The old interval with infinitely many resamples: the 2.5% and 97.5% quantiles of Binomial(n, k/n) / n."""
    return binom.ppf(0.025, n, k / n) / n, binom.ppf(0.975, n, k / n) / n


def test_wilson_covers_at_n_30_and_accuracy_097_where_the_percentile_bootstrap_collapsed():
    assert exact_coverage(wilson, 30, 0.97) >= 0.9
    assert exact_coverage(percentile_bootstrap, 30, 0.97) < 0.7  # the replaced interval: [1, 1] when all right


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.97])
@pytest.mark.parametrize("n", [12, 30, 100])
def test_wilson_accuracy_interval_covers_about_95_percent(n, p):
    assert 0.90 <= exact_coverage(wilson, n, p) <= 0.99


def test_report_accuracy_interval_covers_in_simulation():
    rng = np.random.default_rng(30)
    hits = 0
    for _ in range(300):
        right = rng.random(30) < 0.97
        gold = ["pass"] * 30
        judge = ["pass" if r else "fail" for r in right]
        report = classification.classification_report(gold, judge, labels=["pass", "fail"], n_boot=0)
        hits += covers(report.accuracy.low, report.accuracy.high, 0.97)
    assert hits / 300 >= 0.9


# --- the cluster bootstrap ---------------------------------------------------------------------------------

HARD_SHARE, HARD_ERROR, EASY_ERROR = 0.3, 0.5, 0.05
MEAN_ERROR = HARD_SHARE * HARD_ERROR + (1 - HARD_SHARE) * EASY_ERROR
# Gold uniform over three classes, errors uniform over the two others: the population confusion matrix
# is symmetric, so every class's F1 (and macro-F1) is 1 - error and kappa is (1 - error - 1/3) / (2/3).
TRUE_MACRO_F1 = 1 - MEAN_ERROR
TRUE_KAPPA = (1 - MEAN_ERROR - 1 / 3) / (2 / 3)


def clustered_sample(rng: np.random.Generator, conversations: int, turns: int):
    hard = np.repeat(rng.random(conversations) < HARD_SHARE, turns)
    gold = rng.integers(0, 3, conversations * turns)
    wrong = rng.random(conversations * turns) < np.where(hard, HARD_ERROR, EASY_ERROR)
    judge = np.where(wrong, (gold + rng.integers(1, 3, gold.size)) % 3, gold)
    clusters = np.repeat(np.arange(conversations), turns)
    return [str(g) for g in gold], [str(j) for j in judge], list(clusters)


def test_cluster_bootstrap_covers_when_errors_cluster_by_conversation():
    rng = np.random.default_rng(11)
    draws = 200
    hits = {"macro_f1": 0, "kappa": 0, "accuracy": 0, "pair_macro_f1": 0}
    for seed in range(draws):
        gold, judge, clusters = clustered_sample(rng, 60, 8)
        by_conv = classification.classification_report(gold, judge, clusters=clusters, n_boot=300, seed=seed)
        by_pair = classification.classification_report(gold, judge, n_boot=300, seed=seed)
        hits["macro_f1"] += covers(by_conv.macro_f1.low, by_conv.macro_f1.high, TRUE_MACRO_F1)
        hits["kappa"] += covers(by_conv.kappa.low, by_conv.kappa.high, TRUE_KAPPA)
        hits["accuracy"] += covers(by_conv.accuracy.low, by_conv.accuracy.high, 1 - MEAN_ERROR)
        hits["pair_macro_f1"] += covers(by_pair.macro_f1.low, by_pair.macro_f1.high, TRUE_MACRO_F1)
    rates = {name: count / draws for name, count in hits.items()}
    for name in ("macro_f1", "kappa", "accuracy"):
        assert BAND[0] <= rates[name] <= BAND[1], rates
    assert rates["pair_macro_f1"] < 0.88, rates  # resampling turns as if independent under-covers


# --- the QA sample: Hajek ------------------------------------------------------------------------------------


def test_hajek_qa_interval_covers_the_population_accuracy():
    """Three languages of different size and accuracy, sampled at different rates, 10% of gold missing."""
    rng = np.random.default_rng(5)
    languages = ["fr"] * 2000 + ["ja"] * 800 + ["hi"] * 200
    accuracy = {"fr": 0.92, "ja": 0.75, "hi": 0.55}
    rates = {"fr": 0.02, "ja": 0.08, "hi": 0.3}
    keys = list(range(len(languages)))
    chance = np.array([accuracy[lang] for lang in languages])
    draws, hits, hits_unweighted = 300, 0, 0
    for seed in range(draws):
        right = rng.random(len(languages)) < chance
        truth = float(right.mean())
        items = [
            SampleItem(languages[k], p, None if rng.random() < 0.1 else bool(right[k]))
            for k, p in qa_sample(keys, languages, rates, seed=seed)
        ]
        estimate = proportion_estimate(items)
        hits += covers(estimate.low, estimate.high, truth)
        labelled = [i.value for i in items if i.value is not None]
        plain = agreement.proportion_interval(sum(labelled), len(labelled))
        hits_unweighted += covers(plain.low, plain.high, truth)
    assert BAND[0] <= hits / draws <= BAND[1]
    assert hits_unweighted / draws < 0.5  # the unweighted mean over-represents the small, hard stratum


# --- prediction-powered inference ---------------------------------------------------------------------------


def simulated_judge(rng: np.random.Generator, true_rate: float, size: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """True passes at `true_rate`, and a judge that fails 5% of the passes and passes 30% of the fails."""
    truth = rng.random(size) < true_rate
    return truth, truth ^ np.where(truth, rng.random(size) < 0.05, rng.random(size) < 0.3)


def test_prediction_powered_interval_covers_the_true_pass_rate():
    rng = np.random.default_rng(21)
    true_rate, draws, hits, narrower = 0.62, 300, 0, 0
    for _ in range(draws):
        truth, judge = simulated_judge(rng, true_rate)
        labelled = rng.random(2000) < 0.08
        result = prediction_powered_rate(list(truth[labelled]), list(judge[labelled]), list(judge[~labelled]))
        hits += covers(result.ppi.low, result.ppi.high, true_rate)
        narrower += result.width_ratio is not None and result.width_ratio < 1
    assert BAND[0] <= hits / draws <= BAND[1]
    assert narrower / draws > 0.9


def test_poisson_sample_intervals_cover_for_both_estimators():
    """Targets drawn one by one with unequal probabilities, more often where the judge is weaker."""
    rng = np.random.default_rng(3)
    size = 4000
    x = rng.random(size)
    probability = 0.02 + 0.15 * x
    chance_right = 0.95 - 0.5 * x
    draws = 300
    hits = {"hajek": 0, "horvitz-thompson": 0}
    for _ in range(draws):
        right = rng.random(size) < chance_right
        truth = float(right.mean())
        drawn = np.flatnonzero(rng.random(size) < probability)
        items = [SampleItem("all", float(probability[i]), bool(right[i])) for i in drawn]
        for estimator in hits:
            population = size if estimator == "horvitz-thompson" else None
            result = proportion_estimate(items, estimator=estimator, population=population, design="poisson")
            hits[estimator] += covers(result.low, result.high, truth)
    for estimator, count in hits.items():
        assert BAND[0] <= count / draws <= BAND[1], (estimator, count / draws)


def test_prediction_powered_interval_covers_on_a_small_sample_near_the_edge():
    """60 labels, a pass rate of 0.95: ppi_py's normal interval under-covers; Wilson at its effective n does not."""
    rng = np.random.default_rng(8)
    true_rate, draws, hits, hits_clt = 0.95, 300, 0, 0
    for _ in range(draws):
        truth, judge = simulated_judge(rng, true_rate)
        order = rng.permutation(2000)
        labelled, unlabelled = order[:60], order[60:]
        result = prediction_powered_rate(list(truth[labelled]), list(judge[labelled]), list(judge[unlabelled]))
        hits += covers(result.ppi.low, result.ppi.high, true_rate)
        hits_clt += covers(result.ppi_clt.low, result.ppi_clt.high, true_rate)
    assert BAND[0] <= hits / draws <= BAND[1]
    assert hits_clt / draws < 0.9


def test_bootstrap_wilson_interval_holds_coverage_near_one_where_percentiles_fall_short():
    """20 conversations of 5 turns, macro-F1 about 0.95: Wilson at the bootstrap's effective size covers."""
    rng = np.random.default_rng(1)
    hard_share, hard_error, easy_error = 0.1, 0.3, 0.02
    error = hard_share * hard_error + (1 - hard_share) * easy_error
    truth = 1 - error
    draws, hits, hits_percentile = 250, 0, 0
    for seed in range(draws):
        hard = np.repeat(rng.random(20) < hard_share, 5)
        gold = rng.integers(0, 3, 100)
        wrong = rng.random(100) < np.where(hard, hard_error, easy_error)
        judge = np.where(wrong, (gold + rng.integers(1, 3, 100)) % 3, gold)
        args = ([str(g) for g in gold], [str(j) for j in judge])
        clusters = list(np.repeat(np.arange(20), 5))
        wilson = classification.classification_report(*args, clusters=clusters, n_boot=400, seed=seed)
        percentile = classification.classification_report(
            *args, clusters=clusters, n_boot=400, seed=seed, bootstrap_interval="percentile"
        )
        hits += covers(wilson.macro_f1.low, wilson.macro_f1.high, truth)
        hits_percentile += covers(percentile.macro_f1.low, percentile.macro_f1.high, truth)
    assert BAND[0] <= hits / draws <= BAND[1]
    assert hits_percentile < hits

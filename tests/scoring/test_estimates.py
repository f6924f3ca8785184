"""QA sampling, design-based estimates and prediction-powered rates, checked against statsmodels and ppi_py."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from scoring.estimates import SampleItem, prediction_powered_rate, proportion_estimate, qa_sample

LANGUAGES = ["fr"] * 600 + ["ja"] * 300 + ["hi"] * 97


def population_keys() -> list[str]:
    return [f"turn-{i}" for i in range(len(LANGUAGES))]


# --- the draw ----------------------------------------------------------------------------------------------


def test_qa_sample_is_stratified_with_known_probabilities():
    keys = population_keys()
    sample = qa_sample(keys, LANGUAGES, 0.1, seed=7)
    drawn = Counter(LANGUAGES[keys.index(k)] for k, _ in sample)
    assert drawn == {"fr": 60, "ja": 30, "hi": 10}  # ceil(0.1 * 97) = 10
    for key, probability in sample:
        language = LANGUAGES[keys.index(key)]
        assert probability == pytest.approx(drawn[language] / LANGUAGES.count(language))
    # In input order, reproducible for a seed, different for another.
    assert [k for k, _ in sample] == sorted((k for k, _ in sample), key=keys.index)
    assert qa_sample(keys, LANGUAGES, 0.1, seed=7) == sample
    assert qa_sample(keys, LANGUAGES, 0.1, seed=8) != sample


def test_qa_sample_rates_per_stratum_and_minimum():
    keys = population_keys()
    sample = qa_sample(keys, LANGUAGES, {"fr": 0.05, "ja": 0.5}, seed="qa", min_per_stratum=20)
    drawn = Counter(LANGUAGES[keys.index(k)] for k, _ in sample)
    assert drawn == {"fr": 30, "ja": 150}  # hi has no rate: not sampled, whatever the minimum
    small = qa_sample(["a", "b", "c"], ["x", "x", "x"], 0.1, seed=1, min_per_stratum=5)
    assert [p for _, p in small] == [1.0, 1.0, 1.0]


def test_qa_sample_is_nested_as_a_stratum_grows():
    keys = population_keys()
    before = {k for k, _ in qa_sample(keys[:600], LANGUAGES[:600], 0.1, seed=3)}
    after = {k for k, _ in qa_sample([*keys[:600], "turn-new"], [*LANGUAGES[:600], "fr"], 0.1, seed=3)}
    assert before <= after  # 60 -> 61 drawn: the first 60 stay


def test_qa_sample_draws_uniformly():
    """Over many seeds every key of a stratum is drawn about rate of the time (chi-square on counts)."""
    from scipy.stats import chisquare

    keys = [f"k{i}" for i in range(50)]
    counts = Counter(k for seed in range(2000) for k, _ in qa_sample(keys, ["x"] * 50, 0.2, seed=seed))
    observed = [counts[k] for k in keys]
    assert sum(observed) == 2000 * 10
    assert chisquare(observed).pvalue > 0.001


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((["a", "a"], ["x", "x"], 0.5, 1), "unique"),
        ((["a"], ["x", "y"], 0.5, 1), "strata for"),
        ((["a"], ["x"], 1.5, 1), "not between 0 and 1"),
        ((["a"], ["x"], {"x": -0.1}, 1), "not between 0 and 1"),
    ],
)
def test_qa_sample_refuses_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        qa_sample(*args)


# --- estimates -----------------------------------------------------------------------------------------------


def stratified_items(seed: int, *, missing_rate: float = 0.0) -> tuple[list[SampleItem], dict[str, float]]:
    rng = np.random.default_rng(seed)
    keys = population_keys()
    accuracy = {"fr": 0.9, "ja": 0.7, "hi": 0.5}
    right = {k: bool(rng.random() < accuracy[lang]) for k, lang in zip(keys, LANGUAGES, strict=True)}
    items = []
    for key, probability in qa_sample(keys, LANGUAGES, {"fr": 0.05, "ja": 0.2, "hi": 0.5}, seed=seed):
        value = None if rng.random() < missing_rate else right[key]
        items.append(SampleItem(LANGUAGES[keys.index(key)], probability, value))
    return items, accuracy


def cochran(items: list[SampleItem]) -> tuple[float, float]:
    """Textbook stratified mean and variance: sum W_h ybar_h, sum W_h^2 (1 - f_h) s_h^2 / n_h."""
    sizes = Counter(LANGUAGES)
    total = sum(sizes.values())
    mean = variance = 0.0
    for stratum, size in sizes.items():
        y = np.array([float(i.value) for i in items if i.stratum == stratum and i.value is not None])
        share = size / total
        mean += share * y.mean()
        variance += share**2 * (1 - len(y) / size) * y.var(ddof=1) / len(y)
    return mean, variance


def test_hajek_and_horvitz_thompson_equal_the_stratified_textbook_estimate():
    items, _ = stratified_items(1)
    mean, variance = cochran(items)
    for estimator in ("hajek", "horvitz-thompson"):
        result = proportion_estimate(items, estimator=estimator)
        assert result.estimator == estimator
        assert result.value == pytest.approx(mean)
        assert result.se == pytest.approx(math.sqrt(variance))
        assert result.population == pytest.approx(len(LANGUAGES))
        n_eff = mean * (1 - mean) / variance
        low, high = proportion_confint(mean * n_eff, n_eff, method="wilson")
        assert (result.low, result.high) == pytest.approx((low, high))
    # The Hajek point estimate is statsmodels' weighted mean with weights 1 / probability.
    weights = [1 / i.probability for i in items]
    assert proportion_estimate(items).value == pytest.approx(
        DescrStatsW([float(i.value) for i in items], weights=weights).mean
    )


def test_unequal_probabilities_within_a_stratum_separate_the_two_estimators():
    rng = np.random.default_rng(4)
    probabilities = rng.uniform(0.05, 0.6, 300)
    values = rng.random(300) < 0.3 + probabilities  # harder-to-draw targets are less often right
    items = [SampleItem("all", float(p), bool(v)) for p, v in zip(probabilities, values, strict=True)]
    w = 1 / probabilities
    hajek = proportion_estimate(items)
    ht = proportion_estimate(items, estimator="horvitz-thompson", population=900)
    assert hajek.value == pytest.approx(float(np.sum(w * values) / np.sum(w)))
    assert ht.value == pytest.approx(float(np.sum(w * values) / 900))
    assert ht.population == 900 and hajek.population == pytest.approx(float(w.sum()))


def test_missing_gold_is_counted_and_reweighted_within_its_stratum():
    items, _ = stratified_items(2, missing_rate=0.25)
    result = proportion_estimate(items)
    missing = sum(1 for i in items if i.value is None)
    assert result.missing == missing and result.n_sampled == len(items) == result.n_labelled + missing
    assert result.missing_share == pytest.approx(missing / len(items))
    assert result.as_dict()["missing"] == missing
    # With labelled items standing for the missing ones of their stratum, it is the textbook estimate
    # on the labelled items with each stratum's full population.
    mean, variance = cochran(items)
    assert result.value == pytest.approx(mean)
    assert result.se == pytest.approx(math.sqrt(variance))


def test_estimates_of_degenerate_samples():
    nothing = proportion_estimate([SampleItem("fr", 0.1, None)] * 4)
    assert nothing.value is None and nothing.missing == 4 and nothing.n_labelled == 0
    perfect = proportion_estimate([SampleItem("fr", 0.1, True)] * 12)
    assert perfect.value == 1.0 and perfect.effective_n == 12
    assert perfect.low == pytest.approx(proportion_confint(12, 12, method="wilson")[0])
    with pytest.raises(ValueError, match="no labelled item"):
        proportion_estimate([SampleItem("fr", 0.1, True), SampleItem("ja", 0.1, None)], estimator="horvitz-thompson")
    with pytest.raises(ValueError, match="inclusion probability"):
        proportion_estimate([SampleItem("fr", 0.0, True)])
    with pytest.raises(ValueError, match="not true, false or None"):
        proportion_estimate([SampleItem("fr", 0.5, 1)])
    with pytest.raises(ValueError, match="unknown estimator"):
        proportion_estimate([], estimator="mean")


# --- prediction-powered -----------------------------------------------------------------------------------


def judged_population(seed: int, *, n: int = 3000, labelled: int = 200):
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.62
    flips = np.where(truth, rng.random(n) < 0.05, rng.random(n) < 0.3)  # a judge that passes too easily
    judge = truth ^ flips
    order = rng.permutation(n)
    lab, unlab = order[:labelled], order[labelled:]
    return truth, judge, lab, unlab


def test_prediction_powered_rate_equals_ppi_py_beside_raw_and_human_only():
    truth, judge, lab, unlab = judged_population(3)
    result = prediction_powered_rate(list(truth[lab]), list(judge[lab]), list(judge[unlab]))
    y, yhat, yhat_u = truth[lab].astype(float), judge[lab].astype(float), judge[unlab].astype(float)

    assert result.ppi.value == pytest.approx(float(ppi_mean_pointestimate(y, yhat, yhat_u)[0]))
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
    assert (result.ppi_clt.low, result.ppi_clt.high) == pytest.approx((float(low[0]), float(high[0])))
    # The reported interval is Wilson at the effective size ppi_py's variance gives.
    se = (high[0] - low[0]) / (2 * norm.ppf(0.975))
    p = result.ppi.value
    n_eff = p * (1 - p) / se**2
    assert result.effective_n == pytest.approx(n_eff)
    assert (result.ppi.low, result.ppi.high) == pytest.approx(proportion_confint(p * n_eff, n_eff, method="wilson"))
    assert result.judge_raw == pytest.approx(judge.mean())
    wl, wh = proportion_confint(int(truth[lab].sum()), len(lab), method="wilson")
    assert (result.human.low, result.human.high) == pytest.approx((wl, wh))
    assert result.human.value == pytest.approx(truth[lab].mean())
    assert (result.n_labelled, result.n_unlabelled) == (200, 2800)
    assert result.width_ratio == pytest.approx((result.ppi.high - result.ppi.low) / (wh - wl))
    # The judge's own rate is far off the truth; the corrected one is not, and is narrower than humans alone.
    assert result.judge_raw - truth.mean() > 0.05
    assert abs(result.ppi.value - truth.mean()) < 0.06
    assert result.width_ratio < 1
    assert set(result.as_dict()) >= {"ppi", "human", "judge_raw", "n_labelled", "n_unlabelled", "width_ratio"}


def test_prediction_powered_rate_degenerate_and_refused_input():
    constant = prediction_powered_rate([True] * 30, [True] * 30, [True] * 500)
    # No spread anywhere: not [1, 1], but Wilson at the labelled count, as for humans alone.
    assert constant.ppi.value == 1.0 and constant.ppi_clt.low == constant.ppi_clt.high == 1.0
    assert (constant.ppi.low, constant.ppi.high) == pytest.approx((constant.human.low, constant.human.high))
    assert constant.width_ratio == pytest.approx(1.0)
    assert "lambda = 1" in constant.method
    steady_judge = prediction_powered_rate([True] * 20 + [False] * 10, [True] * 30, [True] * 500)
    assert steady_judge.ppi.value == pytest.approx(20 / 30)
    low, high = ppi_mean_ci(np.r_[np.ones(20), np.zeros(10)], np.ones(30), np.ones(500), alpha=0.05, lam=1)
    assert (steady_judge.ppi_clt.low, steady_judge.ppi_clt.high) == pytest.approx((float(low[0]), float(high[0])))
    assert constant.human.low == pytest.approx(proportion_confint(30, 30, method="wilson")[0])
    one = prediction_powered_rate([True], [False], [True, False])
    assert one.ppi.value is None and one.human.value == 1.0 and one.judge_raw == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="not true or false"):
        prediction_powered_rate([True, None], [True, True], [True])
    with pytest.raises(ValueError, match="human labels for"):
        prediction_powered_rate([True], [True, False], [True])


def test_a_weighted_estimate_says_whether_it_is_evidence():
    items, _ = stratified_items(1)
    result = proportion_estimate(items)
    ev = result.evidence
    assert ev.n == result.n_labelled
    assert (ev.estimate.low, ev.estimate.high) == pytest.approx((result.low, result.high))
    assert ev.needed_5 is not None and result.as_dict()["evidence"]["labels_needed_5"] == ev.needed_5
    assert proportion_estimate([SampleItem("fr", 0.5, None)]).evidence.reason == "no pairs"


def test_poisson_design_variance_is_the_textbook_one():
    rng = np.random.default_rng(6)
    probabilities = rng.uniform(0.05, 0.5, 200)
    values = rng.random(200) < 0.7
    items = [SampleItem("all", float(p), bool(v)) for p, v in zip(probabilities, values, strict=True)]
    y, pi = values.astype(float), probabilities
    ht = proportion_estimate(items, estimator="horvitz-thompson", population=1000, design="poisson")
    assert ht.design == "poisson"
    assert ht.se == pytest.approx(math.sqrt(np.sum((1 - pi) * (y / pi) ** 2)) / 1000)
    hajek = proportion_estimate(items, design="poisson")
    n_hat = np.sum(1 / pi)
    p = np.sum(y / pi) / n_hat
    assert hajek.se == pytest.approx(math.sqrt(np.sum((1 - pi) * ((y - p) / pi) ** 2)) / n_hat)
    with pytest.raises(ValueError, match="unknown design"):
        proportion_estimate(items, design="cluster")


def test_a_stratum_with_one_labelled_item_adds_the_largest_variance_not_none():
    items = [SampleItem("fr", 0.1, v) for v in [True] * 15 + [False] * 5] + [SampleItem("hi", 0.05, True)]
    result = proportion_estimate(items)
    fr = np.array([1.0] * 15 + [0.0] * 5)
    n_fr, n_hi = 20 / 0.1, 1 / 0.05
    total = n_fr + n_hi
    expected = (n_fr / total) ** 2 * (1 - 0.1) * fr.var(ddof=1) / 20 + (n_hi / total) ** 2 * (1 - 0.05) * 0.25
    assert result.value == pytest.approx((15 / 20 * n_fr + n_hi) / total)
    assert result.se == pytest.approx(math.sqrt(expected))


def test_an_all_right_sample_with_uncertain_weights_keeps_an_interval_and_its_evidence():
    """All labelled items right, one stratum with a single item: p = 1 yet the variance is not 0."""
    items = [SampleItem("fr", 0.1, True)] * 20 + [SampleItem("hi", 0.05, True)]
    result = proportion_estimate(items)
    assert result.value == 1.0 and result.se > 0
    assert result.effective_n == pytest.approx(min(21, 0.25 / result.se**2))
    low, _ = proportion_confint(result.effective_n, result.effective_n, method="wilson")
    assert result.low == pytest.approx(low) and result.low < 1
    assert result.as_dict()["evidence"]["sufficient"] is False  # 21 labels: below the floor
    assert result.evidence.estimate.low == pytest.approx(result.low)

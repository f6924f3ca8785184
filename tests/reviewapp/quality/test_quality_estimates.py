"""The QA-sample and prediction-powered figures of the quality selectors, checked against ppi-python and
statsmodels directly on the arrays the test wrote."""

import random

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

from reviewapp.models import GoldLabel
from reviewapp.quality.selectors import quality
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def sampled():
    """60 French turns a binary judge scored; a random 20 of them are the QA sample with gold (weight 3)."""
    rng = random.Random(4)
    judge = factories.binary_judge()
    turns = factories.agent_turns("calls", 60)
    truth = [rng.random() < 0.7 for _ in turns]
    judged = [t if rng.random() < 0.8 else not t for t in truth]
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v1"), turns, judged)
    qa = sorted(rng.sample(range(60), 20))
    factories.gold(judge, [turns[i] for i in qa], [truth[i] for i in qa])
    for i in qa:
        factories.item(judge, turns[i], status="closed", reasons=["qa_sample"], weight=3.0)
    # Two more QA items still wait for gold.
    rest = [i for i in range(60) if i not in qa]
    for i in rest[:2]:
        factories.item(judge, turns[i], status="open", reasons=["qa_sample"], weight=3.0)
    return judge, truth, judged, qa, rest[:2]


def test_qa_estimate_is_hajek_and_counts_the_missing_gold(sampled):
    judge, truth, judged, qa, _ = sampled
    selected = quality.judge_quality(judge=judge, n_boot=0).selected
    right = [truth[i] == judged[i] for i in qa]
    assert selected.qa.sampled == 22 and selected.qa.with_gold == 20 and selected.qa.missing == 2
    # Equal weights in one language: the Hajek estimate is the labelled items' share right.
    assert selected.qa.accuracy.value == pytest.approx(sum(right) / 20)
    assert selected.qa.accuracy.low < sum(right) / 20 < selected.qa.accuracy.high
    assert selected.as_dict()["qa_sample"]["missing"] == 2


def test_prediction_powered_pass_rate_equals_ppi_python(sampled):
    judge, truth, judged, qa, _ = sampled
    (row,) = quality.judge_quality(judge=judge, n_boot=0).selected.pass_rates
    y = np.array([truth[i] for i in qa], dtype=float)
    yhat = np.array([judged[i] for i in qa], dtype=float)
    unlabelled = np.array([judged[i] for i in range(60) if i not in qa], dtype=float)
    low, high = ppi_mean_ci(y, yhat, unlabelled, alpha=0.05)
    assert row.language == "fr" and row.n_judged == 60 and row.n_labelled == 20
    assert row.ppi.value == pytest.approx(float(np.ravel(ppi_mean_pointestimate(y, yhat, unlabelled))[0]))
    # The interval is Wilson at the effective size of ppi_py's variance (its normal interval under-covers
    # near 0 or 1 on small labelled samples).
    se = (float(np.ravel(high)[0]) - float(np.ravel(low)[0])) / (2 * norm.ppf(0.975))
    p = row.ppi.value
    n_eff = p * (1 - p) / se**2
    assert (row.ppi.low, row.ppi.high) == pytest.approx(proportion_confint(p * n_eff, n_eff, method="wilson"))
    raw_low, raw_high = proportion_confint(sum(judged), 60, method="wilson")
    assert (row.raw.value, row.raw.low, row.raw.high) == pytest.approx((sum(judged) / 60, raw_low, raw_high))
    human_low, human_high = proportion_confint(int(y.sum()), 20, method="wilson")
    assert (row.human.value, row.human.low, row.human.high) == pytest.approx((y.mean(), human_low, human_high))


def test_an_ordinal_version_without_a_pass_threshold_has_no_pass_rate_and_says_why(sampled):
    judge, *_ = sampled
    GoldLabel.objects.all().delete()
    judge.scale, judge.scale_min, judge.scale_max = "ordinal", 1, 3
    judge.save()
    selected = quality.judge_quality(judge=judge, n_boot=0).selected
    assert selected.pass_rates == [] and "pass threshold" in selected.pass_rates_note


def test_an_all_correct_slice_of_twelve_gets_an_interval_well_below_one():
    from statsmodels.stats.proportion import proportion_confint

    judge = factories.binary_judge()
    turns = factories.agent_turns("perfect", 12)
    values = [i % 3 != 0 for i in range(12)]
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v1"), turns, values)
    factories.gold(judge, turns, values)
    accuracy = quality.judge_quality(judge=judge, n_boot=200).selected.overall.accuracy
    # One conversation of twelve turns: its effective size is below 12, so the interval is wider still.
    low_at_12, _ = proportion_confint(12, 12, method="wilson")
    assert accuracy.value == 1.0 and accuracy.high == 1.0
    assert accuracy.low <= low_at_12 < 0.8


def test_a_weighted_judge_is_scored_on_pass_fail_and_its_sub_scores_are_compared_apart(client, make_user):
    from reviewapp.models import Judge, Role

    judge = Judge.objects.create(slug="clarity", scale=Judge.Scale.WEIGHTED, scale_min=0, scale_max=100)
    turns = factories.agent_turns("weighted", 5)
    passed = [True, True, False, True, False]
    judged_scores = [{"pace": 73.5, "tone": 80}, {"pace": 60, "tone": 90}, {"pace": 20, "tone": 40},
                     {"pace": 88, "tone": 70}, {"pace": 35, "tone": 55}]  # fmt: skip
    gold_scores = [{"pace": 74, "tone": 82}, {"pace": 65, "tone": 85}, {"pace": 30, "tone": 40},
                   {"pace": 90, "tone": 60}, {"pace": 30, "tone": 50}]  # fmt: skip
    version = factories.version(judge, "v1")
    for verdict, scores in zip(
        factories.verdicts(factories.sweep_for(turns), version, turns, passed), judged_scores, strict=True
    ):
        verdict.sub_scores = scores
        verdict.rating = 70.0
        verdict.save()
    for label, scores in zip(factories.gold(judge, turns, passed), gold_scores, strict=True):
        label.metadata = {"sub_scores": scores}
        label.save()
    selected = quality.judge_quality(judge=judge, n_boot=0).selected
    # 73.5 against 74 is not a disagreement: the outcome is pass/fail.
    assert selected.overall.accuracy.value == 1.0 and selected.overall.labels == ["pass", "fail"]
    for name in ("pace", "tone"):
        expected = np.mean([abs(g[name] - j[name]) for g, j in zip(gold_scores, judged_scores, strict=True)])
        assert selected.sub_scores[name].n == 5
        assert selected.sub_scores[name].mae == pytest.approx(expected)
    client.force_login(make_user("lea", role=Role.LEAD))
    from django.urls import reverse

    html = client.get(reverse("quality_judge", args=["clarity"])).content.decode()
    assert 'id="sub-scores"' in html and "pace" in html

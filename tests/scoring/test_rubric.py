import pytest

from scoring.rubric import rubric_aggregate, weighted_aggregate
from scoring.specs import Criterion

CRITERIA = (
    Criterion("grounded", threshold=1, required=True),
    Criterion("answers", threshold=0.5, required=True),
    Criterion("confirms", threshold=1, required=False),
    Criterion("next_step", threshold=1, required=False),
)


def test_rubric_passes_when_every_required_criterion_passes():
    outcome = rubric_aggregate(CRITERIA, {"grounded": 1, "answers": 0.5, "confirms": 1, "next_step": 0})
    assert outcome.passed is True
    assert outcome.failed_required == ()
    assert (outcome.optional_met, outcome.optional_total) == (1, 2)
    assert outcome.diagnostic == 2.0


def test_optional_criteria_never_decide_pass_or_fail():
    all_optional_fail = rubric_aggregate(CRITERIA, {"grounded": 1, "answers": 1, "confirms": 0, "next_step": 0})
    assert all_optional_fail.passed is True
    assert all_optional_fail.diagnostic == 0.0
    required_fails = rubric_aggregate(CRITERIA, {"grounded": 0, "answers": 1, "confirms": 1, "next_step": 1})
    assert required_fails.passed is False
    assert required_fails.failed_required == ("grounded",)
    assert required_fails.diagnostic == 4.0


def test_rubric_without_optional_criteria_has_no_diagnostic():
    outcome = rubric_aggregate(CRITERIA[:2], {"grounded": 1, "answers": 1})
    assert outcome.diagnostic is None


def test_missing_criterion_score_raises():
    with pytest.raises(KeyError):
        rubric_aggregate(CRITERIA, {"grounded": 1})


WEIGHTS = {"language_match": 0.4, "clarity": 0.25, "terminology": 0.15, "structure": 0.15, "appropriateness": 0.05}


def test_weighted_sum_and_pass_threshold():
    scores = dict.fromkeys(WEIGHTS, 80.0)
    outcome = weighted_aggregate(scores, WEIGHTS, pass_threshold=70)
    assert outcome.overall == pytest.approx(80.0)
    assert outcome.passed is True
    assert weighted_aggregate(scores, WEIGHTS, pass_threshold=90).passed is False
    assert weighted_aggregate(scores, WEIGHTS).passed is None


def test_critical_sub_metric_below_threshold_fails_regardless_of_overall():
    scores = {**dict.fromkeys(WEIGHTS, 100.0), "language_match": 59.0}
    outcome = weighted_aggregate(
        scores, WEIGHTS, critical=["language_match"], thresholds={"language_match": 60}, pass_threshold=70
    )
    assert outcome.overall > 70
    assert outcome.passed is False
    assert outcome.failed_critical == ("language_match",)
    at_threshold = {**scores, "language_match": 60.0}
    assert (
        weighted_aggregate(
            at_threshold, WEIGHTS, critical=["language_match"], thresholds={"language_match": 60}, pass_threshold=70
        ).passed
        is True
    )

"""The outcome rule: what a verdict, review or gold label is scored as, and when it cannot be scored."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import accuracy_score, mean_absolute_error

from scoring.outcomes import (
    Answer,
    OutcomeRule,
    OutcomeRuleError,
    outcome_of,
    pair_outcome,
    rule_for_scale,
    score_pairs,
    sub_score_differences,
)

ORDINAL = OutcomeRule("ordinal", scale_min=1, scale_max=3, pass_threshold=3)
BINARY = OutcomeRule("binary")
WEIGHTED = OutcomeRule("weighted", scale_min=0, scale_max=100, pass_threshold=70)
LABEL = OutcomeRule("label")


def test_labels_of_each_kind():
    assert ORDINAL.labels() == ["1", "2", "3"]
    assert OutcomeRule("ordinal", scale_min=0, scale_max=4).labels() == ["0", "1", "2", "3", "4"]
    assert BINARY.labels() == ["pass", "fail"]
    assert WEIGHTED.labels() == ["pass", "fail"]
    assert LABEL.labels() is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "stars"}, "unknown judge kind"),
        ({"kind": "ordinal"}, "needs a bounded scale"),
        ({"kind": "ordinal", "scale_min": 1, "scale_max": 1}, "must be below"),
        ({"kind": "ordinal", "scale_min": 0.5, "scale_max": 3}, "whole points"),
        ({"kind": "ordinal", "scale_min": 0, "scale_max": 1000}, "not a rating scale"),
        ({"kind": "weighted", "pass_threshold": math.nan}, "finite number"),
    ],
)
def test_a_rule_that_cannot_score_is_refused_at_once(kwargs, message):
    with pytest.raises(OutcomeRuleError, match=message):
        OutcomeRule(**kwargs)


def test_rule_for_scale_reads_tribunal_scale_names():
    assert rule_for_scale("rubric").kind == "binary"
    assert rule_for_scale("ordinal", scale_min=1, scale_max=5).labels() == ["1", "2", "3", "4", "5"]
    with pytest.raises(OutcomeRuleError, match="unknown judge scale"):
        rule_for_scale("likert")


def test_ordinal_outcome_is_the_rating():
    o = outcome_of(ORDINAL, rating=3.0, passed=True, label="concise")
    assert (o.value, o.field, o.conversion, o.refused) == ("3", "rating", "", "")
    assert outcome_of(ORDINAL, rating=1).value == "1"


def test_a_negative_zero_rating_is_the_point_zero():
    scale = OutcomeRule("ordinal", scale_min=0, scale_max=4)
    assert outcome_of(scale, rating=-0.0).value == "0"
    assert outcome_of(scale, rating=-0.0).value == outcome_of(scale, label="0").value


def test_ordinal_label_is_read_as_a_rating_by_a_named_rule():
    o = outcome_of(ORDINAL, label=" 2 ")
    assert (o.value, o.field, o.conversion) == ("2", "label", "label -> rating")
    assert outcome_of(ORDINAL, label="2.0").value == "2"
    assert "not a point of the scale" in outcome_of(ORDINAL, label="4").refused
    assert "not a point of the scale" in outcome_of(ORDINAL, label="good").refused


@pytest.mark.parametrize(
    ("rating", "reason"),
    [
        (0.0, "outside the scale 1..3"),
        (4.0, "outside the scale 1..3"),
        (2.5, "not a whole point"),
        (math.nan, "not a finite number"),
        (math.inf, "not a finite number"),
        (True, "not a finite number"),
    ],
)
def test_out_of_scale_or_non_finite_ratings_are_refused(rating, reason):
    o = outcome_of(ORDINAL, rating=rating, source="verdict")
    assert o.value is None and not o.ok
    assert o.refused.startswith("verdict: ") and reason in o.refused


def test_gold_passed_against_an_ordinal_judge_is_refused_never_scored():
    """Gold `passed: true` vs verdict `rating: 3, passed: true` on an ordinal judge: 20 refused, 0 scored."""
    pairs = [(Answer(passed=True), Answer(rating=3.0, passed=True))] * 20
    scored = score_pairs(ORDINAL, pairs)
    assert scored.n == 0 and scored.n_refused == 20
    (reason,) = scored.refused
    assert reason.startswith("gold: gives passed but no rating")

    # The pass/fail view scores the same pairs, and names the conversion it used for the judge's side.
    view = ORDINAL.pass_fail()
    scored = score_pairs(view, pairs)
    assert scored.n == 20 and scored.n_refused == 0
    assert accuracy_score(scored.gold, scored.judge) == 1.0
    assert scored.conversions == {} or all("rating>=" in c for c in scored.conversions)
    only_rating = score_pairs(view, [(Answer(passed=False), Answer(rating=2.0))] * 3)
    assert only_rating.judge == ["fail"] * 3
    assert only_rating.conversions == {"judge rating>=3 -> passed": 3}


def test_pass_fail_view_needs_a_threshold():
    with pytest.raises(OutcomeRuleError, match="no pass/fail view"):
        OutcomeRule("ordinal", scale_min=1, scale_max=3).pass_fail()
    with pytest.raises(OutcomeRuleError):
        LABEL.pass_fail()
    assert BINARY.pass_fail() is BINARY


def test_binary_outcome_is_passed_and_a_rating_converts_through_the_threshold():
    assert outcome_of(BINARY, passed=False).value == "fail"
    o = outcome_of(BINARY, rating=1.0)
    assert (o.value, o.conversion) == ("pass", "rating>=1 -> passed")
    assert outcome_of(BINARY, rating=0.0).value == "fail"
    assert "outside the scale 0..1" in outcome_of(BINARY, rating=2.0).refused
    assert "not a whole point" in outcome_of(BINARY, rating=0.5).refused
    o = outcome_of(BINARY, label="PASS")
    assert (o.value, o.conversion) == ("pass", "label -> passed")
    assert "neither pass nor fail" in outcome_of(BINARY, label="maybe").refused
    assert "gives neither" in outcome_of(BINARY).refused


def test_a_record_contradicting_itself_is_refused():
    assert (
        "label 'pass' contradicts its rating, which gives fail" in outcome_of(BINARY, rating=0.0, label="pass").refused
    )
    assert "contradicts its passed" in outcome_of(WEIGHTED, passed=False, label="PASS").refused
    assert outcome_of(WEIGHTED, passed=False, label="fail:accuracy").value == "fail"
    assert outcome_of(BINARY, passed=True, label="concise").value == "pass"
    o = outcome_of(BINARY, rating=0.0, passed=True, source="gold")
    assert o.value is None and "passed is true but its rating 0 is below the pass threshold 1" in o.refused
    view = ORDINAL.pass_fail()
    assert outcome_of(view, rating=3.0, passed=True).value == "pass"
    assert "reaches the pass threshold" in outcome_of(view, rating=3.0, passed=False).refused
    assert "not a whole point" in outcome_of(view, rating=2.5).refused


def test_weighted_outcome_is_passed_at_its_threshold():
    assert outcome_of(WEIGHTED, rating=73.5, passed=True).value == "pass"
    # A failed critical sub-metric fails a high overall score: passed wins, nothing is contradicted.
    assert outcome_of(WEIGHTED, rating=91.0, passed=False, label="fail:accuracy").value == "fail"
    o = outcome_of(WEIGHTED, rating=69.9)
    assert (o.value, o.conversion) == ("fail", "rating>=70 -> passed")
    assert outcome_of(WEIGHTED, rating=70.0).value == "pass"
    assert "outside the scale 0..100" in outcome_of(WEIGHTED, rating=100.5).refused
    no_threshold = OutcomeRule("weighted")
    assert "no pass threshold" in outcome_of(no_threshold, rating=80.0).refused


def test_open_label_set():
    assert outcome_of(LABEL, label=" wrong-language ").value == "wrong-language"
    assert "scored on its label" in outcome_of(LABEL, passed=True).refused
    assert outcome_of(LABEL, label="").refused == "gives no label"


def test_pair_outcome_names_both_sides():
    result = pair_outcome(BINARY, gold=Answer(label="fail"), judge=Answer(rating=1.0))
    assert result.scored and (result.gold.value, result.judge.value) == ("fail", "pass")
    assert result.conversions == ("gold label -> passed", "judge rating>=1 -> passed")
    refused = pair_outcome(ORDINAL, gold=Answer(rating=9.0), judge=Answer(rating=2.0))
    assert not refused.scored and refused.refused.startswith("gold: rating 9")


def test_score_pairs_keeps_input_positions():
    pairs = [
        (Answer(rating=3.0), Answer(rating=3.0)),
        (Answer(passed=True), Answer(rating=3.0)),
        (Answer(rating=1.0), Answer(rating=2.0)),
        (Answer(rating=2.0), Answer(rating=math.nan)),
    ]
    scored = score_pairs(ORDINAL, pairs)
    assert scored.index == [0, 2]
    assert (scored.gold, scored.judge) == (["3", "1"], ["3", "2"])
    assert scored.n_refused == 2
    assert sum(1 for reason in scored.refused if reason.startswith("judge: rating nan")) == 1


def test_sub_score_differences_equal_scikit_learn_and_scipy():
    rng = np.random.default_rng(3)
    gold = [{"accuracy": float(a), "tone": float(t)} for a, t in rng.uniform(0, 100, (40, 2))]
    judge = [{"accuracy": min(100.0, g["accuracy"] + float(rng.normal(0, 8)) % 30), "tone": g["tone"]} for g in gold]
    judge[3]["accuracy"] = math.nan
    judge[5] = {"tone": gold[5]["tone"]}
    judge[6]["tone"] = 140.0
    result = sub_score_differences(zip(gold, judge, strict=True), names=["accuracy", "tone", "brevity"])

    keep = [i for i in range(40) if i not in (3, 5)]
    g = [gold[i]["accuracy"] for i in keep]
    j = [judge[i]["accuracy"] for i in keep]
    acc = result["accuracy"]
    assert (acc.n, acc.refused) == (38, 2)
    assert acc.mae == pytest.approx(mean_absolute_error(g, j))
    diffs = np.abs(np.array(g) - np.array(j))
    low, high = stats.t.interval(0.95, len(diffs) - 1, loc=diffs.mean(), scale=stats.sem(diffs))
    assert (acc.low, acc.high) == pytest.approx((max(0.0, low), high))

    tone = result["tone"]
    assert (tone.n, tone.refused, tone.mae) == (39, 1, 0.0)
    assert tone.low is None  # every difference equal: no interval
    assert result["brevity"].n == 0 and result["brevity"].mae is None
    assert set(sub_score_differences([({"a": 1}, {"b": 2})])) == {"a", "b"}


def test_unresolved_and_failed_answers_are_refused_and_counted_never_scored():
    pairs = [
        (Answer(rating=3.0), Answer(rating=3.0, status="unresolved")),  # e.g. an out-of-range answer kept raw
        (Answer(rating=3.0), Answer(status="error")),
        (Answer(rating=2.0), Answer()),  # no field at all
        (Answer(rating=2.0), Answer(rating=2.0)),
    ]
    scored = score_pairs(ORDINAL, pairs)
    assert scored.index == [3]
    assert scored.refused == {
        "judge: the answer is unresolved, not resolved": 1,
        "judge: the answer is error, not resolved": 1,
        "judge: gives no rating": 1,
    }
    assert outcome_of(BINARY, passed=True, status="unresolved").value is None


any_rating = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 105))
any_passed = st.one_of(st.none(), st.booleans())
any_label = st.one_of(
    st.just(""), st.sampled_from(["pass", "FAIL", "3", "2.0", "7", "maybe", " 1 "]), st.text(max_size=5)
)
RULES = [ORDINAL, BINARY, WEIGHTED, LABEL, ORDINAL.pass_fail(), OutcomeRule("ordinal", scale_min=0, scale_max=4)]


@given(rule=st.sampled_from(RULES), rating=any_rating, passed=any_passed, label=any_label)
@example(rule=OutcomeRule("ordinal", scale_min=0, scale_max=4), rating=-0.0, passed=None, label="")
def test_any_answer_is_scored_inside_the_label_set_or_refused_with_a_reason(rule, rating, passed, label):
    o = outcome_of(rule, rating=rating, passed=passed, label=label, source="gold")
    assert (o.value is None) == bool(o.refused)
    if o.value is None:
        assert o.refused.startswith("gold: ")
        return
    labels = rule.labels()
    assert labels is None or o.value in labels
    if rating is not None and o.field != "rating":
        assert rule.kind in ("binary", "weighted", "label")  # where the rating is not the outcome
    if o.field != rule.field:
        assert o.conversion  # another field is read only by a named rule
    if rule.kind == "ordinal":
        assert o.field in ("rating", "label")
        if rating is not None:
            # A negative zero is the rating 0 (its label "0", not "-0").
            assert float(rating).is_integer() and o.value == f"{float(rating) + 0.0:g}"

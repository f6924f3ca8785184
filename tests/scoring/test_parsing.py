import json
from pathlib import Path

import pytest

from scoring.parsing import RESOLVED, UNRESOLVED, parse_answer
from scoring.specs import load_specs

JUDGES = Path(__file__).resolve().parents[2] / "judges"


@pytest.fixture(scope="module")
def specs():
    return {spec.slug: spec for spec in load_specs(JUDGES)}


def answer(**data) -> str:
    return json.dumps(data)


GOOD_CLARITY = {"language_match": 95, "clarity": 80, "terminology": 70, "structure": 60, "appropriateness": 100}


def test_a_good_ordinal_answer_resolves(specs):
    result = parse_answer(
        specs["conciseness"],
        answer(rating=2, explanation="Reads out three options.", failure_modes=["excess_information_density"]),
    )
    assert result.status == RESOLVED
    assert result.rating == 2.0
    assert result.label == "adequate"
    assert result.passed is True
    assert result.flags == ("excess_information_density",)
    assert result.problem == ""


def test_a_fenced_answer_is_accepted(specs):
    raw = '```json\n{"rating": 1, "explanation": "ok", "failure_modes": []}\n```'
    result = parse_answer(specs["speakability"], raw)
    assert result.status == RESOLVED
    assert result.rating == 1.0
    assert result.passed is True
    assert result.label == "speakable"


def test_binary_zero_is_a_fail_not_a_missing_score(specs):
    result = parse_answer(
        specs["tts_fidelity"], answer(rating=0, explanation="K7 heard as K11", failure_modes=["entity_error"])
    )
    assert result.status == RESOLVED
    assert result.rating == 0.0
    assert result.passed is False
    assert result.flags == ("entity_error",)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "empty answer"),
        ("The rating is 3.", "not valid JSON"),
        ('Sure! {"rating": 3, "explanation": "", "failure_modes": []}', "not valid JSON"),
        ('```json\n{"rating": 3, "explanation": "", "failure_modes": []}\n``` hope this helps', "fence"),
        ('```json\n{"rating": 3, "explanation": "", "failure_modes": []}', "fence"),
        ("[1, 2, 3]", "expected a JSON object"),
        ('{"rating": NaN, "explanation": "", "failure_modes": []}', "NaN"),
        ('{"rating": 3, "explanation": "x"}', "missing required key(s): failure_modes"),
        ('{"explanation": "x", "failure_modes": []}', "missing required key(s): rating"),
        ('{"rating": 4, "explanation": "x", "failure_modes": []}', "outside the scale 1..3"),
        ('{"rating": 0, "explanation": "x", "failure_modes": []}', "outside the scale 1..3"),
        ('{"rating": "3", "explanation": "x", "failure_modes": []}', "is not a number"),
        ('{"rating": true, "explanation": "x", "failure_modes": []}', "is not a number"),
        ('{"rating": 2.5, "explanation": "x", "failure_modes": []}', "not a whole point"),
        ('{"rating": 2, "explanation": "x", "failure_modes": "verbosity_or_filler"}', "list of strings"),
        ('{"rating": null, "explanation": "I am not sure", "failure_modes": []}', "I am not sure"),
        ('{"uncertain": true, "rating": 2, "explanation": "hard to say", "failure_modes": []}', "uncertain"),
    ],
)
def test_bad_answers_are_unresolved_never_scored(specs, raw, problem):
    result = parse_answer(specs["conciseness"], raw)
    assert result.status == UNRESOLVED
    assert problem in result.problem
    assert result.rating is None
    assert result.passed is None
    assert result.label == ""


def test_binary_rejects_values_between_points(specs):
    result = parse_answer(specs["speakability"], answer(rating=0.5, explanation="x", failure_modes=[]))
    assert result.status == UNRESOLVED
    assert "not a whole point" in result.problem


def test_unknown_failure_mode_is_flagged_but_resolved(specs):
    result = parse_answer(
        specs["conciseness"], answer(rating=1, explanation="x", failure_modes=["rambling", "verbosity_or_filler"])
    )
    assert result.status == RESOLVED
    assert result.flags == ("unknown_failure_mode:rambling", "verbosity_or_filler")


def test_failure_modes_on_a_top_rating_are_flagged(specs):
    result = parse_answer(
        specs["conciseness"], answer(rating=3, explanation="x", failure_modes=["verbosity_or_filler"])
    )
    assert result.status == RESOLVED
    assert "failure_modes_on_top_rating" in result.flags


def test_weighted_overall_is_the_weighted_sum(specs):
    result = parse_answer(specs["language_clarity"], answer(sub_scores=GOOD_CLARITY, explanation="fine"))
    assert result.status == RESOLVED
    expected = 95 * 0.40 + 80 * 0.25 + 70 * 0.15 + 60 * 0.15 + 100 * 0.05
    assert result.rating == pytest.approx(expected)
    assert result.passed is True
    assert dict(result.sub_scores) == {k: float(v) for k, v in GOOD_CLARITY.items()}


def test_wrong_language_fails_the_whole_judge(specs):
    scores = {**GOOD_CLARITY, "language_match": 20, "clarity": 100, "terminology": 100, "structure": 100}
    result = parse_answer(specs["language_clarity"], answer(sub_scores=scores, explanation="answered in English"))
    assert result.status == RESOLVED
    assert result.rating == pytest.approx(20 * 0.4 + 100 * 0.55 + 100 * 0.05)
    assert result.rating > 60
    assert result.passed is False
    assert "critical_failed:language_match" in result.flags
    assert result.label == "fail:language_match"


def test_weighted_below_pass_threshold_fails(specs):
    scores = dict.fromkeys(GOOD_CLARITY, 65)
    result = parse_answer(specs["language_clarity"], answer(sub_scores=scores, explanation="meh"))
    assert result.passed is False
    assert result.label == "fail"


@pytest.mark.parametrize(
    ("sub_scores", "problem"),
    [
        ({k: v for k, v in GOOD_CLARITY.items() if k != "terminology"}, "missing sub-metric(s): terminology"),
        ({**GOOD_CLARITY, "clarity": 120}, "outside 0..100"),
        ({**GOOD_CLARITY, "clarity": -1}, "outside 0..100"),
        ({**GOOD_CLARITY, "clarity": "high"}, "not a number"),
        ({**GOOD_CLARITY, "clarity": None}, "no score"),
        (None, "'sub_scores' must be an object"),
    ],
)
def test_weighted_answers_need_every_sub_metric_in_range(specs, sub_scores, problem):
    result = parse_answer(specs["language_clarity"], answer(sub_scores=sub_scores, explanation="x"))
    assert result.status == UNRESOLVED
    assert problem in result.problem
    assert result.rating is None


def _criteria(**overrides):
    base = {
        "addresses_request": {"score": 1, "passed": True},
        "no_unsupported_claims": {"score": 1, "passed": True},
        "in_expected_language": {"score": 1, "passed": True},
        "confirms_key_details": {"score": 1, "passed": True},
        "clear_next_step": {"score": 0, "passed": False},
        "one_question_at_a_time": {"score": 1, "passed": True},
        "natural_for_speech": {"score": 0, "passed": False},
    }
    base.update(overrides)
    return base


def test_rubric_passes_on_required_and_scores_optional(specs):
    result = parse_answer(specs["turn_rubric"], answer(criteria=_criteria(), explanation="x"))
    assert result.status == RESOLVED
    assert result.passed is True
    assert result.rating == 2.0
    assert result.label == "pass"


def test_rubric_fails_when_a_required_criterion_fails(specs):
    criteria = _criteria(no_unsupported_claims={"score": 0, "passed": False})
    result = parse_answer(specs["turn_rubric"], answer(criteria=criteria, explanation="invented a fee"))
    assert result.status == RESOLVED
    assert result.passed is False
    assert "required_failed:no_unsupported_claims" in result.flags


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        (
            {k: v for k, v in _criteria().items() if k != "clear_next_step"},
            "missing criterion result(s): clear_next_step",
        ),
        (_criteria(addresses_request={"score": 0, "passed": True}), "contradicts score"),
        (_criteria(addresses_request={"note": "?"}), "neither a score nor passed"),
        (_criteria(addresses_request={"score": "yes"}), "not a number"),
    ],
)
def test_rubric_problems_are_unresolved(specs, criteria, problem):
    result = parse_answer(specs["turn_rubric"], answer(criteria=criteria, explanation="x"))
    assert result.status == UNRESOLVED
    assert problem in result.problem
    assert result.passed is None


def test_parse_answer_never_raises_on_garbage(specs):
    for raw in (None, "```", "{", '{"criteria": []}', "\x00", "```json\n```", '{"rating": 1e999}'):
        for spec in specs.values():
            result = parse_answer(spec, raw)
            assert result.status == UNRESOLVED
            assert result.problem

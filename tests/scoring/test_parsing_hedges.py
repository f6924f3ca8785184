"""Hedges are not answers: duplicate keys, non-finite numbers, uncertain flags of any type, hedging
explanations, and the problem code every unresolved answer carries."""

import json
from pathlib import Path

import pytest

from scoring.hedges import HEDGE_PATTERNS, hedge_in
from scoring.parsing import RESOLVED, UNCERTAIN_CODES, UNRESOLVED, parse_answer
from scoring.specs import load_specs
from scoring.strictjson import MAX_DEPTH, StrictJSONError, strict_loads

JUDGES = Path(__file__).resolve().parents[2] / "judges"


@pytest.fixture(scope="module")
def conciseness():
    return next(spec for spec in load_specs(JUDGES) if spec.slug == "conciseness")


def good(**changes) -> dict:
    return {"rating": 2, "explanation": "Two options read out; fine.", "failure_modes": [], **changes}


def test_duplicate_rating_is_unresolved_not_the_last_value(conciseness):
    raw = '{"rating": 1, "rating": 3, "explanation": "ok", "failure_modes": []}'
    result = parse_answer(conciseness, raw)
    assert (result.status, result.rating, result.problem_code) == (UNRESOLVED, None, "duplicate_key")
    assert "'rating' appears twice" in result.problem


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_rating_is_unresolved(conciseness, number):
    raw = f'{{"rating": {number}, "explanation": "ok", "failure_modes": []}}'
    result = parse_answer(conciseness, raw)
    assert (result.status, result.rating, result.passed, result.problem_code) == (UNRESOLVED, None, None, "non_finite")
    assert "rating" in result.problem


@pytest.mark.parametrize("flag", [True, "true", "True", " yes ", 1, "1", "y", "maybe", 0.5, 2, [True], {"why": "?"}])
def test_uncertain_flag_of_any_type_is_uncertain(conciseness, flag):
    result = parse_answer(conciseness, json.dumps(good(uncertain=flag)))
    assert (result.status, result.rating, result.problem_code) == (UNRESOLVED, None, "uncertain")
    assert result.uncertain


@pytest.mark.parametrize("flag", [False, "false", "FALSE", "no", 0, "0", None, "", "n", "f"])
def test_uncertain_flag_that_says_no_keeps_the_answer(conciseness, flag):
    result = parse_answer(conciseness, json.dumps(good(uncertain=flag)))
    assert (result.status, result.rating, result.problem_code) == (RESOLVED, 2.0, "")


def test_unsure_is_read_like_uncertain(conciseness):
    result = parse_answer(conciseness, json.dumps(good(unsure="yes")))
    assert result.problem_code == "uncertain"


HEDGED = [
    ("en", "I'm not sure, maybe 2?"),
    ("en", "It could be 2 or 3."),
    ("en", "Hard to say: the turn is long but clear."),
    ("en", "I am not entirely certain about this rating."),
    ("en", "I can't tell whether the list was needed."),
    ("en", "Either 2 or 3, depending on the caller."),
    ("en", "Perhaps a 3."),
    ("en", "Not sure. The agent lists four options."),
    ("en", "I\u2019m not sure this is verbose."),  # curly apostrophe
    ("en", "Somewhere between 1 and 2."),
    ("fr", "Je ne suis pas sûr, peut-être 2 ?"),
    ("fr", "Difficile à dire, la réponse est longue."),
    ("fr", "Cela pourrait être 2 ou 3."),
    ("fr", "Soit 2 soit 3."),
    ("fr", "J\u2019hésite entre 2 et 3."),
    ("fr", "Je ne sais pas si la liste était utile."),
    ("fr", "Pas sûr. L'agent énumère tout."),
]
NOT_HEDGED = [
    "The agent reads out three options; a summary would do.",
    'The agent said "I\'m not sure" and then answered the question.',
    "L'agent dit « je ne suis pas sûr » puis répond.",
    "The caller is not sure about the date, and the agent asks once.",
    "It could be shortened to maybe 2 sentences.",
    "The agent offered either 2 or 3 flights to choose from.",
    "The agent took between 2 and 3 turns to confirm.",
    "Concise: one question, no filler.",
    "Rating 2: adequate.",
    "",
]


@pytest.mark.parametrize(("language", "explanation"), HEDGED)
def test_a_hedging_explanation_sends_the_answer_to_people(conciseness, language, explanation):
    assert language in HEDGE_PATTERNS
    result = parse_answer(conciseness, json.dumps(good(explanation=explanation)))
    assert (result.status, result.rating, result.passed, result.problem_code) == (UNRESOLVED, None, None, "hedged")
    assert result.explanation == explanation
    assert "hedges" in result.problem
    assert result.uncertain


@pytest.mark.parametrize("explanation", NOT_HEDGED)
def test_explanations_that_do_not_hedge_are_scored(conciseness, explanation):
    assert hedge_in(explanation) == ""
    result = parse_answer(conciseness, json.dumps(good(explanation=explanation)))
    assert (result.status, result.rating) == (RESOLVED, 2.0)


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("", "empty"),
        ("The rating is 2.", "bad_json"),
        ("```json\n{}\n```\n```json\n{}\n```", "bad_json"),
        ("[2]", "not_object"),
        ('{"explanation": "ok", "failure_modes": []}', "missing_key"),
        ('{"rating": "2", "explanation": "ok", "failure_modes": []}', "bad_type"),
        ('{"rating": 7, "explanation": "ok", "failure_modes": []}', "out_of_range"),
        ('{"rating": 2.5, "explanation": "ok", "failure_modes": []}', "out_of_range"),
        ('{"rating": null, "explanation": "ok", "failure_modes": []}', "uncertain"),
        ('{"rating": 2, "explanation": "a\\u0000b", "failure_modes": []}', "bad_char"),
        ('{"rating": 2, "explanation": "ok", "failure_modes": [], "x": ' + "[" * 80 + "]" * 80 + "}", "too_deep"),
    ],
)
def test_every_unresolved_answer_carries_its_code(conciseness, raw, code):
    result = parse_answer(conciseness, raw)
    assert (result.status, result.problem_code) == (UNRESOLVED, code)
    assert result.problem  # the prose for people is still there
    assert result.uncertain is (code in UNCERTAIN_CODES)


def test_resolved_answers_have_no_code(conciseness):
    assert parse_answer(conciseness, json.dumps(good())).problem_code == ""


def test_strict_loads_refuses_deep_nesting_without_recursion_error():
    with pytest.raises(StrictJSONError) as caught:
        strict_loads("[" * 200_000 + "]" * 200_000)
    assert caught.value.code == "too_deep"
    assert strict_loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def test_strict_loads_names_where_the_bad_value_is():
    with pytest.raises(StrictJSONError) as caught:
        strict_loads('{"turns": [{"text": "ok"}, {"rating": NaN}]}')
    assert (caught.value.code, caught.value.path) == ("non_finite", "turns[1].rating")


@pytest.mark.parametrize("key", ["reasoning", "rationale", "justification", "analysis"])
def test_a_hedge_in_another_reasoning_field_counts_too(conciseness, key):
    result = parse_answer(conciseness, json.dumps(good(**{key: "Hard to say; it could be 2 or 3."})))
    assert (result.status, result.problem_code) == (UNRESOLVED, "hedged")

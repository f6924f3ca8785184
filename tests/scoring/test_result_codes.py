"""JudgeResult carries its status and problem as enum codes, which triage reads instead of the prose."""

import pytest

from scoring.parsing import UNCERTAIN_CODES, JudgeResult, ProblemCode, ResultStatus, parse_answer, unresolved
from scoring.specs import JudgeSpec


def _spec() -> JudgeSpec:
    return JudgeSpec(
        slug="conciseness",
        version="t",
        name="Conciseness",
        description="",
        level="turn",
        scale="ordinal",
        scale_min=1,
        scale_max=3,
        failure_modes=(),
        system_template="",
        user_template="{text}",
    )


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ('{"rating": null, "explanation": "cannot tell"}', ProblemCode.UNCERTAIN),
        ('{"rating": 2, "uncertain": true, "explanation": "x"}', ProblemCode.UNCERTAIN),
        ('{"rating": 2, "explanation": "maybe 2? hard to say"}', ProblemCode.HEDGED),
        ('{"rating": 7, "explanation": "x"}', ProblemCode.OUT_OF_RANGE),
        ("not json", ProblemCode.BAD_JSON),
    ],
)
def test_unresolved_answers_say_why_as_a_code(answer, code):
    result = parse_answer(_spec(), answer)
    assert result.status is ResultStatus.UNRESOLVED
    assert result.problem_code is code
    assert result.uncertain == (code in (ProblemCode.UNCERTAIN, ProblemCode.HEDGED))


def test_a_resolved_answer_has_no_problem_code():
    result = parse_answer(_spec(), '{"rating": 2, "explanation": "short and clear"}')
    assert result.status is ResultStatus.RESOLVED and result.resolved
    assert result.problem_code is ProblemCode.NONE and not result.uncertain


def test_codes_given_as_text_become_the_enum_and_unknown_ones_are_refused():
    result = JudgeResult(status="unresolved", problem="x", problem_code="hedged")
    assert result.status is ResultStatus.UNRESOLVED and result.problem_code is ProblemCode.HEDGED
    assert result.problem_code == "hedged"  # stored in Verdict.problem_code as its value
    with pytest.raises(ValueError):
        JudgeResult(status="unresolved", problem_code="unsure-ish")
    with pytest.raises(ValueError):
        JudgeResult(status="maybe")
    assert unresolved("x", code="uncertain").problem_code is ProblemCode.UNCERTAIN
    assert {ProblemCode.UNCERTAIN, ProblemCode.HEDGED} == UNCERTAIN_CODES

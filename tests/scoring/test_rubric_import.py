"""A rubric generator's JSON as a rubric judge: criteria, gate, variance check, edge cases, kill criteria,
golden examples, and refusals that name the file, line and field."""

import json
from pathlib import Path

import pytest

from scoring.rubric_import import (
    EXIT_BLOCK,
    EXIT_HOLD,
    EXIT_PAGE,
    RubricImportError,
    golden_cases,
    golden_check,
    is_rubric_generator,
    rubric_from_file,
    rubric_from_text,
)
from scoring.specs import SpecError, validate_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "../shared/data/rubric-generator/order-status.json"


@pytest.fixture(scope="module")
def example_text() -> str:
    if not EXAMPLE.exists():
        pytest.skip(f"{EXAMPLE} is missing")
    return EXAMPLE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def imported(example_text):
    return rubric_from_text(example_text, source="order-status.json", slug="order-status")


def test_the_example_is_told_apart_by_its_keys(example_text):
    assert is_rubric_generator(json.loads(example_text))
    assert not is_rubric_generator({"slug": "x", "prompts": {}})
    assert not is_rubric_generator({"rubric": {"criteria": []}})


def test_criteria_thresholds_and_required_flags(imported):
    spec = imported.spec
    assert spec.scale == "rubric" and spec.slug == "order-status"
    assert len(spec.criteria) == 7
    assert sum(c.required for c in spec.criteria) == 5
    gate = spec.params["gate"]
    assert sorted({g["threshold"] for g in gate.values()}) == [0.9, 0.95, 1.0]
    assert gate["tracking_link_always_included"] == {
        "threshold": 0.95,
        "required": True,
        "text": "95% pass required — missing links on shipped orders block the core task",
    }
    assert not gate["response_length_max_2_sentences"]["required"]
    assert spec.params["criterion_titles"]["correct_order_status_returned"] == "Correct Order Status Returned"
    validate_spec(spec)


def test_judge_setup_becomes_model_variance_check_and_unresolved_rule(imported):
    spec = imported.spec
    assert spec.model == "gpt-4o"
    assert spec.params["variance_check"]["repeats"] == 2
    assert spec.params["variance_check"]["sample_rate"] == pytest.approx(0.10)
    assert spec.params["variance_threshold"] == pytest.approx(0.15)
    assert spec.params["uncertainty_fallback"]["rule"] == "unresolved"
    assert '"uncertain": true' in spec.user_template.replace("{{", "{").replace("}}", "}")
    assert spec.system_template.startswith("You are evaluating an order status chatbot response.")


def test_edge_cases_point_at_known_criteria(imported):
    assert len(imported.edge_cases) == 8
    first = imported.edge_cases[0]
    assert first.criteria == ("correct_order_status_returned", "no_hallucination_on_invalid_order_id")
    keys = {c.name for c in imported.spec.criteria}
    assert all(set(e.criteria) <= keys for e in imported.edge_cases)


def test_kill_criteria_become_gate_rules_with_their_own_exit_codes(imported):
    rules = imported.kill_rules
    assert [(r.kind, r.scope, r.threshold, r.exit_code) for r in rules] == [
        ("pass_rate", "golden", 1.0, EXIT_BLOCK),
        ("pass_rate", "production", 0.95, EXIT_PAGE),
        ("variance", "variance", 0.15, EXIT_HOLD),
    ]
    assert rules[0].text == "Any required criterion drops below 100% pass on golden set → block PR"


def test_every_golden_example_renders_and_checks(imported):
    cases = golden_cases(imported.spec)
    assert len(cases) == 14
    assert {c.expected for c in cases} == {"pass", "fail"}
    for case in cases:
        check = golden_check(imported.spec, case)
        assert check.ok, (case, check.problems)
        assert case.text in check.prompt.user


def test_a_golden_check_fails_when_the_prompt_loses_the_criterion(imported):
    import dataclasses

    spec = imported.spec
    broken = dataclasses.replace(
        spec, user_template=spec.user_template.replace("- correct_order_status_returned:", "-")
    )
    case = golden_cases(spec)[0]
    assert not golden_check(broken, case).ok


def _mutated(example_text, change):
    data = json.loads(example_text)
    change(data)
    return json.dumps(data, indent=2, ensure_ascii=False)


def test_a_threshold_without_a_rate_is_refused_with_line_and_field(example_text):
    text = _mutated(example_text, lambda d: d["rubric"]["criteria"][2].__setitem__("threshold", "most of the time"))
    with pytest.raises(RubricImportError) as exc:
        rubric_from_text(text, source="bad.json")
    message = str(exc.value)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "most of the time" in row)
    assert message.startswith(f"bad.json:{line}: rubric.criteria[2].threshold:")


def test_an_edge_case_naming_an_unknown_criterion_is_refused(example_text):
    text = _mutated(example_text, lambda d: d["edge_cases"][1].__setitem__("criterion", "Politeness"))
    with pytest.raises(RubricImportError, match=r"edge_cases\[1\]\.criterion: 'Politeness' is not one"):
        rubric_from_text(text, source="bad.json")


def test_an_unknown_kill_criterion_form_is_refused(example_text):
    text = _mutated(example_text, lambda d: d["operations"]["kill_criteria"].append("When in doubt, stop"))
    with pytest.raises(RubricImportError, match=r"operations\.kill_criteria\[3\]"):
        rubric_from_text(text, source="bad.json")


def test_non_binary_scoring_is_refused(example_text):
    text = _mutated(example_text, lambda d: d["rubric"]["criteria"][0].__setitem__("scoring", "1-5 Likert"))
    with pytest.raises(RubricImportError, match=r"rubric\.criteria\[0\]\.scoring: only binary"):
        rubric_from_text(text, source="bad.json")


def test_not_json_names_the_line():
    with pytest.raises(RubricImportError, match=r"^x\.json:2: not valid JSON"):
        rubric_from_text('{\n "rubric": ,\n}', source="x.json")


def test_file_loading_uses_the_file_name_as_slug():
    if not EXAMPLE.exists():
        pytest.skip("example missing")
    assert rubric_from_file(EXAMPLE).spec.slug == "order-status"
    assert isinstance(SpecError("x"), ValueError)

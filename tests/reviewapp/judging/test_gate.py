"""The gate command: pass rates per criterion, thresholds from spec or command line, unresolved apart."""

import json

import pytest
from django.core.management import call_command

from reviewapp.judging.selectors.sweeps import gate_report
from reviewapp.models import Sweep
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


def gate(*args):
    """Run the gate command; return (exit code, stdout)."""
    from io import StringIO

    out = StringIO()
    try:
        call_command("gate", *args, stdout=out)
    except SystemExit as exc:
        return exc.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def rubric_sweep(scripted_llm, run_sweep):
    judge = store_judge("turn_rubric")
    texts = [f"reply {i}" for i in range(7)] + ["reply x [[fail:addresses_request]]", "reply y [[unsure]]"]
    texts.append("reply z [[fail:clear_next_step]]")
    dataset = dataset_of_calls("rubric", {f"c{i}": ("en", [text]) for i, text in enumerate(texts)})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


def rows(report):
    return {row.criterion: row for row in report.rows}


def test_rubric_pass_rates_per_criterion_with_unresolved_apart(rubric_sweep):
    report = rows(gate_report(sweep=rubric_sweep))
    addresses = report["addresses_request"]
    assert (addresses.targets, addresses.passed, addresses.failed, addresses.unresolved) == (10, 8, 1, 1)
    assert addresses.pass_rate == 0.8  # unresolved never counts as a pass
    assert addresses.resolved_pass_rate == round(8 / 9, 4)
    assert addresses.threshold == 1.0 and addresses.required  # the criterion's own threshold
    assert report["clear_next_step"].required is False
    assert report["overall"].threshold is None and report["overall"].passed == 8


def test_gate_fails_on_a_required_criterion_and_passes_with_a_lower_threshold(rubric_sweep):
    code, out = gate("--sweep", str(rubric_sweep.pk))
    assert code == 1
    assert "Gate FAILED" in out and "addresses_request" in out

    code, out = gate(
        "--sweep",
        str(rubric_sweep.pk),
        "--threshold",
        "addresses_request=0.8",
        "--threshold",
        "no_unsupported_claims=0.8",
        "--threshold",
        "turn_rubric:in_expected_language=0.75",
        "--json",
    )
    assert code == 0, out
    report = json.loads(out)
    assert report["passed"] is True
    by_name = {row["criterion"]: row for row in report["rows"]}
    assert by_name["addresses_request"]["threshold_source"] == "command line"
    assert by_name["in_expected_language"]["threshold"] == 0.75


def test_gate_reads_the_spec_gate_section_for_the_judge_pass_rate(scripted_llm, run_sweep):
    judge = store_judge("conciseness", params={"temperature": 0, "gate": {"overall": 0.9}})
    dataset = dataset_of_calls(
        "gate2", {f"c{i}": ("en", [f"t {i}" + (" [[r=1]]" if i < 2 else "")]) for i in range(10)}
    )
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    code, out = gate("--sweep", str(sweep.pk), "--json")
    row = json.loads(out)["rows"][0]
    assert (row["criterion"], row["pass_rate"], row["threshold"], row["threshold_source"]) == (
        "overall",
        0.8,
        0.9,
        "spec gate",
    )
    assert code == 1
    code, _ = gate("--sweep", str(sweep.pk), "--threshold", "overall=0.8")
    assert code == 0


def test_gate_fails_while_the_sweep_is_not_done(rubric_sweep):
    Sweep.objects.filter(pk=rubric_sweep.pk).update(status=Sweep.Status.RUNNING)
    code, out = gate("--sweep", str(rubric_sweep.pk), "--threshold", "addresses_request=0.1")
    assert code == 1
    assert "not done" in out


def test_gate_rejects_a_malformed_threshold(rubric_sweep):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="CRITERION=RATE"):
        gate("--sweep", str(rubric_sweep.pk), "--threshold", "0.8")
    with pytest.raises(CommandError, match="between 0 and 1"):
        gate("--sweep", str(rubric_sweep.pk), "--threshold", "overall=80")

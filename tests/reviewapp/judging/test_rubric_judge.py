"""The rubric generator's example as a rubric judge: load_judges, golden examples, gate kill criteria,
edge-case tags and the coverage matrix (command and selector)."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from statsmodels.stats.proportion import proportion_confint

from reviewapp.judging.services.rubrics import variance_check_params
from reviewapp.models import (
    Conversation,
    Dataset,
    EdgeCase,
    EdgeCaseTag,
    GoldLabel,
    Judge,
    JudgeVersion,
    Sweep,
    Turn,
    Verdict,
)
from reviewapp.quality.selectors.coverage import coverage_matrix
from reviewapp.quality.services import edge_cases as edge_service

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[3] / "../shared/data/rubric-generator/order-status.json"
REQUIRED = [
    "correct_order_status_returned",
    "accurate_eta_or_delivery_date_provided",
    "tracking_link_always_included",
    "no_hallucination_on_invalid_order_id",
    "out_of_scope_intent_handled_with_handoff",
]
OPTIONAL = ["conciseness_max_2_sentences_for_valid_lookups", "response_length_max_2_sentences"]


@pytest.fixture
def rubric_judge():
    if not EXAMPLE.exists():
        pytest.skip(f"{EXAMPLE} is missing")
    out = StringIO()
    call_command("load_judges", str(EXAMPLE), "--slug", "order-status", stdout=out)
    assert "7 criteria (5 required), 14 golden examples, 8 edge cases, 3 kill criteria" in out.getvalue()
    return JudgeVersion.objects.get(judge__slug="order-status")


def run(command, *args):
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command(command, *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_load_judges_stores_the_rubric_judge_once(rubric_judge):
    judge = rubric_judge.judge
    assert judge.scale == Judge.Scale.RUBRIC
    criteria = rubric_judge.spec["criteria"]
    assert [c["name"] for c in criteria if c["required"]] == REQUIRED
    assert [c["name"] for c in criteria if not c["required"]] == OPTIONAL
    gate = rubric_judge.spec["params"]["gate"]
    assert [gate[name]["threshold"] for name in REQUIRED] == [1.0, 1.0, 0.95, 1.0, 1.0]
    assert [gate[name]["threshold"] for name in OPTIONAL] == [0.9, 0.9]
    assert EdgeCase.objects.filter(judge=judge).count() == 8
    code, out, _ = run("load_judges", str(EXAMPLE), "--slug", "order-status")
    assert code == 0 and "unchanged" in out
    assert JudgeVersion.objects.filter(judge=judge).count() == 1


def test_a_broken_rubric_is_refused_and_nothing_is_stored(tmp_path):
    if not EXAMPLE.exists():
        pytest.skip("example missing")
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["rubric"]["criteria"][4]["threshold"] = "usually"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CommandError, match=r"bad\.json:\d+: rubric\.criteria\[4\]\.threshold"):
        call_command("load_judges", str(bad), stdout=StringIO())
    assert not Judge.objects.exists() and not EdgeCase.objects.exists()


def test_golden_examples_run_as_tests_of_the_rendered_prompt(rubric_judge):
    code, out, _ = run("check_golden", "--judge", "order-status")
    assert code == 0
    assert "14 of 14 golden examples pass." in out


def test_sweeps_of_the_rubric_judge_carry_its_variance_check(rubric_judge):
    assert variance_check_params([rubric_judge]) == {
        "variance_threshold": 0.15,
        "variance_check": {"repeats": 2, "sample_rate": 0.1},
    }


def _gold_set(kind=Dataset.Kind.VALIDATION, turns=20):
    dataset = Dataset.objects.create(name=f"orders-{kind}", kind=kind)
    conversation = Conversation.objects.create(dataset=dataset, external_id="c1", language="en")
    return [
        Turn.objects.create(conversation=conversation, position=i, role=Turn.Role.AGENT, text=f"Order #{i} shipped")
        for i in range(turns)
    ]


def _sweep(version, turns, failing: dict[str, int], *, kind=Dataset.Kind.VALIDATION, run_index=0, sweep=None):
    """A finished sweep where criterion NAME fails on its first failing[NAME] turns."""
    sweep = sweep or Sweep.objects.create(dataset=turns[0].conversation.dataset, status=Sweep.Status.DONE)
    sweep.judge_versions.add(version)
    names = REQUIRED + OPTIONAL
    for index, turn in enumerate(turns):
        scores = {name: 0.0 if index < failing.get(name, 0) else 1.0 for name in names}
        passed = all(scores[n] == 1.0 for n in REQUIRED)
        Verdict.objects.create(
            sweep=sweep,
            judge_version=version,
            conversation=turn.conversation,
            turn=turn,
            run_index=run_index,
            tier=Verdict.Tier.LLM,
            status=Verdict.Status.RESOLVED,
            passed=passed,
            sub_scores=scores,
        )
    return sweep


def test_gate_exits_with_the_kill_criterion_own_code_and_message(rubric_judge):
    turns = _gold_set()
    sweep = _sweep(rubric_judge, turns, {"tracking_link_always_included": 1})  # 95% = its own threshold
    code, out, _ = run("gate", "--sweep", str(sweep.pk))
    # 19/20 = 95% meets the criterion's threshold but the golden-set kill criterion wants 100%.
    assert code == 2
    assert "Kill criterion (order-status@" in out
    assert "Any required criterion drops below 100% pass on golden set → block PR" in out
    assert "tracking_link_always_included 95.0%" in out


def test_gate_passes_when_every_required_criterion_passes_on_the_golden_set(rubric_judge):
    sweep = _sweep(rubric_judge, _gold_set(), {"response_length_max_2_sentences": 1})
    code, out, _ = run("gate", "--sweep", str(sweep.pk))
    assert code == 0, out
    assert "Gate passed." in out


def test_production_kill_criterion_pages_on_call_below_95(rubric_judge):
    turns = _gold_set(Dataset.Kind.RUN)
    sweep = _sweep(rubric_judge, turns, {"accurate_eta_or_delivery_date_provided": 2}, kind=Dataset.Kind.RUN)
    code, out, _ = run("gate", "--sweep", str(sweep.pk), "--json")
    report = json.loads(out)
    assert code == 3
    fired = report["kill_criteria"]["fired"]
    assert [f["action"] for f in fired] == ["page oncall, roll back last deploy"]
    assert fired[0]["criteria"] == [{"criterion": "accurate_eta_or_delivery_date_provided", "rate": 0.9}]


def test_the_variance_kill_criterion_holds_the_eval(rubric_judge):
    turns = _gold_set(turns=10)
    sweep = _sweep(rubric_judge, turns, {})
    _sweep(rubric_judge, turns, {"correct_order_status_returned": 2}, run_index=1, sweep=sweep)
    from reviewapp.triage.services.triage import triage_run

    sweep.params = {**sweep.params, **variance_check_params([rubric_judge])}
    sweep.save()
    triage_run(sweep=sweep)
    sweep.refresh_from_db()
    code, out, _ = run("gate", "--sweep", str(sweep.pk))
    assert code == 4
    assert "Judge disagreement >15% on any criterion in 2\u00d7 variance check" in out
    assert "correct_order_status_returned 20.0%" in out


def test_edge_cases_tag_by_rule_and_by_hand_and_the_matrix_counts_them(rubric_judge, make_user):
    judge = rubric_judge.judge
    turns = _gold_set(turns=4)
    conversation = turns[0].conversation
    other = Conversation.objects.create(dataset=conversation.dataset, external_id="c2", language="en")
    Turn.objects.create(conversation=other, position=0, role=Turn.Role.USER, text="Where is my order?")
    Turn.objects.create(conversation=other, position=1, role=Turn.Role.AGENT, text="Which order number?")
    no_id = EdgeCase.objects.get(judge=judge, position=4)
    lost = EdgeCase.objects.get(judge=judge, position=1)
    assert edge_service.edge_case_rule_apply(edge_case=no_id, pattern=r"where is my order\?") == 1
    edge_service.edge_case_tag(edge_case=lost, conversation=conversation, user=make_user("lea", role="lead"))
    assert EdgeCaseTag.objects.get(edge_case=no_id).source == EdgeCaseTag.Source.RULE
    with pytest.raises(edge_service.EdgeCaseError, match="not a regular expression"):
        edge_service.edge_case_rule_apply(edge_case=no_id, pattern="(")

    _sweep(rubric_judge, turns, {"correct_order_status_returned": 1})
    GoldLabel.objects.create(judge=judge, conversation=conversation, turn=turns[0], source="adjudicated", passed=False)

    matrix = coverage_matrix(judge=judge)
    assert len(matrix.rows) == 8
    row = matrix.rows[0]
    assert row.conversations == 1
    cell = next(c for c in row.cells if c.criterion == "correct_order_status_returned")
    assert (cell.targeted, cell.turns, cell.scored, cell.passed, cell.labelled) == (True, 4, 4, 3, 1)
    assert cell.interval == pytest.approx(proportion_confint(3, 4, alpha=0.05, method="wilson"))
    assert not cell.sufficient
    assert matrix.rows[3].cells[0].turns == 1 and matrix.rows[3].cells[0].scored == 0

    code, out, _ = run("coverage", "--judge", "order-status", "--json")
    data = json.loads(out)
    assert code == 0 and len(data["cases"]) == 8
    first = data["cases"][0]["cells"][0]
    assert first["evidence"] == "insufficient evidence" and first["human_labelled"] == 1
    code, out, _ = run("coverage", "--judge", "order-status")
    assert "8 edge cases" in out and "insufficient evidence" in out


def test_the_sweep_command_takes_its_repeats_from_the_rubric_variance_check(
    rubric_judge, monkeypatch, django_capture_on_commit_callbacks
):
    _gold_set(turns=3)
    monkeypatch.setattr("reviewapp.judging.tasks.sweeps.sweep_dispatch.delay", lambda sweep_id: None)

    def sweep(*options):
        with django_capture_on_commit_callbacks(execute=True):
            call_command(
                "sweep",
                "--dataset",
                "orders-validation",
                "--judge",
                "order-status",
                *options,
                "--no-wait",
                stdout=StringIO(),
                stderr=StringIO(),
            )

    sweep()
    started = Sweep.objects.get()
    assert (started.repeats, started.variance_sample_rate) == (2, 0.1)
    assert started.params["variance_threshold"] == 0.15
    sweep("--repeats", "1")
    assert Sweep.objects.order_by("-pk").first().repeats == 1


class GoldenLLM:
    """Answers a rendered golden example: every criterion met, except the one a fail example tests
    (when `honest`); `unsure` answers uncertain on everything."""

    def __init__(self, spec_params, *, honest=True, unsure=False):
        self.fail_texts = {g["text"]: g["criterion"] for g in spec_params["golden_examples"] if g["expected"] == "fail"}
        self.criteria = list(spec_params["gate"])
        self.honest, self.unsure = honest, unsure

    def complete(self, *, model, system, user, params=None):
        from scoring.llm import LLMReply

        if self.unsure:
            return LLMReply('{"uncertain": true, "explanation": "cannot tell"}', 10, 5, 5, 1, "")
        text = user.split("## Response to check (turn 0, agent)\n", 1)[1].split("\n\n## Checklist", 1)[0]
        failing = self.fail_texts.get(text) if self.honest else None
        criteria = {n: {"score": 0 if n == failing else 1, "passed": n != failing} for n in self.criteria}
        return LLMReply(json.dumps({"criteria": criteria, "explanation": "checked"}), 10, 5, 5, 1, "")


def test_golden_examples_through_the_llm(rubric_judge, monkeypatch):
    from reviewapp.models import JudgeCall

    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: None)
    with pytest.raises(CommandError, match="--llm needs an LLM endpoint"):
        call_command("check_golden", "--judge", "order-status", "--llm", stdout=StringIO())

    params = rubric_judge.spec["params"]
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: GoldenLLM(params))
    code, out, _ = run("check_golden", "--judge", "order-status", "--llm")
    assert code == 0 and "14 of 14 golden examples pass." in out
    assert JudgeCall.objects.filter(judge_version=rubric_judge, sweep__isnull=True).count() == 14

    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: GoldenLLM(params, honest=False))
    code, out, _ = run("check_golden", "--judge", "order-status", "--llm")
    assert code == 1 and "7 of 14 golden examples pass." in out
    assert "the judge says pass on a fail example" in out

    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: GoldenLLM(params, unsure=True))
    code, out, _ = run("check_golden", "--judge", "order-status", "--llm")
    assert code == 1 and "0 of 14 golden examples pass." in out and "unresolved answer" in out

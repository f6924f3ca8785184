"""EVA's runs and revisions: an imported EVA run rendered as EVA formats it, judges at other grains, the
commented set re-scored at two revisions against a rerun, and per-conversation prompts in EVA's format."""

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.judging.services import judges as judges_service
from reviewapp.judging.services import sweep_scope
from reviewapp.models import Comment, GoldLabel, JudgeVersion, Turn, Verdict
from scoring import eva, eva_variables
from scoring.llm import LLMClient
from tests.llm_server import run_llm_server
from tests.reviewapp.judging.eva_support import (
    FIXTURES,
    JUDGE_YAML,
    JUDGE_YAML_OLD,
    RUN_RECORDS,
    load,
)
from tests.shipped import JUDGES

pytestmark = pytest.mark.django_db


def test_an_imported_eva_run_renders_the_trace_exactly_as_eva_formats_its_own_conversation_trace():
    from reviewapp.judging.services import judge_inputs
    from reviewapp.models import Conversation

    dataset_import(path=RUN_RECORDS, fmt="eva-run", dataset_name="eva-run")
    conversation = Conversation.objects.get(external_id="1.1.2")
    turns = list(conversation.turns.order_by("position"))
    context = json.loads((RUN_RECORDS / "1.1.2" / "expected_processor_context.json").read_text(encoding="utf-8"))

    record = judge_inputs.eva_record(conversation, turns)
    values, missing = eva_variables.build_variables("conciseness", ["conversation_turns"], record)
    _, faithfulness_missing = eva_variables.build_variables(
        "faithfulness", ["conversation_trace", "current_date_time", "agent_role"], record
    )

    assert missing == []
    assert values["conversation_turns"] == eva_variables.format_transcript_with_tools(context["conversation_trace"])
    # EVA numbers the greeting 0 and user turn k with the assistant's answer to it: both roles share ids.
    assert record.turn_ids(eva.AGENT) == sorted(int(k) for k in context["intended_assistant_turns"])
    assert record.turn_ids(eva.USER) == sorted(int(k) for k in context["transcribed_user_turns"])
    assert record.speech(eva.USER, "intended") == {int(k): v for k, v in context["intended_user_turns"].items()}
    # The run record holds no agent config and no date: named, never invented.
    assert faithfulness_missing == ["current_date_time", "agent_role"]


def test_a_judge_at_another_grain_is_refused_whole_and_only_loads_the_rest():
    call_command("load_judges", str(JUDGES), stdout=StringIO())  # Tribunal's faithfulness is turn-level
    before = JudgeVersion.objects.count()

    with pytest.raises(
        CommandError, match="judge faithfulness is stored turn-level on the ordinal scale, but faithfulness@eva-997ae97"
    ):
        load(JUDGE_YAML, "eva-997ae97")
    assert JudgeVersion.objects.count() == before

    out = StringIO()
    call_command(
        "load_judges", str(JUDGE_YAML), "--version", "eva-997ae97", "--only", "conciseness,speakability", stdout=out
    )
    assert set(JudgeVersion.objects.filter(version="eva-997ae97").values_list("judge__slug", flat=True)) == {
        "conciseness",
        "speakability",
    }
    with pytest.raises(CommandError, match="has no judge nope"):
        call_command("load_judges", str(JUDGE_YAML), "--only", "nope")


@pytest.mark.django_db(transaction=True)
def test_faithfulness_over_an_eva_run_takes_the_agent_config_and_the_dataset_date_from_the_command_line(endpoint):
    dataset_import(path=RUN_RECORDS, fmt="eva-run", dataset_name="eva-run")
    load(JUDGE_YAML, "eva-997ae97")
    base = ["sweep", "--dataset", "eva-run", "--judge", "faithfulness@eva-997ae97", "--eager", "--qa-sample", "0"]

    with pytest.raises(CommandError, match=r"current_date_time \(missing in every record\)"):
        call_command(*base, "--eva-agent", str(FIXTURES / "airline_agent.yaml"), stdout=StringIO(), stderr=StringIO())
    assert endpoint.requests == []

    out = StringIO()
    call_command(
        *base,
        "--eva-agent",
        str(FIXTURES / "airline_agent.yaml"),
        "--eva-dataset",
        str(FIXTURES / "airline_dataset.1.1.2.json"),
        stdout=out,
        stderr=StringIO(),
    )

    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (result["status"], result["verdicts"], result["unresolved"]) == ("done", 1, 0)
    (prompt,) = [r["messages"][-1]["content"] for r in endpoint.requests]
    assert "2026-03-17 10:45 CST" in prompt
    assert "You are a voice agent for SkyWay Airlines" in prompt
    context = json.loads((RUN_RECORDS / "1.1.2" / "expected_processor_context.json").read_text(encoding="utf-8"))
    assert eva_variables.format_transcript_with_tools(context["conversation_trace"]) in prompt


def test_a_turn_the_judge_did_not_rate_is_left_out_of_the_gate_and_the_queue(commented, monkeypatch, run_sweep):
    from reviewapp.judging.selectors import sweeps as sweep_selectors
    from reviewapp.models import ReviewItem

    def answer(body):
        prompt = body["messages"][-1]["content"]
        turn_ids = [int(t) for t in re.findall(r"^Turn (\d+):", prompt, re.MULTILINE)]
        return json.dumps([{"turn_id": t, "rating": None if t == 1 else 3, "failure_modes": []} for t in turn_ids])

    version, conversation, agent_turns = commented
    with run_llm_server(responder=answer) as server:
        client = LLMClient(base_url=server.base_url, api_key="test", timeout_s=10, max_attempts=1)
        monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
        sweep = run_sweep(
            dataset=conversation.dataset,
            judge_versions=[version],
            scope=sweep_scope.scope_parse("commented"),
            qa_sample=0,
        )

    statuses = dict(Verdict.objects.filter(sweep=sweep).values_list("turn__position", "status"))
    assert statuses[2] == Verdict.Status.NOT_RATED  # agent turn 2 answers user turn 1: EVA turn 1
    assert set(statuses.values()) == {Verdict.Status.NOT_RATED, Verdict.Status.RESOLVED}
    assert sweep.unresolved == 0
    (row,) = sweep_selectors.gate_report(sweep=sweep, overrides={}).rows
    assert (row.targets, row.unresolved) == (len(agent_turns) - 1, 0)
    assert not ReviewItem.objects.filter(turn__position=2, turn__conversation=conversation).exists()


def test_a_tribunal_judge_without_bounds_in_its_spec_never_stores_an_answer_outside_its_judges_scale(
    monkeypatch, run_sweep, unbounded_version
):
    from tests.factories import dataset_of_calls
    from tests.fake_llms import ScriptedLLM

    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: ScriptedLLM())
    dataset = dataset_of_calls("bounds", {"c1": ("en", ["Fine [[r=4]]"]), "c2": ("en", ["Far out [[oob]]"])})

    sweep = run_sweep(dataset=dataset, judge_versions=[unbounded_version], qa_sample=0)

    verdicts = {v.turn.text: v for v in Verdict.objects.filter(sweep=sweep).select_related("turn")}
    assert (verdicts["Fine [[r=4]]"].status, verdicts["Fine [[r=4]]"].rating) == ("resolved", 4.0)
    far = verdicts["Far out [[oob]]"]  # the scripted judge answers 9
    assert (far.status, far.rating) == ("unresolved", None)
    assert "outside the scale 1..5" in far.explanation


def test_an_eva_audio_judge_cannot_run_without_the_audio_its_answer_rates():
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="tts_fidelity", version="eva-997ae97")
    assert version.spec["needs_audio"] is True

    # Loaded from judge.yaml it listens, so it runs (its calls carry the audio: test_audio_judges).
    assert judges_service.runnable_spec(version).needs_audio

    # The same spec told it sends no audio at all is refused for that reason.
    deaf = dict(version.spec)
    del deaf["needs_audio"]
    version.spec = deaf
    with pytest.raises(judges_service.JudgeNotRunnable, match="listens to the audio, and this spec sends none"):
        judges_service.runnable_spec(version)


def test_the_commented_set_rescored_at_two_revisions_shows_its_movement_against_a_rerun(
    conciseness_set, endpoint, run_sweep, client, make_user
):
    load(JUDGE_YAML_OLD, "eva-dcb3750b")
    load(JUDGE_YAML, "eva-997ae97")
    before = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-dcb3750b")
    after = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    dataset = GoldLabel.objects.first().conversation.dataset
    author = make_user("rita", languages=["en"])
    commented = list(Turn.objects.filter(role="agent").order_by("id")[:40])
    for turn in commented:
        Comment.objects.create(turn=turn, author=author, body="look")
    scope = sweep_scope.scope_parse("commented")

    first = run_sweep(
        dataset=dataset, judge_versions=[before], scope=scope, repeats=2, variance_sample=1.0, qa_sample=0
    )
    second = run_sweep(dataset=dataset, judge_versions=[after], scope=scope, qa_sample=0)

    assert first.verdicts_written == 2 * len(commented) and second.verdicts_written == len(commented)
    client.force_login(make_user("lea", role="lead"))
    page = client.get(
        reverse("compare_versions", args=["conciseness"]), {"a": "eva-dcb3750b", "b": "eva-997ae97"}
    ).content.decode()
    # The two revisions' prompts differ, so the endpoint's hashed ratings move some turns; the rerun of A
    # is the same prompt, so it never moves: the noise baseline the page compares against.
    moved = sum(
        a != b
        for a, b in zip(
            Verdict.objects.filter(sweep=first, run_index=0).order_by("turn_id").values_list("rating", flat=True),
            Verdict.objects.filter(sweep=second).order_by("turn_id").values_list("rating", flat=True),
            strict=True,
        )
    )
    assert moved > 0
    noise = re.search(r"Noise: (\d+) of (\d+) moved on a rerun of A", page)
    assert noise is not None and noise.group(1) == "0" and int(noise.group(2)) > 0, noise
    assert "eva-997ae97 moves more than noise" in page


def test_an_eva_judge_renders_one_prompt_per_conversation_in_eva_format():
    from reviewapp.judging.services import judge_inputs
    from scoring.specs import load_specs

    (spec,) = [s for s in load_specs(JUDGE_YAML) if s.slug == "conciseness"]
    conversation, turns = judge_inputs.sample_conversations()[0]

    (prompt,) = judge_inputs.render_target_prompts(spec, conversation, turns)

    assert prompt["target"] == "conversation"
    assert f"Turn 1:\n  user: {turns[0].text}\n  assistant: {turns[1].intended_text}\n\nTurn 2:" in prompt["user"]

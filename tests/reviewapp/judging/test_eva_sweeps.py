"""EVA's judges over EVA's files: judge.yaml at two revisions, the real conciseness validation set, and the
local endpoint answering as EVA's judges do (the real openai client over HTTP, Celery eager, SQLite)."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import accuracy_score, f1_score

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.judging.services import judges as judges_service
from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services.sweeps import SweepError
from reviewapp.models import Comment, GoldLabel, Judge, JudgeCall, JudgeVersion, Turn, Verdict
from scoring import eva, eva_variables
from scoring.llm import LLMClient
from tests.llm_server import run_llm_server
from tests.reviewapp.judging.eva_support import (
    CONCISENESS_SET,
    conciseness_report,
    eva_turn_of_agent_position,
    gold_and_predicted,
    ratings_given,
    ratings_stored,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "eva"
JUDGE_YAML = FIXTURES / "judge.yaml"
JUDGE_YAML_OLD = FIXTURES / "judge.dcb3750b.yaml"

pytestmark = pytest.mark.django_db


def load(path, label):
    out = StringIO()
    call_command("load_judges", str(path), "--version", label, stdout=out)
    return out.getvalue()


@pytest.fixture
def conciseness_set():
    summary = dataset_import(path=CONCISENESS_SET, fmt="eva-validation", dataset_name="eva-conciseness")
    assert summary.labels == 479
    return summary


def test_conciseness_sweep_stores_one_turn_verdict_per_gold_turn_with_the_rating_the_endpoint_gave(
    conciseness_set, endpoint, run_sweep
):
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    assert (version.judge.level, version.judge.scale, version.judge.scale_min, version.judge.scale_max) == (
        "turn",
        "ordinal",
        1,
        3,
    )

    sweep = run_sweep(dataset=version.judge.gold_labels.first().conversation.dataset, judge_versions=[version])

    assert sweep.status == "done"
    # One call per conversation, as EVA makes it, and one turn verdict per labelled agent turn.
    assert len(endpoint.requests) == 100 == JudgeCall.objects.filter(sweep=sweep).count()
    verdicts = list(Verdict.objects.filter(sweep=sweep).select_related("turn", "conversation", "call"))
    assert len(verdicts) == 479
    assert {(v.status, v.tier, v.turn.role) for v in verdicts} == {("resolved", "llm", "agent")}

    given = ratings_given(endpoint.responses)
    assert ratings_stored(verdicts) == given
    # Every verdict of a conversation points at its one archived call.
    assert len({v.call_id for v in verdicts}) == 100

    gold, predicted = gold_and_predicted(given)
    report = conciseness_report()
    assert report["n"] == 479
    assert report["accuracy"]["value"] == pytest.approx(accuracy_score(gold, predicted), abs=1e-4)
    assert report["macro_f1"]["value"] == pytest.approx(
        f1_score(gold, predicted, average="macro", labels=["1", "2", "3"], zero_division=0), abs=1e-4
    )


def test_an_eva_answer_outside_the_scale_is_never_stored_as_resolved(conciseness_set, endpoint, run_sweep):
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    endpoint.set_behaviour("out_of_range")

    sweep = run_sweep(dataset=GoldLabel.objects.first().conversation.dataset, judge_versions=[version])

    statuses = list(Verdict.objects.filter(sweep=sweep).values_list("status", "rating", "explanation"))
    assert len(statuses) == 479
    assert {(status, rating) for status, rating, _ in statuses} == {("unresolved", None)}
    assert all("outside the scale 1..3" in explanation for _, _, explanation in statuses)
    # The archive keeps the whole answer with each unresolved turn.
    assert all('"rating": 42' in raw for raw in Verdict.objects.filter(sweep=sweep).values_list("raw_text", flat=True))


def test_judge_yaml_at_two_revisions_is_two_versions_side_by_side_with_their_sources():
    load(JUDGE_YAML, "eva-997ae97")
    load(JUDGE_YAML_OLD, "eva-dcb3750b")

    versions = dict(JudgeVersion.objects.filter(judge__slug="conciseness").values_list("version", "source"))
    assert set(versions) == {"eva-997ae97", "eva-dcb3750b"}
    assert versions["eva-dcb3750b"].endswith("judge.dcb3750b.yaml (loaded as eva-dcb3750b)")
    faithfulness = Judge.objects.get(slug="faithfulness")
    assert (faithfulness.level, faithfulness.scale, faithfulness.scale_min, faithfulness.scale_max) == (
        "conversation",
        "ordinal",
        1,
        3,
    )
    # Loading the same file again under its label stores nothing new.
    assert "created" not in load(JUDGE_YAML, "eva-997ae97")


def test_a_slug_without_version_takes_the_newest_version_that_can_run(conciseness_set):
    load(JUDGE_YAML, "eva-997ae97")
    Judge.objects.create(slug="placeholder_judge", scale="ordinal")
    placeholder_judge = Judge.objects.get(slug="placeholder_judge")
    JudgeVersion.objects.create(
        judge=placeholder_judge, version="imported-1", spec={"imported": True}, spec_hash="0" * 64
    )
    conciseness = Judge.objects.get(slug="conciseness")
    JudgeVersion.objects.create(
        judge=conciseness, version="imported-late", spec={"imported": True, "judge": "conciseness"}, spec_hash="1" * 64
    )

    assert judges_service.judge_version_for("conciseness").version == "eva-997ae97"
    with pytest.raises(judges_service.JudgeLookupError, match="imported placeholder"):
        judges_service.judge_version_for("placeholder_judge")


def test_an_ordinal_judge_with_no_known_scale_cannot_be_swept(conciseness_set, run_sweep):
    load(FIXTURES / "judge.yaml", "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="transcription_accuracy_key_entities__audio_native")
    dataset = GoldLabel.objects.first().conversation.dataset

    with pytest.raises(SweepError, match="no scale: add one"):
        run_sweep(dataset=dataset, judge_versions=[version])
    with pytest.raises(CommandError, match="no version that can run"):
        call_command("sweep", "--dataset", dataset.name, "--judge", version.judge.slug, "--eager")


@pytest.fixture
def unbounded_version():
    """Version v1 of a turn judge scaled 1..5 whose spec gives no bounds of its own."""
    judge = Judge.objects.create(slug="bounded", level="turn", scale="ordinal", scale_min=1, scale_max=5)
    spec = {
        "slug": "bounded",
        "version": "v1",
        "level": "turn",
        "scale": "ordinal",
        "scale_min": None,
        "scale_max": None,
        "user_template": "Rate {turn_text}",
    }
    return JudgeVersion.objects.create(judge=judge, version="v1", spec=spec, spec_hash="2" * 64)


def test_a_tribunal_spec_without_bounds_takes_them_from_its_judge(unbounded_version):
    runnable = judges_service.runnable_spec(unbounded_version)

    assert (runnable.scale_min, runnable.scale_max) == (1.0, 5.0)
    Judge.objects.filter(pk=unbounded_version.judge_id).update(scale_min=None, scale_max=None)
    unbounded_version.refresh_from_db()
    with pytest.raises(judges_service.JudgeNotRunnable, match="no scale: add one"):
        judges_service.runnable_spec(unbounded_version)


def faithfulness_dataset():
    summary = dataset_import(path=FIXTURES / "faithfulness.jsonl", fmt="eva-validation", dataset_name="eva-faith")
    return summary


def test_faithfulness_names_before_any_call_the_variables_records_cannot_provide(endpoint, run_sweep):
    faithfulness_dataset()
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="faithfulness", version="eva-997ae97")
    dataset = version.judge.gold_labels.first().conversation.dataset

    with pytest.raises(SweepError) as raised:
        run_sweep(dataset=dataset, judge_versions=[version])

    message = str(raised.value)
    for name in ("agent_instructions", "agent_role", "available_tools"):
        assert f"{name} (missing in every record)" in message
    assert "current_date_time (missing in 3 of 4 records" in message
    assert endpoint.requests == []


def test_faithfulness_with_the_agent_config_renders_calls_and_resolves_every_conversation(endpoint, run_sweep):
    faithfulness_dataset()
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="faithfulness", version="eva-997ae97")
    dataset = version.judge.gold_labels.first().conversation.dataset
    agent = eva_variables.agent_variables(yaml.safe_load((FIXTURES / "airline_agent.yaml").read_text(encoding="utf-8")))

    sweep = run_sweep(
        dataset=dataset,
        judge_versions=[version],
        variables={**agent, "current_date_time": "2026-03-17 10:45 CST"},
    )

    verdicts = list(Verdict.objects.filter(sweep=sweep).select_related("call"))
    assert len(verdicts) == 4 == len(endpoint.requests)
    assert {(v.status, v.turn_id is None) for v in verdicts} == {("resolved", True)}
    prompts = [r["messages"][-1]["content"] for r in endpoint.requests]
    assert all(agent["agent_role"] in p for p in prompts)
    # The record's own current_date_time wins over the sweep's.
    record_time = json.loads((FIXTURES / "faithfulness.jsonl").read_text().splitlines()[0])["current_date_time"]
    assert sum(record_time in p for p in prompts) == 1
    answers = {json.loads(text)["rating"]: json.loads(text) for _, text in endpoint.responses}
    for verdict in verdicts:
        answer = answers[int(verdict.rating)]
        assert verdict.flags == [name for name, dim in answer["dimensions"].items() if dim["flagged"]]
        assert set(verdict.sub_scores) == set(eva.PROFILES["faithfulness"].dimensions)


def test_sweep_scope_commented_rescores_exactly_the_commented_turns(
    conciseness_set, endpoint, run_sweep, django_user_model
):
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    dataset = GoldLabel.objects.first().conversation.dataset
    author = django_user_model.objects.create_user("reviewer")
    commented = list(Turn.objects.filter(role="agent").order_by("id")[5:12])
    for turn in commented:
        Comment.objects.create(turn=turn, author=author, body="a gloss here")
    Comment.objects.create(turn=Turn.objects.filter(role="user").first(), author=author, body="user turn, not a target")

    sweep = run_sweep(
        dataset=dataset, judge_versions=[version], scope=sweep_scope.scope_parse("commented"), qa_sample=0
    )

    assert sweep.total_targets == len(commented)
    assert sorted(Verdict.objects.filter(sweep=sweep).values_list("turn_id", flat=True)) == sorted(
        t.pk for t in commented
    )
    # One call per conversation holding a commented turn, never one for the others.
    assert len(endpoint.requests) == len({t.conversation_id for t in commented})


def test_key_entity_gold_is_imported_under_the_judge_name_and_the_judge_gets_expected_transcribed_pairs(
    endpoint, run_sweep
):
    summary = dataset_import(path=FIXTURES / "key_entity_transcription.jsonl", fmt="eva-validation", dataset_name="ke")
    load(JUDGE_YAML, "eva-997ae97")
    judge = Judge.objects.get(slug="transcription_accuracy_key_entities")
    assert GoldLabel.objects.filter(judge=judge).count() == summary.labels == 16
    version = JudgeVersion.objects.get(judge=judge, version="eva-997ae97")

    sweep = run_sweep(dataset=GoldLabel.objects.first().conversation.dataset, judge_versions=[version])

    records = [json.loads(line) for line in (FIXTURES / "key_entity_transcription.jsonl").read_text().splitlines()]
    prompts = [r["messages"][-1]["content"] for r in endpoint.requests]
    assert len(prompts) == 2
    said, heard = records[0]["user_tts"][0], records[0]["transcription"][0]
    assert any(f'Turn 0:\nExpected: "{said}"\nTranscribed: "{heard}"' in p for p in prompts)
    verdicts = {
        (v.conversation.external_id, v.turn.position): v
        for v in Verdict.objects.filter(sweep=sweep).select_related("turn", "conversation")
    }
    assert {v.turn.role for v in verdicts.values()} == {"user"}
    assert len(verdicts) == 16
    # The first record has no transcription for its last user turn: EVA does not send it, so it is not rated.
    last = verdicts[("line-1", 7)]
    assert last.status == Verdict.Status.NOT_RATED and last.rating is None
    resolved = [v for v in verdicts.values() if v.status == Verdict.Status.RESOLVED]
    assert len(resolved) == 15
    assert all(v.sub_scores.keys() == {"entity_accuracy"} for v in resolved)


@pytest.fixture
def commented(conciseness_set, django_user_model):
    """EVA's conciseness judge loaded, and a comment on every agent turn of the set's first conversation:
    (version, conversation, its agent turns)."""
    load(JUDGE_YAML, "eva-997ae97")
    version = JudgeVersion.objects.get(judge__slug="conciseness", version="eva-997ae97")
    conversation = GoldLabel.objects.first().conversation
    author = django_user_model.objects.create_user("reviewer")
    agent_turns = list(conversation.turns.filter(role="agent").order_by("position"))
    for turn in agent_turns:
        Comment.objects.create(turn=turn, author=author, body="look")
    return version, conversation, agent_turns


def test_replay_of_a_per_turn_call_shows_each_turn_archived_and_new(commented, endpoint, run_sweep):
    version, conversation, agent_turns = commented
    run_sweep(dataset=conversation.dataset, judge_versions=[version], scope=sweep_scope.scope_parse("commented"))
    call = JudgeCall.objects.get()
    archived = {e["turn_id"]: e["rating"] for e in json.loads(call.raw_response)}
    endpoint.set_behaviour("out_of_range")

    out = StringIO()
    call_command("replay_call", str(call.pk), "--base-url", endpoint.base_url, "--api-key", "k", stdout=out)

    text = out.getvalue()
    assert f"Per turn ({len(agent_turns)} rated):" in text
    for turn in agent_turns:
        turn_id = eva_turn_of_agent_position(turn.position)
        line = next(line for line in text.splitlines() if line.strip().startswith(f"{turn_id} "))
        assert line.split()[1] == str(archived[turn_id])
        assert "rating 42 is outside the scale 1..3" in line and line.endswith("<- moved")


RUN_RECORDS = REPO / ".." / "shared" / "data" / "eva" / "tests" / "artifacts" / "records"


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
    call_command("load_judges", str(REPO / "judges"), stdout=StringIO())  # Tribunal's faithfulness is turn-level
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

"""EVA's judges over EVA's files: judge.yaml at two revisions, the real conciseness validation set, and the
local endpoint answering as EVA's judges do (the real openai client over HTTP, Celery eager, SQLite)."""

import json
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command
from sklearn.metrics import accuracy_score, f1_score

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.judging.services import judges as judges_service
from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services.sweeps import SweepError
from reviewapp.models import Comment, GoldLabel, Judge, JudgeCall, JudgeVersion, Turn, Verdict
from scoring import eva, eva_variables
from tests.reviewapp.judging.eva_support import (
    FIXTURES,
    JUDGE_YAML,
    JUDGE_YAML_OLD,
    conciseness_report,
    eva_turn_of_agent_position,
    gold_and_predicted,
    load,
    ratings_given,
    ratings_stored,
)

pytestmark = pytest.mark.django_db


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

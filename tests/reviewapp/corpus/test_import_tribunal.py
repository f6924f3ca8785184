"""Tribunal's own JSONL and CSV, imported verdicts, bulk writes and the import_data command."""

import csv
import json

import pytest
from django.core.management import CommandError, call_command

from reviewapp.corpus.importers.writer import imported_spec, spec_hash
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict

pytestmark = pytest.mark.django_db


def conversation(external_id, *, turns=3, **extra):
    record = {
        "external_id": external_id,
        "turns": [
            {"role": "user" if i % 2 == 0 else "agent", "text": f"turn {i} of {external_id}"} for i in range(turns)
        ],
    }
    record.update(extra)
    return record


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_jsonl_with_labels_verdicts_and_unknown_fields(tmp_path):
    record = {
        "external_id": "call-1",
        "language": "fr-CA",
        "audio": "https://audio.invalid/call-1.wav",
        "metadata": {"scenario": "rebooking"},
        "channel": "phone",
        "turns": [
            {"role": "user", "text": "Bonjour", "audio_start_ms": 0, "audio_end_ms": 900, "speaker": "caller-7"},
            {
                "position": 1,
                "role": "assistant",
                "text": "Bonjour, comment puis-je vous aider?",
                "intended_text": "Bonjour! Comment puis-je vous aider?",
                "entities": [{"type": "greeting"}],
                "labels": [{"judge": "conciseness", "rating": 3, "failure_modes": []}],
                "verdicts": [
                    {"judge": "conciseness", "version": "v2", "rating": 3, "explanation": "short"},
                    {"judge": "conciseness", "version": "v2", "run_index": 1, "status": "unresolved", "raw_text": "?"},
                ],
            },
        ],
        "labels": [{"judge": "task_done", "passed": True, "failure_modes": "none_seen", "labeller": "ana"}],
        "verdicts": [{"judge": "task_done", "version": "2026-01", "passed": False, "flags": ["late"]}],
    }
    path = write_jsonl(tmp_path / "calls.jsonl", [record])

    summary = dataset_import(path=path, fmt="auto", dataset_name=None, language=None, skip_invalid=False)

    assert summary.as_dict() | {"created": None} == {
        "dataset": "calls",
        "format": "jsonl",
        "conversations": 1,
        "turns": 2,
        "labels": 2,
        "verdicts": 3,
        "skipped": 0,
        "errors": [],
        "created": None,
    }
    assert summary.created == {
        "dataset": 1,
        "judges": 2,
        "judge_versions": 2,
        "sweeps": 1,
        "conversations": 1,
        "turns": 2,
        "labels": 2,
        "verdicts": 3,
    }
    call = Conversation.objects.get(external_id="call-1")
    assert call.language == "fr-CA"
    assert call.metadata == {"scenario": "rebooking", "audio": "https://audio.invalid/call-1.wav", "channel": "phone"}
    agent = call.turns.get(position=1)
    assert agent.role == "agent" and agent.said_differs and agent.entities == [{"type": "greeting"}]
    assert call.turns.get(position=0).metadata == {"speaker": "caller-7"}
    assert call.turns.get(position=0).audio_end_ms == 900

    gold = GoldLabel.objects.get(turn=agent)
    assert (gold.rating, gold.source, gold.judge.level) == (3, "imported", "turn")
    conversation_gold = GoldLabel.objects.get(turn__isnull=True)
    assert conversation_gold.passed is True and conversation_gold.failure_modes == ["none_seen"]
    assert conversation_gold.metadata == {"labeller": "ana"}
    assert Judge.objects.get(slug="task_done").level == "conversation"

    sweep = Sweep.objects.get()
    assert (sweep.kind, sweep.status, sweep.verdicts_written, sweep.dataset.name) == ("import", "done", 3, "calls")
    assert sweep.judge_versions.count() == 2
    version = JudgeVersion.objects.get(judge__slug="conciseness")
    assert version.version == "v2" and version.spec["imported"] is True
    assert version.spec_hash == spec_hash(imported_spec("conciseness", "v2"))
    assert str(path) in version.source
    verdicts = Verdict.objects.filter(turn=agent).order_by("run_index")
    assert [(v.tier, v.status, v.rating, v.raw_text) for v in verdicts] == [
        ("imported", "resolved", 3, ""),
        ("imported", "unresolved", None, "?"),
    ]
    conversation_verdict = Verdict.objects.get(turn__isnull=True)
    assert (conversation_verdict.passed, conversation_verdict.flags) == (False, ["late"])


def test_reimport_of_jsonl_with_verdicts_changes_nothing(tmp_path):
    records = [
        conversation(f"c{i}", labels=[{"judge": "j", "rating": 1}], verdicts=[{"judge": "j", "rating": 2}])
        for i in range(5)
    ]
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    dataset_import(path=path, fmt="jsonl", dataset_name="runs", language=None, skip_invalid=False)
    models = (Conversation, Turn, GoldLabel, Verdict, Sweep, JudgeVersion, Judge)
    counts = [model.objects.count() for model in models]

    again = dataset_import(path=path, fmt="jsonl", dataset_name="runs", language=None, skip_invalid=False)

    assert [model.objects.count() for model in models] == counts
    assert (again.conversations, again.turns, again.labels, again.verdicts) == (5, 15, 5, 5)
    assert set(again.created.values()) == {0}


def test_language_comes_from_the_record_then_the_option_then_en(tmp_path):
    path = write_jsonl(tmp_path / "l.jsonl", [conversation("a", language="ja"), conversation("b")])
    dataset_import(path=path, fmt="auto", dataset_name="one", language="hi", skip_invalid=False)
    dataset_import(path=path, fmt="auto", dataset_name="two", language=None, skip_invalid=False)

    assert Conversation.objects.get(dataset__name="one", external_id="a").language == "ja"
    assert Conversation.objects.get(dataset__name="one", external_id="b").language == "hi"
    assert Conversation.objects.get(dataset__name="two", external_id="b").language == "en"


def test_a_bad_line_rolls_everything_back_and_names_file_line_and_field(tmp_path):
    records = [conversation(f"c{i}") for i in range(4)]
    records[2]["turns"][1]["role"] = "narrator"
    path = write_jsonl(tmp_path / "bad.jsonl", records)

    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=path, fmt="jsonl", dataset_name=None, language=None, skip_invalid=False)

    assert str(failure.value).startswith("bad.jsonl line 3 field turns[1].role: expected one of user, agent")
    assert not Conversation.objects.exists()


def test_a_position_given_twice_is_refused_and_an_absent_one_is_the_list_index(tmp_path):
    twice = conversation("dup")
    twice["turns"][0]["position"], twice["turns"][2]["position"] = 2, 2
    path = write_jsonl(tmp_path / "dup.jsonl", [conversation("ok"), twice])
    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=path, fmt="jsonl", dataset_name=None, language=None, skip_invalid=False)
    assert (
        str(failure.value) == "dup.jsonl line 2 field turns[2].position: position 2 appears twice in this conversation"
    )
    assert not Conversation.objects.exists()

    gaps = conversation("gaps")
    gaps["turns"][1]["position"] = 7
    dataset_import(
        path=write_jsonl(tmp_path / "gaps.jsonl", [gaps]),
        fmt="jsonl",
        dataset_name=None,
        language=None,
        skip_invalid=False,
    )
    assert list(Conversation.objects.get().turns.values_list("position", flat=True)) == [0, 2, 7]


def test_skip_invalid_keeps_the_good_lines(tmp_path):
    records = [conversation(f"c{i}") for i in range(4)]
    records[1]["turns"][0]["audio_start_ms"] = "soon"
    records[3]["external_id"] = "c0"
    path = write_jsonl(tmp_path / "mixed.jsonl", records)

    summary = dataset_import(path=path, fmt="jsonl", dataset_name=None, language=None, skip_invalid=True)

    assert (summary.conversations, summary.skipped) == (2, 2)
    assert [(e["line"], e["field"]) for e in summary.errors] == [(2, "turns[0].audio_start_ms"), (4, "external_id")]
    assert summary.errors[1]["message"] == '"c0" already used on line 1'
    assert sorted(Conversation.objects.values_list("external_id", flat=True)) == ["c0", "c2"]


def test_csv_rows_become_turns_with_gold_and_verdicts(tmp_path):
    path = tmp_path / "review set.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["conversation_id", "language", "position", "role", "text", "intended_text", "entities", "judge",
             "gold_rating", "gold_failure_modes", "judge_version", "verdict_rating", "verdict_explanation", "notes"]
        )  # fmt: skip
        writer.writerow(["k1", "ko", "0", "user", "안녕하세요", "", "", "", "", "", "", "", "", "first"])
        writer.writerow(
            ["k1", "ko", "1", "agent", "네, 말씀하세요", "네, 말씀하세요!", '[{"type": "x"}]', "politeness",
             "2", "formality;tone", "v1", "3", "fine", ""]
        )  # fmt: skip
        writer.writerow(["k2", "", "", "user", "hello", "", "", "", "", "", "", "", "", ""])

    summary = dataset_import(path=path, fmt="auto", dataset_name=None, language=None, skip_invalid=False)

    assert (summary.dataset, summary.format) == ("review set", "csv")
    assert (summary.conversations, summary.turns, summary.labels, summary.verdicts) == (2, 3, 1, 1)
    agent = Turn.objects.get(conversation__external_id="k1", position=1)
    assert agent.intended_text == "네, 말씀하세요!" and agent.entities == [{"type": "x"}]
    assert Turn.objects.get(conversation__external_id="k1", position=0).metadata == {"notes": "first"}
    gold = GoldLabel.objects.get()
    assert (gold.turn_id, gold.rating, gold.failure_modes) == (agent.id, 2, ["formality", "tone"])
    verdict = Verdict.objects.get()
    assert (verdict.turn_id, verdict.rating, verdict.explanation, verdict.judge_version.version) == (
        agent.id,
        3,
        "fine",
        "v1",
    )
    assert Conversation.objects.get(external_id="k2").language == "en"


def test_csv_bad_row_names_its_line_and_column(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text(
        "conversation_id,role,text,judge,gold_rating\nk1,user,hi,,\nk1,agent,hello,politeness,great\n",
        encoding="utf-8",
    )
    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=path, fmt="csv", dataset_name=None, language=None, skip_invalid=False)
    assert str(failure.value) == 'turns.csv line 3 field gold_rating: expected a number, got "great"'

    summary = dataset_import(path=path, fmt="csv", dataset_name=None, language=None, skip_invalid=True)
    assert (summary.conversations, summary.skipped) == (0, 1)


def _write_methods():
    from django.db import connection

    return ["insert", "copy"] if connection.vendor == "postgresql" else ["insert"]


@pytest.mark.parametrize("method", ["insert", "copy"])
def test_query_count_does_not_grow_with_rows(tmp_path, django_assert_max_num_queries, method):
    if method not in _write_methods():
        pytest.skip("COPY is PostgreSQL's")

    def many(prefix, count):
        return [
            conversation(
                f"{prefix}{i}",
                turns=5,
                labels=[{"judge": "j", "rating": 1}],
                verdicts=[{"judge": "j", "version": "v1", "rating": 2}],
            )
            for i in range(count)
        ]

    small = write_jsonl(tmp_path / "small.jsonl", many("s", 5))
    large = write_jsonl(tmp_path / "large.jsonl", many("l", 300))
    dataset_import(path=small, fmt="jsonl", dataset_name="warm-up", language=None, skip_invalid=False, method=method)

    with django_assert_max_num_queries(30) as small_queries:
        dataset_import(path=small, fmt="jsonl", dataset_name="small", language=None, skip_invalid=False, method=method)
    with django_assert_max_num_queries(len(small_queries.captured_queries)) as large_queries:
        summary = dataset_import(
            path=large, fmt="jsonl", dataset_name="large", language=None, skip_invalid=False, method=method
        )

    assert summary.created["turns"] == 1500 and summary.created["verdicts"] == 300
    assert len(large_queries.captured_queries) == len(small_queries.captured_queries)
    sql = [query["sql"] for query in large_queries.captured_queries]
    if method == "copy":
        inserts = [q for q in sql if q.startswith('COPY "reviewapp_turn"')]
        assert not [q for q in sql if q.startswith("INSERT") and 'INTO "reviewapp_turn"' in q]
    else:
        inserts = [q for q in sql if q.startswith("INSERT") and 'INTO "reviewapp_turn"' in q]
    assert len(inserts) == 1


def test_command_prints_one_json_line(tmp_path, capsys):
    path = write_jsonl(tmp_path / "cmd.jsonl", [conversation("a"), conversation("b")])

    call_command("import_data", str(path), "--dataset", "named", "--language", "fr")

    output = capsys.readouterr().out.strip().splitlines()
    assert len(output) == 1
    result = json.loads(output[0])
    assert (result["dataset"], result["conversations"], result["turns"], result["errors"]) == ("named", 2, 6, [])
    assert result["created"]["conversations"] == 2
    assert set(Conversation.objects.values_list("language", flat=True)) == {"fr"}


def test_command_fails_with_the_error_and_writes_nothing(tmp_path, capsys):
    path = write_jsonl(tmp_path / "cmd.jsonl", [conversation("a"), {"turns": []}])

    with pytest.raises(CommandError, match=r"cmd.jsonl line 2 field external_id: is required"):
        call_command("import_data", str(path), "--format", "jsonl")

    result = json.loads(capsys.readouterr().out.strip())
    assert result["errors"] == [{"file": "cmd.jsonl", "line": 2, "field": "external_id", "message": "is required"}]
    assert not Conversation.objects.exists()

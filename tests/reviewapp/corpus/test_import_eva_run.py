"""EVA run folders: the real record 1.1.2, read from the processed context or from the transcript."""

import json
import shutil
from pathlib import Path

import pytest

from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, Turn

REPO = Path(__file__).resolve().parents[3]
RECORDS = REPO / ".." / "shared" / "data" / "eva" / "tests" / "artifacts" / "records"
RECORD = RECORDS / "1.1.2"

pytestmark = pytest.mark.django_db


def _context():
    return json.loads((RECORD / "expected_processor_context.json").read_text(encoding="utf-8"))


def test_record_keeps_intended_and_transcribed_text_tools_and_audio_times():
    summary = dataset_import(path=RECORD, fmt="auto", dataset_name=None, language=None, skip_invalid=False)
    context = _context()

    assert (summary.format, summary.dataset, summary.conversations) == ("eva-run", "1.1.2", 1)
    assert summary.turns == len(context["conversation_trace"]) == 30
    conversation = Conversation.objects.get(external_id="1.1.2")
    assert conversation.metadata["record_id"] == "1.1.2"
    assert conversation.metadata["tools_called"] == json.loads((RECORD / "result.json").read_text())["tools_called"]
    assert conversation.metadata["context"]["assistant_interrupted_turns"] == [3]
    turns = list(conversation.turns.all())
    roles = [t.role for t in turns]
    assert roles.count("tool_call") == 5 and roles.count("tool_response") == 5
    assert roles.count("agent") == 10 and roles.count("user") == 10

    greeting = turns[0]
    assert greeting.role == "agent"
    assert greeting.intended_text == context["intended_assistant_turns"]["0"] == "Hello! How can I help you today?"
    assert greeting.text == context["transcribed_assistant_turns"]["0"] == "Hello, how can I help you today?"
    assert greeting.said_differs
    first_user = turns[1]
    assert first_user.role == "user" and first_user.metadata["eva_turn_id"] == 1
    assert first_user.intended_text == context["intended_user_turns"]["1"]
    assert first_user.text == context["transcribed_user_turns"]["1"]
    assert first_user.intended_text != first_user.text

    # Milliseconds from the first audio timestamp of the conversation (the greeting's start).
    origin = context["audio_timestamps_assistant_turns"]["0"][0][0]
    assert (greeting.audio_start_ms, greeting.audio_end_ms) == (0, round((1772403727.245576 - origin) * 1000))
    start, end = context["audio_timestamps_user_turns"]["1"][0]
    assert (first_user.audio_start_ms, first_user.audio_end_ms) == (
        round((start - origin) * 1000),
        round((end - origin) * 1000),
    )

    first_call = next(t for t in turns if t.role == "tool_call")
    assert json.loads(first_call.text) == {
        "tool_name": "get_reservation",
        "parameters": {"confirmation_number": "ZK3FFW", "last_name": "Rodriguez"},
    }
    assert first_call.audio_start_ms is None
    response = turns[turns.index(first_call) + 1]
    assert response.role == "tool_response"
    assert response.metadata["event"]["tool_response"]["reservation"]["confirmation_number"] == "ZK3FFW"
    interrupted = [t for t in turns if t.metadata.get("interrupted")]
    assert [(t.role, t.metadata["eva_turn_id"]) for t in interrupted] == [("agent", 3)]
    # The trace's paragraphs are kept as the intended segments.
    assert len(turns[2].metadata["intended_segments"]) == 2


def test_records_folder_and_its_parent_both_work_and_reimport_changes_nothing(tmp_path):
    run = tmp_path / "run-2026-03-01"
    shutil.copytree(RECORD, run / "records" / "1.1.2")

    first = dataset_import(path=run, fmt="auto", dataset_name=None, language="en-US", skip_invalid=False)
    again = dataset_import(path=run / "records", fmt="eva-run", dataset_name=None, language=None, skip_invalid=False)

    assert first.dataset == again.dataset == "run-2026-03-01"
    assert first.created["turns"] == 30 and again.created["turns"] == 0
    assert Dataset.objects.count() == 1 and Turn.objects.count() == 30
    assert Conversation.objects.get().language == "en-US"


def test_without_processed_context_the_transcript_gives_the_turns(tmp_path):
    record = tmp_path / "records" / "1.1.2"
    record.mkdir(parents=True)
    for name in ("result.json", "transcript.jsonl"):
        shutil.copy(RECORD / name, record / name)
    lines = [json.loads(line) for line in (RECORD / "transcript.jsonl").read_text().splitlines() if line.strip()]

    summary = dataset_import(path=tmp_path, fmt="eva-run", dataset_name="plain", language=None, skip_invalid=False)

    assert summary.turns == len(lines) == 46
    turns = list(Turn.objects.order_by("position"))
    assert [t.role for t in turns[:2]] == ["agent", "user"]
    assert turns[1].text == lines[1]["content"].strip()
    assert turns[0].audio_start_ms == 0 and turns[1].audio_start_ms == 5586
    assert turns[1].metadata["timestamp"] == lines[1]["timestamp"]


def test_a_broken_record_names_its_file(tmp_path):
    good = tmp_path / "records" / "1.1.2"
    shutil.copytree(RECORD, good)
    broken = tmp_path / "records" / "1.1.3"
    broken.mkdir()
    (broken / "result.json").write_text('{"record_id": "1.1.3", ')

    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=tmp_path, fmt="eva-run", dataset_name=None, language=None, skip_invalid=False)
    assert failure.value.summary.errors[0]["file"] == "records/1.1.3/result.json"
    assert not Conversation.objects.exists()

    summary = dataset_import(path=tmp_path, fmt="eva-run", dataset_name=None, language=None, skip_invalid=True)
    assert (summary.conversations, summary.skipped) == (1, 1)

"""EVA judge-validation sets: the real conciseness set and one fixture per other record shape."""

import json
from pathlib import Path

import pytest

from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, GoldLabel, Judge, Turn

REPO = Path(__file__).resolve().parents[3]
CONCISENESS = (
    REPO / ".." / "shared" / "data" / "eva" / "docs" / "metrics" / "judge_validation_datasets" / "conciseness.jsonl"
)
FIXTURES = REPO / "tests" / "fixtures" / "eva"

pytestmark = pytest.mark.django_db


def import_fixture(name, *, language=None):
    """Import the fixture set named after its judge: the (conversations, turns, labels) it read and the
    (level, scale) of the judge it created."""
    summary = dataset_import(
        path=FIXTURES / f"{name}.jsonl", fmt="auto", dataset_name=None, language=language, skip_invalid=False
    )
    judge = Judge.objects.get(slug=name)
    return (summary.conversations, summary.turns, summary.labels), (judge.level, judge.scale)


def test_real_conciseness_set_imports_every_conversation_and_labelled_turn():
    summary = dataset_import(path=CONCISENESS, fmt="auto", dataset_name=None, language=None, skip_invalid=False)

    assert summary.format == "eva-validation"
    assert (summary.dataset, summary.conversations, summary.labels) == ("conciseness", 100, 479)
    assert summary.created["conversations"] == 100 and summary.created["labels"] == 479
    judge = Judge.objects.get(slug="conciseness")
    assert (judge.level, judge.scale, judge.scale_min, judge.scale_max) == ("turn", "ordinal", 1, 3)
    assert GoldLabel.objects.filter(judge=judge, turn__isnull=False, source="imported").count() == 479

    records = [json.loads(line) for line in CONCISENESS.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = {
        (record["conversation_id"], turn["position"]): (turn["expected_rating"], turn["failure_modes"])
        for record in records
        for turn in record["conv_turns"]
        if "expected_rating" in turn
    }
    stored = {
        (external_id, position): (rating, modes)
        for external_id, position, rating, modes in GoldLabel.objects.filter(judge=judge).values_list(
            "conversation__external_id", "turn__position", "rating", "failure_modes"
        )
    }
    assert stored == expected
    first = records[0]
    conversation = Conversation.objects.get(external_id=first["conversation_id"])
    assert conversation.metadata["id"] == first["id"]
    assert [t.text for t in conversation.turns.all()] == [t["content"] for t in first["conv_turns"]]
    assert set(conversation.turns.values_list("role", flat=True)) == {"user", "agent"}


def test_reimporting_the_same_set_changes_nothing():
    dataset_import(path=CONCISENESS, fmt="eva-validation", dataset_name="c", language=None, skip_invalid=False)
    counts = (Conversation.objects.count(), Turn.objects.count(), GoldLabel.objects.count(), Judge.objects.count())

    again = dataset_import(path=CONCISENESS, fmt="eva-validation", dataset_name="c", language=None, skip_invalid=False)

    assert (again.conversations, again.labels) == (100, 479)
    assert set(again.created.values()) == {0}
    assert (
        Conversation.objects.count(),
        Turn.objects.count(),
        GoldLabel.objects.count(),
        Judge.objects.count(),
    ) == counts


def test_bad_rating_rolls_back_the_whole_file_and_names_line_and_field(tmp_path):
    lines = CONCISENESS.read_text(encoding="utf-8").splitlines()[:10]
    record = json.loads(lines[6])
    record["conv_turns"][3]["expected_rating"] = "high"
    lines[6] = json.dumps(record)
    bad = tmp_path / "conciseness.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=bad, fmt="auto", dataset_name=None, language=None, skip_invalid=False)

    assert str(failure.value) == (
        'conciseness.jsonl line 7 field conv_turns[3].expected_rating: expected an integer 1-3, got "high"'
    )
    assert failure.value.summary.errors == [
        {
            "file": "conciseness.jsonl",
            "line": 7,
            "field": "conv_turns[3].expected_rating",
            "message": 'expected an integer 1-3, got "high"',
        }
    ]
    assert Conversation.objects.count() == 0 and GoldLabel.objects.count() == 0


def test_skip_invalid_imports_the_good_lines_and_lists_the_bad(tmp_path):
    lines = CONCISENESS.read_text(encoding="utf-8").splitlines()[:5]
    lines.insert(2, "{not json")
    bad = tmp_path / "conciseness.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    summary = dataset_import(path=bad, fmt="eva-validation", dataset_name=None, language=None, skip_invalid=True)

    assert summary.conversations == 5 and summary.skipped == 1
    assert summary.errors[0]["line"] == 3 and summary.errors[0]["field"] == "(line)"
    assert Conversation.objects.count() == 5


def test_conversation_level_trace_shape():
    counts, judge = import_fixture("faithfulness")

    assert counts == (4, 9, 4)
    assert judge == ("conversation", "ordinal")
    gold = {g.conversation.external_id: g for g in GoldLabel.objects.select_related("conversation")}
    assert all(g.turn_id is None for g in gold.values())
    assert gold["faith-001"].rating == 3 and gold["faith-001"].failure_modes == []
    assert gold["faith-002"].failure_modes == ["hallucinated_policy", "unsupported_claim"]
    assert gold["faith-003"].failure_modes == []
    assert gold["faith-004"].failure_modes == [] and gold["faith-004"].rating is None
    assert gold["faith-004"].excluded is True and gold["faith-001"].excluded is False
    assert gold["faith-002"].metadata["description"] == "No tool was called; the allowance is invented."

    first = Conversation.objects.get(external_id="faith-001")
    assert [t.role for t in first.turns.all()] == ["user", "tool_call", "tool_response", "agent"]
    tool_call = first.turns.get(role="tool_call")
    assert json.loads(tool_call.text)["params"] == {"confirmation_number": "QX7P2L", "last_name": "Nguyen"}
    assert first.turns.get(role="tool_response").metadata["event"]["response"] == {
        "flight": "SK410",
        "date": "2026-03-18",
    }
    # Fields Tribunal does not interpret are kept, at every level.
    assert first.metadata["agent_instructions_version"] == "v4"
    assert first.metadata["has_interruption_tags"] is False
    second = Conversation.objects.get(external_id="faith-002")
    assert second.metadata["reviewer_notes"] == "checked twice"
    assert second.turns.get(role="agent").metadata == {"interrupted": True}
    assert Conversation.objects.get(external_id="faith-003").language == "en-GB"


def test_intended_turns_shape_labels_the_sample_and_marks_the_perturbed_turn():
    counts, judge = import_fixture("tts_fidelity", language="en-US")

    assert counts == (3, 5, 3)
    assert judge == ("conversation", "binary")
    perturbed = Conversation.objects.get(external_id="tts-0002")
    assert perturbed.language == "en-US"
    assert perturbed.metadata["transcript_id"] == "tr-88" and perturbed.metadata["audio_id"] == "audio/tr-88-p1.wav"
    assert perturbed.metadata["voice"] == "en-US-female-2"
    first_turn = perturbed.turns.get(position=0)
    assert first_turn.role == "agent"
    assert first_turn.intended_text == "Your confirmation code is Z K three F E W."
    assert first_turn.text == ""
    assert first_turn.entities == [{"type": "confirmation_code", "value": "ZK3FEW"}]
    assert first_turn.metadata["perturbation"]["perturbed_entity"] == "ZK3FEW"
    assert "perturbation" not in perturbed.turns.get(position=1).metadata
    label = GoldLabel.objects.get(conversation=perturbed)
    assert (label.turn_id, label.rating, label.passed) == (None, 0, False)
    assert label.metadata["perturbed_turn_position"] == 0
    assert label.metadata["sample_type"] == "perturbed"
    original = GoldLabel.objects.get(conversation__external_id="tts-0001")
    assert (original.rating, original.passed, original.excluded) == (1, True, False)
    assert GoldLabel.objects.get(conversation__external_id="tts-0003").excluded is True


def test_entity_transcription_shape_labels_each_turn():
    counts, judge = import_fixture("entity_accuracy")

    assert counts == (2, 3, 3)
    assert judge == ("turn", "binary")
    phone = Turn.objects.get(conversation__external_id="ent-01", position=1)
    assert phone.intended_text == "My phone is five one two, five five five, zero one four eight."
    assert phone.text == "My phone is 512-555-0184."
    assert phone.said_differs
    assert phone.entities[0]["transcribed_value"] == "512-555-0184"
    wrong = GoldLabel.objects.get(turn=phone)
    assert (wrong.passed, wrong.rating, wrong.failure_modes) == (False, 0, ["entity_error:phone_number"])
    assert wrong.metadata["summary"] == "phone number wrong" and wrong.metadata["annotator"] == "r7"
    right = GoldLabel.objects.get(turn__conversation__external_id="ent-01", turn__position=0)
    assert (right.passed, right.failure_modes, right.excluded) == (True, [], False)
    invalid = GoldLabel.objects.get(conversation__external_id="ent-02")
    assert invalid.excluded is True and invalid.passed is True
    assert Conversation.objects.get(external_id="ent-02").metadata["stt_model"] == "whisper-large-v3"


def test_unknown_record_shape_is_refused_with_its_line(tmp_path):
    file = tmp_path / "conciseness.jsonl"
    file.write_text(
        CONCISENESS.read_text(encoding="utf-8").splitlines()[0] + "\n" + json.dumps({"id": 9, "turns_x": []}) + "\n"
    )

    with pytest.raises(ImportFailed) as failure:
        dataset_import(path=file, fmt="eva-validation", dataset_name=None, language=None, skip_invalid=False)

    assert failure.value.summary.errors[0]["line"] == 2
    assert "unknown record shape" in failure.value.summary.errors[0]["message"]
    assert not Conversation.objects.exists()

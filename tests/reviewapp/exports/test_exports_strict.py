"""Exports are strict JSON, and an EVA-format export gives back every field as it came in.

Records are compared as lists of (key, value) pairs, so key order counts too.
"""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import GoldLabel, Judge, Verdict
from scoring.strictjson import strict_loads
from tests.reviewapp.corpus.test_import_eva_validation import CONCISENESS, FIXTURES

pytestmark = pytest.mark.django_db


def export(judge, fmt, **kwargs):
    snapshot = snapshot_create(judge=judge, fmt=fmt, build=False, **kwargs)
    return snapshot_write(snapshot_id=snapshot.pk)


def pairs(text: str) -> list:
    """Each line as nested lists of (key, value) pairs: equal only with the same keys in the same order."""
    return [json.loads(line, object_pairs_hook=list) for line in text.splitlines() if line.strip()]


def test_the_real_conciseness_set_comes_back_key_for_key_in_order(media):
    dataset_import(path=CONCISENESS, fmt="eva-validation")
    snapshot = export(Judge.objects.get(slug="conciseness"), "eva")
    assert pairs(snapshot_path(snapshot).read_text(encoding="utf-8")) == pairs(CONCISENESS.read_text(encoding="utf-8"))


# EVA-shaped records with what the importer normalises: failure modes [""] / "" / "a, b", float and
# string ratings, an int id, an explicit "en", record-level flags, "assistant" roles, positions left
# out, extra keys in odd places and orders.
TRACE_RECORDS = [
    {
        "id": "f-1",
        "trace": [
            {"event_type": "user_utterance", "utterance": "Where is my bag?"},
            {"event_type": "agent_utterance", "utterance": "It is in Denver.", "interrupted": False},
        ],
        "expected_rating": 1,
        "failure_mode": [""],
        "validated": True,
        "invalid": False,
    },
    {
        "source": "human",
        "id": 7,
        "language": "en",
        "trace": [{"event_type": "agent_utterance", "utterance": "Done."}],
        "failure_mode": "",
        "expected_rating": 3.0,
        "description": "fine",
    },
    {
        "id": "f-3",
        "trace": [{"event_type": "agent_utterance", "utterance": "Rebooked."}],
        "expected_rating": "2",
        "failure_mode": "unsupported_claim,  hallucinated_policy",
        "language": "fr-CA",
    },
]
CONV_TURNS_RECORDS = [
    {
        "id": 1,
        "conversation_id": "c-1",
        "validated": True,
        "conv_turns": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello, how can I help?", "expected_rating": 3.0, "failure_modes": [""]},
        ],
    },
    {
        "conversation_id": "c-2",
        "language": "en",
        "conv_turns": [
            {"position": "1", "role": "user", "content": "Rebook me"},
            {
                "failure_modes": "verbosity_or_filler",
                "position": 2,
                "role": "agent",
                "content": "Sure!",
                "expected_rating": 2,
                "note": "x",
            },
        ],
        "invalid": False,
    },
]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(("judge", "records"), [("faithfulness", TRACE_RECORDS), ("conciseness", CONV_TURNS_RECORDS)])
def test_eva_shaped_records_round_trip_losslessly(media, tmp_path, judge, records):
    source = _write(tmp_path / f"{judge}.jsonl", records)
    dataset_import(path=source, fmt="eva-validation")

    exported = snapshot_path(export(Judge.objects.get(slug=judge), "eva")).read_text(encoding="utf-8")

    assert pairs(exported) == pairs(source.read_text(encoding="utf-8"))
    # ...and importing the export again gives the same labels.
    again = tmp_path / "again" / f"{judge}.jsonl"
    again.parent.mkdir()
    again.write_text(exported, encoding="utf-8")
    dataset_import(path=again, fmt="eva-validation", dataset_name="again")
    first = GoldLabel.objects.filter(conversation__dataset__name=judge)
    second = GoldLabel.objects.filter(conversation__dataset__name="again")
    fields = ("conversation__external_id", "turn__position", "rating", "failure_modes", "excluded")
    assert sorted(first.values_list(*fields)) == sorted(second.values_list(*fields))


def test_a_better_gold_label_replaces_the_imported_values(media, tmp_path):
    source = _write(tmp_path / "faithfulness.jsonl", TRACE_RECORDS[:1])
    dataset_import(path=source, fmt="eva-validation")
    imported = GoldLabel.objects.get()
    GoldLabel.objects.create(
        judge=imported.judge,
        conversation=imported.conversation,
        source=GoldLabel.Source.ADJUDICATED,
        rating=3,
        failure_modes=[],
    )

    (record,) = pairs(snapshot_path(export(imported.judge, "eva")).read_text(encoding="utf-8"))

    # A lead's label is not the file's: Tribunal's values, the other fields as they came in.
    assert dict(record)["expected_rating"] == 3 and dict(record)["failure_mode"] == []
    assert [key for key, _ in record] == list(TRACE_RECORDS[0])


def test_non_finite_values_are_written_as_null_in_every_format(corpus, media):
    # Rows stored before imports refused non-finite numbers (SQLite keeps infinities; NaN it stores as NULL).
    assert GoldLabel.objects.filter(judge=corpus.judge).update(rating=math.inf)
    assert Verdict.objects.update(rating=-math.inf)
    for fmt in ("jsonl", "csv", "parquet", "eva"):
        snapshot = export(corpus.judge, fmt, name=f"strict-{fmt}")
        path = snapshot_path(snapshot)
        if fmt in ("jsonl", "eva"):
            text = path.read_text(encoding="utf-8")
            assert "NaN" not in text and "Infinity" not in text
            rows = [strict_loads(line) for line in text.splitlines()]  # a strict parser reads every line
            assert rows
        elif fmt == "csv":
            frame = pd.read_csv(path, keep_default_na=False)
            assert "nan" not in set(frame["gold_rating"].astype(str)) and "inf" not in path.read_text()
            for cell in frame["verdicts"]:
                strict_loads(cell)
        else:
            frame = pd.read_parquet(path)
            assert frame["gold_rating"].isna().all()
            assert not any(math.isinf(value) for value in frame["gold_rating"].dropna())
        assert snapshot.datasheet["non_finite_values_written_as_null"] >= 1, fmt
        strict_loads(path.with_name(path.name.split(".")[0] + ".datasheet.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("name", "judge"), [("tts_fidelity", "tts_fidelity"), ("entity_accuracy", "entity_accuracy")])
def test_the_tts_fidelity_and_entity_shapes_come_back_as_they_came_in(media, name, judge):
    source = FIXTURES / f"{name}.jsonl"
    dataset_import(path=source, fmt="eva-validation")

    exported = snapshot_path(export(Judge.objects.get(slug=judge), "eva")).read_text(encoding="utf-8")

    # Records marked invalid are not gold, so they are not exported; every other one comes back whole.
    originals = [
        line for line in source.read_text(encoding="utf-8").splitlines() if not json.loads(line).get("invalid")
    ]
    assert pairs(exported) == pairs("\n".join(originals))

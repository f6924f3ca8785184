"""The EVA-format export: validation-set records in the shapes the importer reads, a conversation at a time.

Turn-level judges get the `conv_turns` shape (like EVA's conciseness.jsonl), conversation-level
judges the `trace` shape, and the TTS-fidelity and entity-transcription sets their own; every
record gives its fields back in the order they came in (the importer keeps the key shapes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import IO, Any

from reviewapp.corpus.importers.eva_validation import ORDER_KEY, RAW_KEY, SHAPE_KEY, reorder
from reviewapp.exports.selectors.export_rows import ExportRow
from reviewapp.exports.services.export_writers import NonFinite, json_bytes
from reviewapp.models import GoldLabel, Judge


def _number(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


class EvaWriter:
    """EVA validation-set records, the shapes the importer reads: one record per conversation.

    Turn-level judges get the `conv_turns` shape (like EVA's conciseness.jsonl), conversation-level
    judges the `trace` shape. Rows of one conversation are consecutive, so one record is buffered.

    A record is walked for non-finite numbers only when a gold rating in it is one: every other
    number comes from stored JSON, which `export_rows` decodes with orjson, and orjson refuses NaN
    and Infinity (walking every record's values took 1 of the 6.8 s of a 100,000-row export).
    """

    binary = True

    def __init__(self, handle: IO[bytes], judge: Judge):
        self.handle, self.judge = handle, judge
        self.rows: list[ExportRow] = []
        self.finite = NonFinite()

    def write(self, row: ExportRow) -> None:
        if self.rows and self.rows[0].conversation.pk != row.conversation.pk:
            self._flush()
        self.rows.append(row)

    def _flush(self) -> None:
        if not self.rows:
            return
        first = self.rows[0]
        shape = (first.conversation.metadata or {}).get("eva_shape")
        if shape == "intended_turns" and first.turn is None:
            record = eva_intended_turns_record(first)
        elif shape == "entity_transcription" and first.turn is not None:
            record = eva_entity_record(first.conversation, first.turns, self.rows)
        elif self.judge.level == Judge.Level.CONVERSATION or first.turn is None:
            record = eva_trace_record(first)
        else:
            record = eva_conv_turns_record(first.conversation, first.turns, self.rows)
        if any(row.gold.rating is not None and not math.isfinite(row.gold.rating) for row in self.rows):
            record = self.finite.clean(record)  # written as null, and counted
        self.handle.write(json_bytes(record) + b"\n")
        self.rows = []

    def close(self) -> None:
        self._flush()


def _without_bookkeeping(metadata: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if key not in ("eva_shape", RAW_KEY, ORDER_KEY, SHAPE_KEY)}


def _as_imported(record: dict[str, Any], conversation) -> dict[str, Any]:
    """The record with its keys, and those of every object in it, in the order they came in."""
    metadata = conversation.metadata or {}
    return reorder(_in_order(record, metadata.get(ORDER_KEY)), metadata.get(SHAPE_KEY))


def _in_order(
    record: dict[str, Any], order: Sequence[str] | None, optional: Sequence[str] = ("position",)
) -> dict[str, Any]:
    """The record's keys in the order they came in (new keys after them); the `optional` keys, which
    the writer fills in by default, only if they came in."""
    if not order:
        return record
    ordered = {key: record[key] for key in order if key in record}
    ordered.update((key, value) for key, value in record.items() if key not in ordered and key not in optional)
    return ordered


def _gold_fields(gold, normalized: dict[str, Any]) -> dict[str, Any]:
    """The gold label's EVA fields: as they came in while the imported label still holds, else Tribunal's."""
    raw = (gold.metadata or {}).get(RAW_KEY)
    if gold.source == GoldLabel.Source.IMPORTED and isinstance(raw, dict):
        return dict(raw)
    return normalized


def _record_head(conversation, id_key: str) -> dict[str, Any]:
    """The conversation's own fields back at the top of the record: what came in as it came in, its id
    and (if not en) its language."""
    metadata = conversation.metadata or {}
    record = _without_bookkeeping(metadata)
    raw = metadata.get(RAW_KEY)
    if isinstance(raw, dict):
        record.update(raw)
    if not any(str(record[key]) == conversation.external_id for key in (id_key, "id") if key in record):
        record[id_key] = conversation.external_id
    if conversation.language != "en" and "language" not in record:
        record["language"] = conversation.language
    return record


def eva_conv_turns_record(conversation, turns, rows: Sequence[ExportRow]) -> dict[str, Any]:
    labels = {row.turn.position: row.gold for row in rows if row.turn is not None}
    conv_turns = []
    for turn in turns:
        entry: dict[str, Any] = {"position": turn.position, "role": turn.role, "content": turn.text}
        metadata, order = turn.metadata, None
        if metadata:  # most turns have none: no walk of it
            entry.update(_without_bookkeeping(metadata))
            if isinstance(metadata.get(RAW_KEY), dict):
                entry.update(metadata[RAW_KEY])
            order = metadata.get(ORDER_KEY)
        gold = labels.get(turn.position)
        if gold is not None:
            normalized = {"expected_rating": _number(gold.rating), "failure_modes": list(gold.failure_modes or [])}
            entry.update(_gold_fields(gold, normalized))
        conv_turns.append(_in_order(entry, order) if order else entry)
    record = _record_head(conversation, "conversation_id")
    record["conv_turns"] = conv_turns
    return _as_imported(record, conversation)


def _trace_event(turn) -> dict[str, Any] | None:
    if turn.role in ("agent", "user"):
        return {"event_type": f"{turn.role}_utterance", "utterance": turn.text, **turn.metadata}
    if turn.role in ("tool_call", "tool_response"):
        if isinstance(turn.metadata.get("event"), dict):
            return dict(turn.metadata["event"])
        try:
            body = json.loads(turn.text)
        except ValueError:
            body = {"text": turn.text}
        return {"event_type": turn.role, **(body if isinstance(body, dict) else {"value": body})}
    return None


def eva_trace_record(row: ExportRow) -> dict[str, Any]:
    conversation = row.conversation
    record: dict[str, Any] = {"id": conversation.external_id}
    record.update(_record_head(conversation, "id"))
    record["trace"] = [event for event in map(_trace_event, row.turns) if event is not None]
    normalized = {"expected_rating": _number(row.gold.rating), "failure_mode": list(row.gold.failure_modes or [])}
    record.update(_gold_fields(row.gold, normalized))
    for key, value in (row.gold.metadata or {}).items():
        if key in ("validated", "invalid", "description"):
            record[key] = value
    return _as_imported(record, conversation)


def eva_intended_turns_record(row: ExportRow) -> dict[str, Any]:
    """EVA's TTS-fidelity shape: the intended turns and a conversation-level 0/1 rating."""
    conversation = row.conversation
    record = _record_head(conversation, "id")
    turns = []
    for turn in row.turns:
        metadata = turn.metadata or {}
        entry: dict[str, Any] = {
            "turn_index": turn.position,
            "role": "assistant" if turn.role == "agent" else turn.role,
            "text": turn.intended_text,
            "tts_critical_entities": list(turn.entities or []),
            **{key: value for key, value in _without_bookkeeping(metadata).items() if key != "perturbation"},
        }
        if isinstance(metadata.get(RAW_KEY), dict):
            entry.update(metadata[RAW_KEY])
        turns.append(_in_order(entry, metadata.get(ORDER_KEY), optional=("turn_index", "tts_critical_entities")))
    record["intended_turns"] = turns
    gold = row.gold
    rating = gold.rating if gold.rating is not None else (None if gold.passed is None else float(gold.passed))
    record.update(_gold_fields(gold, {"expected_rating": _number(rating)}))
    return _as_imported(record, conversation)


def eva_entity_record(conversation, turns, rows: Sequence[ExportRow]) -> dict[str, Any]:
    """EVA's entity-transcription shape: what TTS said and STT heard per turn, labels per entity."""
    record = _record_head(conversation, "id")
    record.setdefault("user_tts", [turn.intended_text for turn in turns])
    record.setdefault("transcription", [turn.text for turn in turns])
    labels = []
    for row in sorted((r for r in rows if r.turn is not None), key=lambda r: r.turn.position):
        gold = row.gold
        normalized = {
            "label": {
                "turn_id": row.turn.position,
                "entities": list(row.turn.entities or []),
                "passed": gold.passed,
                "failure_modes": list(gold.failure_modes or []),
            }
        }
        labels.append(_gold_fields(gold, normalized)["label"])
    record["labels"] = labels
    return _as_imported(record, conversation)

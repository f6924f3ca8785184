"""EVA judge-validation sets: JSONL, one human-labelled record a line, the file stem naming the judge.

EVA's sets come in four shapes, detected per record by the field that carries the conversation:
  trace            conversation-level label (expected_rating 1-3, failure_mode)       -> shape "trace"
  conv_turns       turn-level labels on agent turns (expected_rating 1-3)             -> shape "conv_turns"
  intended_turns   TTS fidelity sample, conversation-level expected_rating 0/1        -> shape "intended_turns"
  user_tts         entity transcription: what TTS said vs what STT heard, per turn    -> shape "entity_transcription"
Records marked `invalid` are imported with their gold label excluded. Fields this importer does not
interpret go to the conversation's (or turn's, or label's) metadata, so nothing in the file is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.utils.text import slugify

from reviewapp.corpus.importers.limits import slug_problem
from reviewapp.corpus.importers.records import (
    FieldReader,
    JudgeDefaults,
    ParsedConversation,
    ParsedImport,
    ParsedLabel,
    ParsedTurn,
    RecordError,
    compact_json,
    describe,
)
from reviewapp.corpus.importers.strict import ReadProgress
from reviewapp.corpus.importers.tribunal_jsonl import line_conversations
from scoring.eva import VALIDATION_SET_JUDGES

SHAPES = {
    "trace": JudgeDefaults(slug="", level="conversation", scale="ordinal", scale_min=1, scale_max=3),
    "conv_turns": JudgeDefaults(slug="", level="turn", scale="ordinal", scale_min=1, scale_max=3),
    "intended_turns": JudgeDefaults(slug="", level="conversation", scale="binary", scale_min=0, scale_max=1),
    "entity_transcription": JudgeDefaults(slug="", level="turn", scale="binary", scale_min=0, scale_max=1),
}
VALIDATION_FLAGS = ("invalid", "validated")
# Lossless round trips: the values this importer reads into columns are also kept as they came in,
# under RAW_KEY in the conversation's, turn's or label's metadata, with the record's key order, so
# an EVA-format export gives every field back exactly (see services/exports.py).
RAW_KEY = "eva_raw"
ORDER_KEY = "eva_key_order"
# The key order of every object nested in the record, as lists (see key_shape): PostgreSQL's jsonb keeps
# arrays in order but not the keys of the objects it stores, so the order is kept apart from them.
SHAPE_KEY = "eva_key_shape"
# The same for a tool call's or tool response's event kept on its turn (judges see it as EVA formats it).
EVENT_SHAPE_KEY = "event_key_shape"


def key_shape(value: Any) -> Any:
    """The key order of `value`'s objects, at every depth: {"k": keys, "v": {key: shape}} or [shapes]."""
    if isinstance(value, dict):
        nested = {key: key_shape(item) for key, item in value.items() if isinstance(item, dict | list)}
        return {"k": list(value), "v": {key: shape for key, shape in nested.items() if shape}}
    if isinstance(value, list):
        shapes = [key_shape(item) for item in value]
        return shapes if any(shapes) else None
    return None


def reorder(value: Any, shape: Any) -> Any:
    """`value` with its objects' keys put back in the order `shape` (from key_shape) recorded; keys the
    shape does not know come after, in the order they have."""
    if isinstance(value, dict) and isinstance(shape, dict):
        order = [key for key in shape.get("k", []) if key in value]
        keys = order + [key for key in value if key not in order]
        children = shape.get("v", {})
        return {key: reorder(value[key], children.get(key)) for key in keys}
    if isinstance(value, list) and isinstance(shape, list):
        return [reorder(item, shape[i] if i < len(shape) else None) for i, item in enumerate(value)]
    return value


def judge_slug_for(path: Path) -> str:
    """The judge a set labels: its file stem, under judge.yaml's name where EVA's file calls it otherwise."""
    slug = slugify(path.stem).replace("-", "_") or "imported"
    return VALIDATION_SET_JUDGES.get(slug, slug)


def detect_shape(record: dict[str, Any]) -> str | None:
    if "conv_turns" in record:
        return "conv_turns"
    if "trace" in record:
        return "trace"
    if "intended_turns" in record:
        return "intended_turns"
    if "user_tts" in record or "transcription" in record:
        return "entity_transcription"
    return None


def looks_like_validation(record: Any) -> bool:
    return isinstance(record, dict) and detect_shape(record) is not None


def header(path: Path, display: str) -> ParsedImport:
    """The import's header; RecordError when the file name does not make a judge slug."""
    problem = slug_problem(judge_slug_for(path))
    if problem:
        raise RecordError(display, None, "(file name)", f"the judge is named after the file, and its slug {problem}")
    return ParsedImport(fmt="eva-validation", source=display, dataset_kind="validation")


def stream(
    path: Path, *, display: str, language: str | None, parsed: ParsedImport, progress: ReadProgress | None = None
) -> Iterator[ParsedConversation | RecordError]:
    """Each line's conversation, or the RecordError that refuses it, in file order (one line in memory)."""
    judge = judge_slug_for(path)

    def parse_record(record: Any, read: FieldReader) -> ParsedConversation:
        if not isinstance(record, dict):
            raise read.fail("(line)", f"expected a JSON object, got {describe(record)}")
        shape = detect_shape(record)
        if shape is None:
            raise read.fail(
                "(record)", "unknown record shape: expected one of conv_turns, trace, intended_turns, user_tts"
            )
        conversation = PARSERS[shape](record, read, judge, language)
        conversation.metadata["eva_shape"] = shape
        parsed.add_judge(replace(SHAPES[shape], slug=judge))
        return conversation

    return line_conversations(path, display, progress, parse_record, id_field="id")


def parse(path: Path, *, display: str, language: str | None) -> ParsedImport:
    parsed = header(path, display)
    return parsed.collect(stream(path, display=display, language=language, parsed=parsed))


def _conversation(
    record: dict[str, Any], read: FieldReader, language: str | None, id_keys: tuple[str, ...], known: set[str]
) -> ParsedConversation:
    external_id = ""
    for key in id_keys:
        external_id = read.string(record.get(key), key, limit="external_id")
        if external_id:
            break
    if not external_id:
        external_id = f"line-{read.line}"
    metadata = {key: value for key, value in record.items() if key not in known}
    metadata[RAW_KEY] = {key: record[key] for key in (*id_keys, "language", *VALIDATION_FLAGS) if key in record}
    metadata[ORDER_KEY] = list(record)
    metadata[SHAPE_KEY] = key_shape(record)
    return ParsedConversation(
        external_id=external_id,
        language=read.language(record.get("language"), "language", language),
        line=read.line,
        metadata=metadata,
    )


def _keep_raw(turn: ParsedTurn, raw: dict[str, Any], read_as: dict[str, Any], standard: list[str]) -> None:
    """Keep in the turn's metadata what the columns changed ("assistant" read as agent ...) and the
    turn's key order, so an export writes it back. The order is kept as a list even when it starts with
    the `standard` keys: PostgreSQL's jsonb does not keep the key order of the objects it stores."""
    changed = {key: raw[key] for key, value in read_as.items() if key in raw and raw[key] != value}
    if changed:
        turn.metadata[RAW_KEY] = changed
    turn.metadata[ORDER_KEY] = list(raw)


def _flags(record: dict[str, Any], read: FieldReader) -> tuple[bool, dict[str, Any]]:
    invalid = bool(read.boolean(record.get("invalid"), "invalid"))
    kept = {key: record[key] for key in VALIDATION_FLAGS if key in record}
    return invalid, kept


def parse_trace(record: dict[str, Any], read: FieldReader, judge: str, language: str | None) -> ParsedConversation:
    known = {"id", "trace", "expected_rating", "failure_mode", "validated", "invalid", "description", "language"}
    conversation = _conversation(record, read, language, ("id", "conversation_id"), known)
    for index, event in enumerate(read.items(record.get("trace"), "trace", required=True)):
        prefix = f"trace[{index}]"
        if not isinstance(event, dict):
            raise read.fail(prefix, f"expected an object, got {describe(event)}")
        event_type = event.get("event_type")
        extra = {key: value for key, value in event.items() if key not in ("event_type", "utterance")}
        if event_type in ("agent_utterance", "user_utterance"):
            conversation.turns.append(
                ParsedTurn(
                    position=index,
                    role="agent" if event_type == "agent_utterance" else "user",
                    text=read.string(event.get("utterance"), f"{prefix}.utterance"),
                    metadata=extra,
                )
            )
        elif event_type in ("tool_call", "tool_response"):
            body = {key: value for key, value in event.items() if key != "event_type"}
            read.string(event.get("tool_name"), f"{prefix}.tool_name", required=True)
            conversation.turns.append(
                ParsedTurn(
                    position=index,
                    role=event_type,
                    text=compact_json(body),
                    metadata={"event": event, EVENT_SHAPE_KEY: key_shape(event)},
                )
            )
        else:
            raise read.fail(
                f"{prefix}.event_type",
                f"expected agent_utterance, user_utterance, tool_call or tool_response, got {describe(event_type)}",
            )
    invalid, flags = _flags(record, read)
    rating = read.integer(record.get("expected_rating"), "expected_rating", low=1, high=3, required=not invalid)
    metadata = dict(flags)
    if "description" in record:
        metadata["description"] = record["description"]
    metadata[RAW_KEY] = {key: record[key] for key in ("expected_rating", "failure_mode") if key in record}
    conversation.labels.append(
        ParsedLabel(
            judge=judge,
            rating=rating,
            failure_modes=read.failure_modes(record.get("failure_mode"), "failure_mode"),
            excluded=invalid,
            metadata=metadata,
        )
    )
    return conversation


def parse_conv_turns(record: dict[str, Any], read: FieldReader, judge: str, language: str | None) -> ParsedConversation:
    known = {"conversation_id", "conv_turns", "language", "invalid", "validated"}
    conversation = _conversation(record, read, language, ("conversation_id", "id"), known)
    invalid, flags = _flags(record, read)
    for prefix, position, raw in read.turn_objects(record.get("conv_turns"), "conv_turns"):
        turn_known = {"position", "role", "content", "expected_rating", "failure_modes"}
        turn = ParsedTurn(
            position=position,
            role=read.role(raw.get("role"), f"{prefix}.role"),
            text=read.string(raw.get("content"), f"{prefix}.content"),
            metadata={key: value for key, value in raw.items() if key not in turn_known},
        )
        # Only what the columns changed ("assistant" read as agent, a position given as "2" ...) is kept.
        changed = {
            key: raw[key]
            for key, value in (("position", turn.position), ("role", turn.role), ("content", turn.text))
            if key in raw and raw[key] != value
        }
        if changed:
            turn.metadata[RAW_KEY] = changed
        if list(raw) != ["position", "role", "content", "expected_rating", "failure_modes"][: len(raw)]:
            turn.metadata[ORDER_KEY] = list(raw)
        conversation.turns.append(turn)
        if "expected_rating" in raw or "failure_modes" in raw:
            rating = read.integer(raw.get("expected_rating"), f"{prefix}.expected_rating", low=1, high=3, required=True)
            conversation.labels.append(
                ParsedLabel(
                    judge=judge,
                    turn_position=position,
                    rating=rating,
                    failure_modes=read.failure_modes(raw.get("failure_modes"), f"{prefix}.failure_modes"),
                    excluded=invalid,
                    metadata={
                        **flags,
                        RAW_KEY: {key: raw[key] for key in ("expected_rating", "failure_modes") if key in raw},
                    },
                )
            )
    return conversation


def parse_intended_turns(
    record: dict[str, Any], read: FieldReader, judge: str, language: str | None
) -> ParsedConversation:
    known = {"id", "intended_turns", "expected_rating", "language", "invalid", "validated"}
    conversation = _conversation(record, read, language, ("id", "transcript_id", "conversation_id"), known)
    perturbation = read.mapping(record.get("perturbation_metadata"), "perturbation_metadata")
    perturbed_index = read.integer(perturbation.get("turn_index"), "perturbation_metadata.turn_index", low=0)
    turns = read.turn_objects(
        record.get("intended_turns"), "intended_turns", position_key="turn_index", where="this record"
    )
    for prefix, position, raw in turns:
        metadata = {
            key: value
            for key, value in raw.items()
            if key not in ("turn_index", "role", "text", "tts_critical_entities")
        }
        if perturbed_index is not None and position == perturbed_index:
            metadata["perturbation"] = perturbation
        turn = ParsedTurn(
            position=position,
            role=read.role(raw.get("role"), f"{prefix}.role"),
            # Only the TTS input is known: no transcript of what was heard, so text stays empty.
            intended_text=read.string(raw.get("text"), f"{prefix}.text"),
            entities=read.items(raw.get("tts_critical_entities"), f"{prefix}.tts_critical_entities"),
            metadata=metadata,
        )
        _keep_raw(
            turn,
            raw,
            # what an export writes by default: EVA's intended turns say "assistant"
            {
                "turn_index": turn.position,
                "role": "assistant" if turn.role == "agent" else turn.role,
                "text": turn.intended_text,
            },
            standard=["turn_index", "role", "text", "tts_critical_entities"],
        )
        conversation.turns.append(turn)
    if perturbed_index is not None and perturbed_index not in {turn.position for turn in conversation.turns}:
        raise read.fail("perturbation_metadata.turn_index", f"no intended turn has turn_index {perturbed_index}")
    invalid, flags = _flags(record, read)
    rating = read.integer(record.get("expected_rating"), "expected_rating", low=0, high=1, required=not invalid)
    metadata = dict(flags)
    for key in ("evaluation_mode", "sample_type", "perturbation_metadata"):
        if key in record:
            metadata[key] = record[key]
    # The rating judges the whole audio sample, so the label is conversation-level; the perturbed
    # turn is marked in its metadata (and named here) so reviewers can find the altered entity.
    if perturbed_index is not None:
        metadata["perturbed_turn_position"] = perturbed_index
    metadata[RAW_KEY] = {key: record[key] for key in ("expected_rating",) if key in record}
    conversation.labels.append(
        ParsedLabel(
            judge=judge,
            rating=rating,
            passed=None if rating is None else rating == 1,
            excluded=invalid,
            metadata=metadata,
        )
    )
    return conversation


def parse_entity_transcription(
    record: dict[str, Any], read: FieldReader, judge: str, language: str | None
) -> ParsedConversation:
    known = {"id", "user_tts", "transcription", "labels", "language", "invalid", "validated"}
    conversation = _conversation(record, read, language, ("id", "transcript_id", "conversation_id"), known)
    said = read.items(record.get("user_tts"), "user_tts")
    heard = read.items(record.get("transcription"), "transcription")
    if len(said) != len(heard) or not all(isinstance(text, str) for text in [*said, *heard]):
        # The turns pair them up (padding with ""): keep the lists as they came in.
        conversation.metadata[RAW_KEY].update(
            {key: record[key] for key in ("user_tts", "transcription") if key in record}
        )
    for position in range(max(len(said), len(heard))):
        conversation.turns.append(
            ParsedTurn(
                position=position,
                role="user",
                intended_text=read.string(said[position], f"user_tts[{position}]") if position < len(said) else "",
                text=read.string(heard[position], f"transcription[{position}]") if position < len(heard) else "",
            )
        )
    invalid, flags = _flags(record, read)
    labelled: set[int] = set()
    for index, raw in enumerate(read.items(record.get("labels"), "labels")):
        prefix = f"labels[{index}]"
        if not isinstance(raw, dict):
            raise read.fail(prefix, f"expected an object, got {describe(raw)}")
        turn_id = read.integer(raw.get("turn_id"), f"{prefix}.turn_id", low=0, required=True)
        if turn_id is None or turn_id >= len(conversation.turns):
            raise read.fail(f"{prefix}.turn_id", f"no turn {turn_id}: the record has {len(conversation.turns)} turns")
        if turn_id in labelled:
            raise read.fail(f"{prefix}.turn_id", f"turn {turn_id} is labelled twice")
        labelled.add(turn_id)
        entities = read.items(raw.get("entities"), f"{prefix}.entities")
        failures: list[str] = []
        for entity_index, entity in enumerate(entities):
            entity_field = f"{prefix}.entities[{entity_index}]"
            if not isinstance(entity, dict):
                raise read.fail(entity_field, f"expected an object, got {describe(entity)}")
            correct = read.boolean(entity.get("correct"), f"{entity_field}.correct")
            if correct is None:
                raise read.fail(f"{entity_field}.correct", "is required (true or false)")
            if not correct:
                mode = f"entity_error:{entity.get('type') or 'unknown'}"
                if mode not in failures:
                    failures.append(mode)
        passed = not failures
        conversation.turns[turn_id].entities = entities
        label_metadata = {key: value for key, value in raw.items() if key not in ("turn_id",)}
        label_metadata.update(flags)
        label_metadata[RAW_KEY] = {"label": raw}
        conversation.labels.append(
            ParsedLabel(
                judge=judge,
                turn_position=turn_id,
                rating=1.0 if passed else 0.0,
                passed=passed,
                failure_modes=failures,
                excluded=invalid,
                metadata=label_metadata,
            )
        )
    return conversation


PARSERS = {
    "trace": parse_trace,
    "conv_turns": parse_conv_turns,
    "intended_turns": parse_intended_turns,
    "entity_transcription": parse_entity_transcription,
}

"""Tribunal's own JSONL: one conversation per line (see docs/formats.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from reviewapp.corpus.importers import strict
from reviewapp.corpus.importers.jsonl_plain import (
    CONVERSATION_KEYS,
    LABEL_KEYS,
    TURN_KEYS,
    VERDICT_KEYS,
    VERDICT_STATUSES,
    check_unique_targets,
    plain_conversation,
)
from reviewapp.corpus.importers.limits import INT32_MAX, SMALLINT_MAX
from reviewapp.corpus.importers.records import (
    FieldReader,
    ParsedConversation,
    ParsedImport,
    ParsedLabel,
    ParsedTurn,
    ParsedVerdict,
    RecordError,
    describe,
)
from reviewapp.corpus.importers.seen_ids import SeenIds


def json_lines(
    path: Path, display: str, progress: strict.ReadProgress | None = None
) -> Iterator[tuple[int, Any] | RecordError]:
    """Yield (line number, decoded object) per non-blank line, or a RecordError for a line that is refused
    (not UTF-8, not strict JSON: see importers.strict)."""
    return strict.json_lines(path, display, progress)


def line_conversations(
    path: Path,
    display: str,
    progress: strict.ReadProgress | None,
    parse_record: Callable[[Any, FieldReader], ParsedConversation],
    *,
    id_field: str,
) -> Iterator[ParsedConversation | RecordError]:
    """Each line's conversation (`parse_record` reads one decoded line), or the RecordError that refuses
    it, in file order (one line in memory); an external id used by an earlier line is refused."""
    seen = SeenIds()
    try:
        for item in json_lines(path, display, progress):
            if isinstance(item, RecordError):
                yield item
                continue
            number, record = item
            try:
                conversation = parse_record(record, FieldReader(display, number))
                external_id = conversation.external_id
                before = seen.first_use(external_id, number)
                if before is not None:
                    raise RecordError(
                        display, number, id_field, f"{describe(external_id)} already used on line {before}"
                    )
            except RecordError as error:
                yield error
                continue
            yield conversation
    finally:
        seen.close()


def stream(
    path: Path, *, display: str, language: str | None, parsed: ParsedImport, progress: strict.ReadProgress | None = None
) -> Iterator[ParsedConversation | RecordError]:
    """Each line's conversation, or the RecordError that refuses it, in file order (one line in memory).

    `parsed` is the import's header: it collects the judges the lines name."""
    return line_conversations(
        path,
        display,
        progress,
        lambda record, read: parse_conversation(record, read, language, parsed),
        id_field="external_id",
    )


def header(display: str) -> ParsedImport:
    # The kind becomes "validation" once a record carries gold labels (see ParsedImport.labels_make_validation).
    return ParsedImport(fmt="jsonl", source=display, labels_make_validation=True)


def parse(path: Path, *, display: str, language: str | None) -> ParsedImport:
    parsed = header(display)
    return parsed.collect(stream(path, display=display, language=language, parsed=parsed))


def parse_conversation(
    record: Any, read: FieldReader, language: str | None, parsed: ParsedImport
) -> ParsedConversation:
    """One record's conversation, or RecordError naming the first field at fault."""
    conversation = plain_conversation(record, read, language, parsed)
    return conversation if conversation is not None else _checked_conversation(record, read, language, parsed)


# --- every record: each field read and checked ------------------------------------------------------


def _judgements(
    raw: dict[str, Any],
    read: FieldReader,
    prefix: str,
    position: int | None,
    conversation: ParsedConversation,
    parsed: ParsedImport,
) -> None:
    """The labels and verdicts of one turn (its prefix and position) or of the conversation ("", None)."""
    level = "conversation" if position is None else "turn"
    for key, parse_one, into in (
        ("labels", parse_label, conversation.labels),
        ("verdicts", parse_verdict, conversation.verdicts),
    ):
        field_name = f"{prefix}.{key}" if prefix else key
        for index, item in enumerate(read.items(raw.get(key), field_name)):
            judgement = parse_one(item, read, f"{field_name}[{index}]", position)
            into.append(judgement)
            parsed.add_judge(judgement.judge_defaults(level))


def _checked_conversation(
    record: Any, read: FieldReader, language: str | None, parsed: ParsedImport
) -> ParsedConversation:
    if not isinstance(record, dict):
        raise read.fail("(line)", f"expected a JSON object, got {describe(record)}")
    metadata = dict(read.mapping(record.get("metadata"), "metadata"))
    audio = read.string(record.get("audio"), "audio")
    if audio:
        metadata["audio"] = audio
    for key, value in record.items():
        if key not in CONVERSATION_KEYS:
            metadata[key] = value
    conversation = ParsedConversation(
        external_id=read.string(record.get("external_id"), "external_id", required=True, limit="external_id"),
        language=read.language(record.get("language"), "language", language),
        line=read.line,
        metadata=metadata,
    )
    for prefix, position, raw_turn in read.turn_objects(record.get("turns"), "turns"):
        turn_metadata = dict(read.mapping(raw_turn.get("metadata"), f"{prefix}.metadata"))
        turn_metadata.update({key: value for key, value in raw_turn.items() if key not in TURN_KEYS})
        conversation.turns.append(
            ParsedTurn(
                position=position,
                role=read.role(raw_turn.get("role"), f"{prefix}.role"),
                text=read.string(raw_turn.get("text"), f"{prefix}.text"),
                intended_text=read.string(raw_turn.get("intended_text"), f"{prefix}.intended_text"),
                audio_start_ms=read.integer(
                    raw_turn.get("audio_start_ms"), f"{prefix}.audio_start_ms", low=0, high=INT32_MAX
                ),
                audio_end_ms=read.integer(
                    raw_turn.get("audio_end_ms"), f"{prefix}.audio_end_ms", low=0, high=INT32_MAX
                ),
                entities=read.items(raw_turn.get("entities"), f"{prefix}.entities"),
                metadata=turn_metadata,
            )
        )
        _judgements(raw_turn, read, prefix, position, conversation, parsed)
    _judgements(record, read, "", None, conversation, parsed)
    check_unique_targets(conversation, read)
    return conversation


def parse_label(raw: Any, read: FieldReader, prefix: str, turn_position: int | None) -> ParsedLabel:
    if not isinstance(raw, dict):
        raise read.fail(prefix, f"expected an object, got {describe(raw)}")
    label = ParsedLabel(
        judge=read.judge(raw.get("judge"), f"{prefix}.judge"),
        turn_position=turn_position,
        rating=read.number(raw.get("rating"), f"{prefix}.rating"),
        label=read.string(raw.get("label"), f"{prefix}.label", limit="label"),
        passed=read.boolean(raw.get("passed"), f"{prefix}.passed"),
        failure_modes=read.failure_modes(raw.get("failure_modes"), f"{prefix}.failure_modes"),
        excluded=bool(read.boolean(raw.get("excluded"), f"{prefix}.excluded")),
        metadata=dict(read.mapping(raw.get("metadata"), f"{prefix}.metadata")),
    )
    label.metadata.update({key: value for key, value in raw.items() if key not in LABEL_KEYS})
    if not label.has_answer():
        raise read.fail(prefix, "a label needs at least one of rating, label, passed")
    return label


def parse_verdict(raw: Any, read: FieldReader, prefix: str, turn_position: int | None) -> ParsedVerdict:
    if not isinstance(raw, dict):
        raise read.fail(prefix, f"expected an object, got {describe(raw)}")
    status = read.string(raw.get("status"), f"{prefix}.status") or "resolved"
    if status not in VERDICT_STATUSES:
        raise read.fail(f"{prefix}.status", f"expected one of resolved, unresolved, error, got {describe(status)}")
    verdict = ParsedVerdict(
        judge=read.judge(raw.get("judge"), f"{prefix}.judge"),
        version=read.string(raw.get("version"), f"{prefix}.version", limit="version") or "imported",
        turn_position=turn_position,
        run_index=read.integer(raw.get("run_index"), f"{prefix}.run_index", low=0, high=SMALLINT_MAX) or 0,
        status=status,
        rating=read.number(raw.get("rating"), f"{prefix}.rating"),
        label=read.string(raw.get("label"), f"{prefix}.label", limit="label"),
        passed=read.boolean(raw.get("passed"), f"{prefix}.passed"),
        flags=read.items(raw.get("flags"), f"{prefix}.flags"),
        sub_scores=read.mapping(raw.get("sub_scores"), f"{prefix}.sub_scores"),
        explanation=read.string(raw.get("explanation"), f"{prefix}.explanation"),
        raw_text=read.string(raw.get("raw_text"), f"{prefix}.raw_text"),
    )
    extra = {key: value for key, value in raw.items() if key not in VERDICT_KEYS}
    if extra:
        verdict.sub_scores = {**verdict.sub_scores, "extra": extra}
    if status == "resolved" and not verdict.has_answer():
        raise read.fail(prefix, "a resolved verdict needs at least one of rating, label, passed")
    return verdict

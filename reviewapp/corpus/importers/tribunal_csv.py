"""Tribunal's CSV: one turn per row, rows of a conversation grouped by conversation_id (docs/formats.md)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

from reviewapp.corpus.importers import strict
from reviewapp.corpus.importers.limits import INT32_MAX, SMALLINT_MAX
from reviewapp.corpus.importers.records import (
    TURN_VALUES,
    FieldReader,
    ParsedConversation,
    ParsedImport,
    ParsedLabel,
    ParsedTurn,
    ParsedVerdict,
    RecordError,
    describe,
)
from reviewapp.corpus.importers.tribunal_jsonl import VERDICT_STATUSES

TURN_COLUMNS = {"conversation_id", "language", *TURN_VALUES, "conversation_metadata", "audio"}
GOLD_COLUMNS = {"judge", "gold_rating", "gold_label", "gold_passed", "gold_failure_modes", "gold_excluded"}
VERDICT_COLUMNS = {
    "judge_version",
    "verdict_rating",
    "verdict_label",
    "verdict_passed",
    "verdict_flags",
    "verdict_explanation",
    "verdict_status",
    "verdict_run_index",
}
REQUIRED_COLUMNS = ("conversation_id", "role", "text")


# Columns whose value is one line: a line break in them means a quote was left open above.
ONE_LINE_COLUMNS = (TURN_COLUMNS | GOLD_COLUMNS | VERDICT_COLUMNS) - {
    "text",
    "intended_text",
    "metadata",
    "conversation_metadata",
    "entities",
    "verdict_explanation",
}


def csv_rows(path: Path, display: str) -> Iterator[tuple[int, list[str]]]:
    """(line where the row starts, cells) of a strict CSV: quotes must close, fields stay under the
    csv module's limit; a malformed file raises RecordError at the row that starts the trouble, naming
    the column where it can tell (the header's name for the field the open quote starts)."""
    first_line: dict[str, str] = {}  # the physical line the current row started on
    header: list[str] = []

    def lines() -> Iterator[str]:
        for _, text in strict.text_lines(path, display):
            first_line.setdefault("text", text)
            yield text

    reader = csv.reader(lines(), strict=True)
    while True:
        start = reader.line_num + 1
        first_line.clear()
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            detail = str(exc)
            field = "(row)"
            if "field larger than field limit" in detail:
                message = f"a field is longer than {csv.field_size_limit():,} characters (the CSV field limit)"
            elif "unexpected end of data" in detail:
                message = "a quoted field is never closed: the quote runs to the end of the file"
                index = _open_quote_field(first_line.get("text", ""))
                if index is not None and index < len(header):
                    field = header[index]
            else:
                message = f"malformed CSV ({detail}): check the quotes on this row"
            raise RecordError(display, start, field, message) from exc
        if row:
            if not header:
                header = [name.strip() for name in row]
            yield start, row


def _open_quote_field(line: str) -> int | None:
    """The index of the field whose quote is still open at the end of `line`, or None."""
    index, quoted, at_field_start = 0, False, True
    position = 0
    while position < len(line):
        char = line[position]
        if quoted:
            if char == '"':
                if line[position + 1 : position + 2] == '"':
                    position += 1
                else:
                    quoted = False
        elif char == '"' and at_field_start:
            quoted = True
        elif char == ",":
            index += 1
            at_field_start = True
            position += 1
            continue
        at_field_start = False
        position += 1
    return index if quoted else None


def header(display: str) -> ParsedImport:
    return parse_header(display)


def parse_header(display: str) -> ParsedImport:
    return ParsedImport(fmt="csv", source=display, labels_make_validation=True)


def stream(
    path: Path, *, display: str, language: str | None, parsed: ParsedImport, progress: strict.ReadProgress | None = None
) -> Iterator[ParsedConversation | RecordError]:
    """The file's conversations and errors. A conversation's rows may be anywhere in the file and one bad
    row refuses the whole conversation, so the rows are all read before the first conversation is given."""
    whole = parse(path, display=display, language=language, into=parsed)
    errors, whole.errors = whole.errors, []
    conversations, whole.conversations = whole.conversations, []
    if progress is not None:
        progress.done = progress.total
    yield from errors
    yield from conversations


def parse(path: Path, *, display: str, language: str | None, into: ParsedImport | None = None) -> ParsedImport:
    parsed = into if into is not None else parse_header(display)
    conversations: dict[str, ParsedConversation] = {}
    bad_conversations: set[str] = set()
    rows = csv_rows(path, display)
    first = next(rows, None)
    header = [name.strip() for name in first[1]] if first else []
    missing = [column for column in REQUIRED_COLUMNS if column not in header]
    if missing:
        parsed.errors.append(RecordError(display, 1, missing[0], "required column is missing from the header"))
        return parsed
    repeated = sorted({name for name in header if header.count(name) > 1 and name})
    if repeated:
        parsed.errors.append(RecordError(display, 1, repeated[0], "the column appears twice in the header"))
        return parsed
    for number, cells in rows:
        read = FieldReader(display, number)
        if len(cells) != len(header):
            parsed.errors.append(
                read.fail(
                    "(row)",
                    f"the row has {len(cells)} fields, the header {len(header)}: a stray comma or an open quote?",
                )
            )
            continue
        row = dict(zip(header, cells, strict=True))
        conversation_id = (row.get("conversation_id") or "").strip()
        try:
            for column in ONE_LINE_COLUMNS:
                if "\n" in (row.get(column) or "") or "\r" in (row.get(column) or ""):
                    raise read.fail(column, "contains a line break: is a quote left open on this row?")
            if not conversation_id:
                raise read.fail("conversation_id", "is required")
            read.string(conversation_id, "conversation_id", limit="external_id")
            if conversation_id in bad_conversations:
                raise read.fail("conversation_id", "an earlier row of this conversation is invalid")
            conversation = conversations.get(conversation_id)
            if conversation is None:
                conversation = ParsedConversation(
                    external_id=conversation_id,
                    language=read.language(row.get("language"), "language", language),
                    line=number,
                    metadata=dict(read.mapping(row.get("conversation_metadata"), "conversation_metadata")),
                )
                audio = (row.get("audio") or "").strip()
                if audio:
                    conversation.metadata["audio"] = audio
            parse_row(row, read, conversation, parsed)
            conversations[conversation_id] = conversation
        except RecordError as error:
            parsed.errors.append(error)
            # A conversation with one bad row is refused whole: half a conversation misleads reviewers.
            bad_conversations.add(conversation_id)
    parsed.conversations = [c for key, c in conversations.items() if key not in bad_conversations]
    parsed.note_labels(any(conversation.labels for conversation in parsed.conversations))
    return parsed


def parse_row(row: dict, read: FieldReader, conversation: ParsedConversation, parsed: ParsedImport) -> None:
    position = read.integer(row.get("position"), "position", low=0, high=INT32_MAX)
    if position is None:
        position = max((turn.position for turn in conversation.turns), default=-1) + 1
    if any(turn.position == position for turn in conversation.turns):
        raise read.fail("position", f"position {position} appears twice in conversation {conversation.external_id}")
    metadata = dict(read.mapping(row.get("metadata"), "metadata"))
    known = TURN_COLUMNS | GOLD_COLUMNS | VERDICT_COLUMNS
    metadata.update({key: value for key, value in row.items() if key not in known and key and value not in (None, "")})
    entities = read.json_text(row["entities"], "entities") if row.get("entities") else []
    if not isinstance(entities, list):
        raise read.fail("entities", f"expected a JSON list, got {describe(entities)}")
    turn = ParsedTurn(
        position=position,
        role=read.role(row.get("role"), "role"),
        text=row.get("text") or "",
        intended_text=row.get("intended_text") or "",
        audio_start_ms=read.integer(row.get("audio_start_ms"), "audio_start_ms", low=0, high=INT32_MAX),
        audio_end_ms=read.integer(row.get("audio_end_ms"), "audio_end_ms", low=0, high=INT32_MAX),
        entities=entities,
        metadata=metadata,
    )
    judge = read.judge(row.get("judge"), "judge") if (row.get("judge") or "").strip() else ""
    label = verdict = None
    if any(row.get(column) not in (None, "") for column in GOLD_COLUMNS - {"judge"}):
        if not judge:
            raise read.fail("judge", "is required when a gold_* column is filled")
        label = ParsedLabel(
            judge=judge,
            turn_position=position,
            rating=read.number(row.get("gold_rating"), "gold_rating"),
            label=read.string((row.get("gold_label") or "").strip(), "gold_label", limit="label"),
            passed=read.boolean(row.get("gold_passed"), "gold_passed"),
            failure_modes=read.failure_modes(row.get("gold_failure_modes") or None, "gold_failure_modes"),
            excluded=bool(read.boolean(row.get("gold_excluded"), "gold_excluded")),
        )
        if not label.has_answer():
            raise read.fail("gold_rating", "a gold label needs at least one of gold_rating, gold_label, gold_passed")
    if any(row.get(column) not in (None, "") for column in VERDICT_COLUMNS - {"judge_version"}):
        if not judge:
            raise read.fail("judge", "is required when a verdict_* column is filled")
        status = (row.get("verdict_status") or "").strip() or "resolved"
        if status not in VERDICT_STATUSES:
            raise read.fail("verdict_status", f"expected one of resolved, unresolved, error, got {describe(status)}")
        flags = read.failure_modes(row.get("verdict_flags") or None, "verdict_flags")
        verdict = ParsedVerdict(
            judge=judge,
            version=read.string((row.get("judge_version") or "").strip(), "judge_version", limit="version")
            or "imported",
            turn_position=position,
            run_index=read.integer(row.get("verdict_run_index"), "verdict_run_index", low=0, high=SMALLINT_MAX) or 0,
            status=status,
            rating=read.number(row.get("verdict_rating"), "verdict_rating"),
            label=read.string((row.get("verdict_label") or "").strip(), "verdict_label", limit="label"),
            passed=read.boolean(row.get("verdict_passed"), "verdict_passed"),
            flags=list(flags),
            explanation=row.get("verdict_explanation") or "",
        )
        if status == "resolved" and not verdict.has_answer():
            raise read.fail(
                "verdict_rating", "a resolved verdict needs verdict_rating, verdict_label or verdict_passed"
            )
    conversation.turns.append(turn)
    for item in (label, verdict):
        if item is not None:
            parsed.add_judge(item.judge_defaults("turn"))
    if label is not None:
        conversation.labels.append(label)
    if verdict is not None:
        conversation.verdicts.append(verdict)

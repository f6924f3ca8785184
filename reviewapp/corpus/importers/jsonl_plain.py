"""Tribunal JSONL's common case, read without the field reader's generality.

`plain_conversation` reads a record whose every field already has its plain type (strings that are
strings, integers in range, objects that are objects, roles and statuses spelled as stored, no
unknown keys on a label or verdict) and gives the ParsedConversation that
`tribunal_jsonl._checked_conversation` would give; any other record, including every record with an
error, gets None and is read by the checked path, which accepts it or names the error. Nearly every
record of a machine-written file is plain, so this is where an import's reading time goes: each
field is looked at once, with no call per field.
"""

from __future__ import annotations

import math
from typing import Any

from reviewapp.corpus.importers.limits import (
    INT32_MAX,
    LIMITS,
    SMALLINT_MAX,
    language_problem,
    length_problem,
    slug_problem,
)
from reviewapp.corpus.importers.records import (
    LABEL_VALUES,
    ROLE_ALIASES,
    TURN_VALUES,
    VERDICT_VALUES,
    FieldReader,
    ParsedConversation,
    ParsedImport,
    ParsedLabel,
    ParsedTurn,
    ParsedVerdict,
    RecordError,
    describe,
)

CONVERSATION_KEYS = {"external_id", "language", "metadata", "audio", "turns", "labels", "verdicts"}
TURN_KEYS = {*TURN_VALUES, "labels", "verdicts"}
LABEL_KEYS = {"judge", *LABEL_VALUES}
# problem_code is Tribunal's reading of an answer, not a field of the file: a record's goes to "extra".
VERDICT_KEYS = {"judge", "version", *VERDICT_VALUES} - {"problem_code"}
VERDICT_STATUSES = ("resolved", "unresolved", "error")

PLAIN_ROLES = dict(ROLE_ALIASES)  # the exact spellings; any other goes the checked way
FLOAT_EXACT = 2**53  # an integer rating past this goes the checked way (its float may overflow)
_known_languages: set[str] = set()
_known_judges: set[str] = set()


class _NotPlain(Exception):
    """Raised inside the plain reading: the record goes the checked way."""


def _plain_language(value: Any, default: str | None) -> str | None:
    code = default or "en" if value is None or value == "" else value
    if type(code) is not str:
        return None
    if code not in _known_languages:
        if code != code.strip() or language_problem(code):
            return None
        if len(_known_languages) < 1000:
            _known_languages.add(code)
    return code


def plain_conversation(
    record: Any, read: FieldReader, language: str | None, parsed: ParsedImport
) -> ParsedConversation | None:
    if type(record) is not dict:
        return None
    external_id, turns, metadata = record.get("external_id"), record.get("turns"), record.get("metadata")
    if type(external_id) is not str or not external_id or length_problem(external_id, "external_id"):
        return None
    if type(turns) is not list or not turns or not (metadata is None or type(metadata) is dict):
        return None
    code = _plain_language(record.get("language"), language)
    audio = record.get("audio")
    if code is None or not (audio is None or type(audio) is str):
        return None
    metadata = dict(metadata) if metadata else {}
    if audio:
        metadata["audio"] = audio
    if not record.keys() <= CONVERSATION_KEYS:
        metadata.update({key: value for key, value in record.items() if key not in CONVERSATION_KEYS})
    conversation = ParsedConversation(external_id=external_id, language=code, line=read.line, metadata=metadata)
    positions: set[int] = set()
    append = conversation.turns.append
    try:
        for index, raw in enumerate(turns):
            if type(raw) is not dict:
                return None
            turn = _plain_turn(raw, index, positions)
            append(turn)
            if "labels" in raw or "verdicts" in raw:
                _plain_judgements(raw, turn.position, conversation, parsed)
        if "labels" in record or "verdicts" in record:
            _plain_judgements(record, None, conversation, parsed)
        check_unique_targets(conversation, read)
    except (_NotPlain, RecordError):
        return None
    return conversation


def _plain_turn(raw: dict[str, Any], index: int, positions: set[int]) -> ParsedTurn:
    # The checks of `_plain` and `_int_in` written out: a file has nine turns for every conversation,
    # and the six calls per turn were half of the turn's reading (3.8 us a turn, 1.7 us without them).
    get = raw.get
    position, role = get("position"), get("role")
    if position is None:
        position = index
    elif type(position) is not int or not 0 <= position <= INT32_MAX:
        raise _NotPlain
    role = PLAIN_ROLES.get(role) if type(role) is str else None
    if role is None or position in positions:
        raise _NotPlain
    text, intended, start, end = get("text"), get("intended_text"), get("audio_start_ms"), get("audio_end_ms")
    entities, metadata = get("entities"), get("metadata")
    if not (
        (text is None or type(text) is str)
        and (intended is None or type(intended) is str)
        and (start is None or (type(start) is int and 0 <= start <= INT32_MAX))
        and (end is None or (type(end) is int and 0 <= end <= INT32_MAX))
        and (entities is None or type(entities) is list)
        and (metadata is None or type(metadata) is dict)
    ):
        raise _NotPlain
    if not raw.keys() <= TURN_KEYS:  # the record's own keys go to the turn's metadata, a copy of its own
        metadata = {**(metadata or {}), **{key: value for key, value in raw.items() if key not in TURN_KEYS}}
    positions.add(position)
    return ParsedTurn(
        position,
        role,
        text or "",
        intended or "",
        start,
        end,
        [] if entities is None else entities,
        {} if metadata is None else metadata,
    )


def _plain(value: Any, kind: type) -> Any:
    """`value` when it is exactly a `kind` (a bool is no int), a new empty one when absent (None);
    anything else is for the checked reader."""
    if value is None:
        return kind()
    if type(value) is not kind:
        raise _NotPlain
    return value


def _int_in(value: Any, highest: int, default: int | None) -> int | None:
    """An int from 0 to `highest`, or `default` when absent."""
    if value is None:
        return default
    if type(value) is not int or not 0 <= value <= highest:
        raise _NotPlain
    return value


def _plain_judgements(
    raw: dict[str, Any], position: int | None, conversation: ParsedConversation, parsed: ParsedImport
) -> None:
    """The labels and verdicts of one turn (its position) or of the conversation (None)."""
    level = "conversation" if position is None else "turn"
    for key, read_one, into in (
        ("labels", _plain_label, conversation.labels),
        ("verdicts", _plain_verdict, conversation.verdicts),
    ):
        items = raw.get(key)
        if items is None or items == "":
            continue
        if type(items) is not list:
            raise _NotPlain
        for item in items:
            if type(item) is not dict:
                raise _NotPlain
            judgement = read_one(item, position)
            into.append(judgement)
            if judgement.judge not in parsed.judges:
                parsed.add_judge(judgement.judge_defaults(level))


def _judge(value: Any) -> str:
    if type(value) is not str:
        raise _NotPlain
    if value not in _known_judges:
        if not value or value != value.strip() or slug_problem(value):
            raise _NotPlain
        if len(_known_judges) < 1000:
            _known_judges.add(value)
    return value


def _rating(value: Any) -> float | None:
    if value is None:
        return None
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise _NotPlain
        return value
    if kind is int and -FLOAT_EXACT <= value <= FLOAT_EXACT:
        return float(value)
    raise _NotPlain


def _short_text(value: Any, limit: str = "") -> str:
    if value is None:
        return ""
    if type(value) is not str or (limit and len(value) > LIMITS[limit]):
        raise _NotPlain
    return value


def _answer(raw: dict[str, Any]) -> tuple[float | None, str, bool | None]:
    rating, label, passed = _unresolved_answer(raw)
    if rating is None and not label and passed is None:
        raise _NotPlain  # no answer: the checked way names the error
    return rating, label, passed


def _plain_label(raw: dict[str, Any], position: int | None) -> ParsedLabel:
    if not raw.keys() <= LABEL_KEYS:
        raise _NotPlain
    judge = _judge(raw.get("judge"))
    rating, label, passed = _answer(raw)
    modes, excluded, metadata = raw.get("failure_modes"), raw.get("excluded"), raw.get("metadata")
    if modes is None:
        modes = []
    elif type(modes) is list and all(type(mode) is str for mode in modes):
        modes = [mode.strip() for mode in modes if mode.strip()]
    else:
        raise _NotPlain
    excluded, metadata = _plain(excluded, bool), dict(_plain(metadata, dict))
    return ParsedLabel(
        judge=judge,
        turn_position=position,
        rating=rating,
        label=label,
        passed=passed,
        failure_modes=modes,
        excluded=excluded,
        metadata=metadata,
    )


def _plain_verdict(raw: dict[str, Any], position: int | None) -> ParsedVerdict:
    if not raw.keys() <= VERDICT_KEYS:
        raise _NotPlain
    judge = _judge(raw.get("judge"))
    status = raw.get("status")
    if status is None:
        status = "resolved"
    elif type(status) is not str or status not in VERDICT_STATUSES:
        raise _NotPlain
    rating, label, passed = _answer(raw) if status == "resolved" else _unresolved_answer(raw)
    version = _short_text(raw.get("version"), "version") or "imported"
    run_index = _int_in(raw.get("run_index"), SMALLINT_MAX, 0)
    flags, sub_scores = _plain(raw.get("flags"), list), _plain(raw.get("sub_scores"), dict)
    return ParsedVerdict(
        judge=judge,
        version=version,
        turn_position=position,
        run_index=run_index,
        status=status,
        rating=rating,
        label=label,
        passed=passed,
        flags=flags,
        sub_scores=sub_scores,
        explanation=_short_text(raw.get("explanation")),
        raw_text=_short_text(raw.get("raw_text")),
    )


def _unresolved_answer(raw: dict[str, Any]) -> tuple[float | None, str, bool | None]:
    """An unresolved or failed verdict may carry no answer at all."""
    rating, label, passed = _rating(raw.get("rating")), _short_text(raw.get("label"), "label"), raw.get("passed")
    if not (passed is None or type(passed) is bool):
        raise _NotPlain
    return rating, label, passed


def check_unique_targets(conversation: ParsedConversation, read: FieldReader) -> None:
    labels: set[tuple[str, int | None]] = set()
    for label in conversation.labels:
        key = (label.judge, label.turn_position)
        if key in labels:
            where = f"turn {label.turn_position}" if label.turn_position is not None else "the conversation"
            raise read.fail("labels", f"two gold labels from judge {describe(label.judge)} on {where}")
        labels.add(key)
    verdicts: set[tuple[str, str, int | None, int]] = set()
    for verdict in conversation.verdicts:
        key = (verdict.judge, verdict.version, verdict.turn_position, verdict.run_index)
        if key in verdicts:
            raise read.fail(
                "verdicts",
                f"two verdicts from {verdict.judge}@{verdict.version} run {verdict.run_index} on the same target",
            )
        verdicts.add(key)

"""EVA run folders: `records/<record_id>/` with result.json, transcript.jsonl and the processed context.

Turns come from the processed context's `conversation_trace` when there is one: speech turns keep
what TTS was asked to say (`intended_*_turns`, Turn.intended_text) beside what was heard
(`transcribed_*_turns`, Turn.text), keyed by EVA turn id. EVA numbers assistant and user turns
separately (assistant 0 is the greeting, user k answers assistant k-1), so a turn id only means
something together with its role. Audio timestamps are epoch seconds; turns store milliseconds from
the first timestamp of the conversation. Without a processed context, transcript.jsonl gives one turn
per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from reviewapp.corpus.importers import strict
from reviewapp.corpus.importers.audio import attach_record_audio
from reviewapp.corpus.importers.eva_validation import EVENT_SHAPE_KEY, key_shape
from reviewapp.corpus.importers.limits import INT32_MAX
from reviewapp.corpus.importers.records import (
    FieldReader,
    ParsedConversation,
    ParsedImport,
    ParsedTurn,
    RecordError,
    compact_json,
    describe,
)

CONTEXT_NAMES = ("processed_context.json", "expected_processor_context.json")
SPEECH_ROLES = {"assistant": "agent", "agent": "agent", "user": "user"}
TURN_KEYED = re.compile(r"^(intended|transcribed|audio_timestamps)_(assistant|user)_turns$")


def record_folders(path: Path) -> list[Path]:
    """PATH may be one record folder, a records/ folder, or a run folder containing records/."""
    if _is_record(path):
        return [path]
    root = path / "records" if (path / "records").is_dir() else path
    return sorted((child for child in root.iterdir() if child.is_dir() and _is_record(child)), key=_natural_key)


def dataset_name_for(path: Path) -> str:
    path = path.resolve()
    return path.parent.name if path.name == "records" else path.name


def _is_record(folder: Path) -> bool:
    return (folder / "transcript.jsonl").is_file() or (folder / "result.json").is_file() or bool(_context_file(folder))


def _context_file(folder: Path) -> Path | None:
    for name in CONTEXT_NAMES:
        if (folder / name).is_file():
            return folder / name
    candidates = sorted(p for p in folder.glob("*context*.json") if p.is_file())
    return candidates[0] if candidates else None


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def header(display: str) -> ParsedImport:
    return ParsedImport(fmt="eva-run", source=display, dataset_kind="run")


def stream(
    path: Path, *, display: str, language: str | None, parsed: ParsedImport, progress: strict.ReadProgress | None = None
) -> Iterator[ParsedConversation | RecordError]:
    """Each record folder's conversation, or the RecordError that refuses it (one record in memory).
    `progress` counts record folders."""
    # Links are refused before anything is read: nothing outside the folder may come in.
    strict.check_folder(path, display)
    folders = record_folders(path)
    if not folders:
        yield RecordError(
            display, None, "records", "no EVA record folder found (result.json, transcript.jsonl or *context*.json)"
        )
    if progress is not None:
        progress.total = len(folders)
    base = path if path not in folders else path.parent
    seen: set[str] = set()
    for folder in folders:
        try:
            conversation = parse_record(folder, base=base, language=language)
        except RecordError as error:
            yield error
        else:
            if conversation.external_id not in seen:  # a second record with the same id adds nothing
                seen.add(conversation.external_id)
                yield conversation
        if progress is not None:
            progress.done += 1


def parse(path: Path, *, display: str, language: str | None) -> ParsedImport:
    parsed = header(display)
    return parsed.collect(stream(path, display=display, language=language, parsed=parsed))


def _load_json(file: Path, base: Path) -> Any:
    return strict.json_file(file, _display(file, base))


def _display(file: Path, base: Path) -> str:
    try:
        return str(file.relative_to(base))
    except ValueError:
        return str(file)


def parse_record(folder: Path, *, base: Path, language: str | None) -> ParsedConversation:
    result_file = folder / "result.json"
    result: dict[str, Any] = {}
    if result_file.is_file():
        loaded = _load_json(result_file, base)
        if not isinstance(loaded, dict):
            raise RecordError(
                _display(result_file, base), 1, "(file)", f"expected a JSON object, got {describe(loaded)}"
            )
        result = loaded
    read_result = FieldReader(_display(result_file, base), None)
    record_id = read_result.string(result.get("record_id"), "record_id", limit="external_id") or folder.name
    if not result.get("record_id"):
        read_result.string(folder.name, "(folder name)", limit="external_id")
    metadata: dict[str, Any] = dict(result)
    metadata["source_files"] = sorted(p.name for p in folder.iterdir() if p.is_file())
    conversation = ParsedConversation(
        external_id=record_id,
        language=read_result.language(result.get("language"), "language", language),
        metadata=metadata,
    )
    context_file = _context_file(folder)
    if context_file is not None:
        context = _load_json(context_file, base)
        read = FieldReader(_display(context_file, base), None)
        if not isinstance(context, dict):
            raise read.fail("(file)", f"expected a JSON object, got {describe(context)}")
        conversation.turns = turns_from_context(context, read)
        conversation.metadata["context"] = {
            key: value
            for key, value in context.items()
            if not TURN_KEYED.match(key) and key not in ("conversation_trace", "tool_params", "tool_responses")
        }
        conversation.metadata["context_file"] = context_file.name
    elif (folder / "transcript.jsonl").is_file():
        conversation.turns = turns_from_transcript(
            folder / "transcript.jsonl", _display(folder / "transcript.jsonl", base)
        )
    else:
        raise RecordError(
            _display(folder, base), None, "transcript.jsonl", "record has neither a processed context nor a transcript"
        )
    attach_record_audio(conversation, folder, display=_display(folder / "audio_mixed.wav", base))
    return conversation


def turns_from_context(context: dict[str, Any], read: FieldReader) -> list[ParsedTurn]:
    texts = {
        (kind, SPEECH_ROLES[role]): _keyed(read.mapping(context.get(f"{kind}_{role}_turns"), f"{kind}_{role}_turns"))
        for kind in ("intended", "transcribed", "audio_timestamps")
        for role in ("assistant", "user")
    }
    origin = _first_timestamp(texts, read)
    interrupted = {
        "agent": set(_ints(context.get("assistant_interrupted_turns"))),
        "user": set(_ints(context.get("user_interrupted_turns"))),
    }
    latencies = _keyed(read.mapping(context.get("latency_assistant_turns"), "latency_assistant_turns"))

    trace = read.items(context.get("conversation_trace"), "conversation_trace")
    events: list[tuple[str, dict[str, Any]]] = []
    if trace:
        for index, event in enumerate(trace):
            if not isinstance(event, dict):
                raise read.fail(f"conversation_trace[{index}]", f"expected an object, got {describe(event)}")
            events.append((f"conversation_trace[{index}]", event))
    else:
        # No trace: speech turns ordered by turn id, the user's turn k before the assistant's answer k.
        ids = {
            (int(k), role) for (kind, role), d in texts.items() if kind != "audio_timestamps" for k in d if k.isdigit()
        }
        for turn_id, role in sorted(ids, key=lambda item: (item[0], item[1] != "user")):
            events.append(("", {"role": "assistant" if role == "agent" else "user", "turn_id": turn_id, "type": ""}))

    turns: list[ParsedTurn] = []
    for field_name, event in events:
        kind = event.get("type")
        turn_id = event.get("turn_id")
        if kind in ("tool_call", "tool_response"):
            body = {key: value for key, value in event.items() if key not in ("type", "turn_id")}
            turns.append(
                ParsedTurn(
                    position=len(turns),
                    role=kind,
                    text=compact_json(body),
                    metadata={
                        "eva_turn_id": turn_id,
                        "tool_name": event.get("tool_name"),
                        "event": event,
                        EVENT_SHAPE_KEY: key_shape(event),
                    },
                )
            )
            continue
        role = SPEECH_ROLES.get(str(event.get("role", "")).lower())
        if role is None:
            raise read.fail(f"{field_name}.role", f"expected assistant or user, got {describe(event.get('role'))}")
        key = str(turn_id)
        trace_content = event.get("content")
        intended = texts[("intended", role)].get(key)
        transcribed = texts[("transcribed", role)].get(key)
        if intended is None and kind == "intended":
            intended = trace_content
        if transcribed is None and kind == "transcribed":
            transcribed = trace_content
        segments = texts[("audio_timestamps", role)].get(key) or []
        segments_ms = [
            [_ms(start, origin, read, role, key), _ms(end, origin, read, role, key)]
            for start, end in _pairs(segments, read, role, key)
        ]
        metadata: dict[str, Any] = {"eva_turn_id": turn_id}
        if kind:
            metadata["trace_type"] = kind
        if trace_content is not None and trace_content not in (intended, transcribed):
            metadata["trace_content"] = trace_content
        parts = [
            part.strip()
            for part in re.split(r"\n+", str((trace_content if kind == "intended" else None) or intended or ""))
            if part.strip()
        ]
        if len(parts) > 1:
            metadata["intended_segments"] = parts
        if len(segments_ms) > 1:
            metadata["audio_segments_ms"] = segments_ms
        if isinstance(turn_id, int) and turn_id in interrupted[role]:
            metadata["interrupted"] = True
        if role == "agent" and key in latencies:
            metadata["latency_s"] = latencies[key]
        turns.append(
            ParsedTurn(
                position=len(turns),
                role=role,
                text=str(transcribed or ""),
                intended_text=str(intended or ""),
                audio_start_ms=segments_ms[0][0] if segments_ms else None,
                audio_end_ms=segments_ms[-1][1] if segments_ms else None,
                metadata=metadata,
            )
        )
    return turns


def turns_from_transcript(file: Path, display: str) -> list[ParsedTurn]:
    turns: list[ParsedTurn] = []
    origin: datetime | None = None
    for item in strict.json_lines(file, display):
        if isinstance(item, RecordError):
            raise item
        number, line = item
        read = FieldReader(display, number)
        if not isinstance(line, dict):
            raise read.fail("(line)", f"expected a JSON object, got {describe(line)}")
        role = read.role(line.get("role"), "role")
        start_ms = None
        stamp = line.get("timestamp")
        if stamp:
            try:
                moment = datetime.fromisoformat(str(stamp))
            except ValueError as exc:
                raise read.fail("timestamp", f"expected an ISO 8601 time, got {describe(stamp)}") from exc
            origin = origin or moment
            try:
                start_ms = round((moment - origin).total_seconds() * 1000)
            except TypeError as exc:
                raise read.fail("timestamp", "mixes times with and without a time zone") from exc
            if not 0 <= start_ms <= INT32_MAX:
                raise read.fail(
                    "timestamp", f"{describe(stamp)} is {start_ms} ms from the first line: outside 0-{INT32_MAX}"
                )
        extra = {key: value for key, value in line.items() if key not in ("role", "content")}
        turns.append(
            ParsedTurn(
                position=len(turns),
                role=role,
                text=read.string(line.get("content"), "content").strip(),
                audio_start_ms=start_ms,
                metadata=extra,
            )
        )
    return turns


def _keyed(mapping: dict[str, Any]) -> dict[str, Any]:
    return {str(key): value for key, value in mapping.items()}


def _ints(values: Any) -> list[int]:
    return [value for value in values or [] if isinstance(value, int)]


def _pairs(segments: Any, read: FieldReader, role: str, key: str) -> list[tuple[float, float]]:
    field_name = f"audio_timestamps_{'assistant' if role == 'agent' else 'user'}_turns.{key}"
    if segments and isinstance(segments[0], int | float):
        segments = [segments]
    pairs = []
    for segment in segments:
        if not (isinstance(segment, list) and len(segment) == 2 and all(isinstance(v, int | float) for v in segment)):
            raise read.fail(field_name, f"expected [start, end] pairs of epoch seconds, got {describe(segment)}")
        try:
            pairs.append((float(segment[0]), float(segment[1])))
        except OverflowError as exc:
            raise read.fail(field_name, f"a time is too large: {describe(segment)}") from exc
    return pairs


def _first_timestamp(texts: dict[tuple[str, str], dict[str, Any]], read: FieldReader) -> float:
    starts = []
    for role in ("agent", "user"):
        for key, segments in texts[("audio_timestamps", role)].items():
            starts.extend(start for start, _ in _pairs(segments, read, role, key))
    return min(starts, default=0.0)


def _ms(seconds: float, origin: float, read: FieldReader, role: str, key: str) -> int:
    """Milliseconds from the conversation's first timestamp, within the Turn column's range."""
    ms = round((seconds - origin) * 1000)
    if not 0 <= ms <= INT32_MAX:
        field_name = f"audio_timestamps_{'assistant' if role == 'agent' else 'user'}_turns.{key}"
        raise read.fail(field_name, f"a time {ms} ms from the first one is outside 0-{INT32_MAX} ms")
    return ms

"""Audio that comes with an import: found and checked while parsing, copied into media storage when written.

* EVA run records: `audio_mixed.wav` in the record folder (both speakers, the recording the turns'
  timestamps point into).
* Tribunal JSONL / CSV: the conversation's `audio` field, a path relative to the import file.

A path is refused (file, line, field) when it is absolute, climbs out with `..`, or is a link
that leads outside the import folder; when the file is missing, not a WAV the server can cut, or
when a turn's segment starts after the audio ends. An address (http://, https://) is kept in the
conversation's metadata but never fetched. A conversation without audio gets none, and the
screens say so.

Files are stored once by content (`audio/imports/<sha256>.wav`), so importing the same file
twice, or two conversations sharing a recording, keeps one copy, and a re-import writes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from django.core.files import File
from django.core.files.storage import default_storage
from django.db.models import Case, CharField, Value, When

from reviewapp.corpus.importers.records import ParsedConversation, ParsedImport, RecordError
from reviewapp.models import Conversation
from scoring.audio import AudioError, wav_info

EVA_AUDIO_NAME = "audio_mixed.wav"
AUDIO_SUFFIXES = (".wav",)
URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
STORAGE_PREFIX = "audio/imports"


def safe_path(root: Path, value: str, *, file: str, line: int | None, field: str) -> Path:
    """`value` resolved inside `root`, or a RecordError saying why it is refused."""

    def fail(message: str) -> RecordError:
        return RecordError(file, line, field, message)

    if "\x00" in value:
        raise fail("the path contains a NUL character")
    if PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive:
        raise fail(f"{value!r} is an absolute path; give a path relative to the import file")
    parts = PurePosixPath(value.replace("\\", "/")).parts
    if ".." in parts:
        raise fail(f"{value!r} leaves the import folder ('..' is refused)")
    root = root.resolve()
    candidate = root.joinpath(*parts)
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise fail(f"{value!r} is a link that leads outside the import folder")
    if not resolved.is_file():
        raise fail(f"no audio file at {value!r} (looked in {root})")
    if resolved.suffix.lower() not in AUDIO_SUFFIXES:
        raise fail(f"{value!r} is not a WAV file (expected one of {', '.join(AUDIO_SUFFIXES)})")
    return resolved


def describe_file(path: Path, *, given: str, file: str, line: int | None, field: str) -> dict[str, Any]:
    """What the conversation's metadata keeps about its audio: where it came from, hash, size, duration."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        handle.seek(0)
        try:
            info = wav_info(handle)
        except AudioError as exc:
            raise RecordError(file, line, field, f"{given!r}: {exc}") from exc
    return {
        "path": given,
        "sha256": digest.hexdigest(),
        "bytes": path.stat().st_size,
        "duration_ms": info.duration_ms,
        "format": "wav",
    }


def _check_segments(conversation: ParsedConversation, duration_ms: int, *, file: str, line: int | None) -> None:
    for turn in conversation.turns:
        if turn.audio_start_ms is not None and turn.audio_start_ms >= duration_ms:
            raise RecordError(
                file,
                line,
                f"turns[{turn.position}].audio_start_ms",
                f"the turn starts at {turn.audio_start_ms} ms, after the end of the audio ({duration_ms} ms)",
            )
        if (
            turn.audio_start_ms is not None
            and turn.audio_end_ms is not None
            and turn.audio_end_ms < turn.audio_start_ms
        ):
            raise RecordError(
                file,
                line,
                f"turns[{turn.position}].audio_end_ms",
                f"the turn ends ({turn.audio_end_ms} ms) before it starts ({turn.audio_start_ms} ms)",
            )


def _attach(conversation: ParsedConversation, path: Path, given: str, *, file: str, line: int | None) -> None:
    described = describe_file(path, given=given, file=file, line=line, field="audio")
    _check_segments(conversation, described["duration_ms"], file=file, line=line)
    conversation.metadata["audio"] = described
    conversation.audio_file = path


def attach_record_audio(conversation: ParsedConversation, folder: Path, *, display: str) -> None:
    """An EVA record's `audio_mixed.wav`, when there is one; a link out of the record folder is refused."""
    candidate = folder / EVA_AUDIO_NAME
    if not (candidate.exists() or candidate.is_symlink()):
        return
    path = safe_path(folder, EVA_AUDIO_NAME, file=display, line=None, field=EVA_AUDIO_NAME)
    _attach(conversation, path, EVA_AUDIO_NAME, file=display, line=None)


def attach_listed_audio_one(conversation: ParsedConversation, *, root: Path, display: str) -> None:
    """JSONL / CSV: resolve one conversation's `audio` path (RecordError when it is refused)."""
    given = conversation.metadata.get("audio")
    if not isinstance(given, str) or not given.strip() or URL.match(given.strip()):
        return
    path = safe_path(root, given.strip(), file=display, line=conversation.line, field="audio")
    _attach(conversation, path, given.strip(), file=display, line=conversation.line)


def attach_listed_audio(parsed: ParsedImport, *, root: Path, display: str) -> None:
    """JSONL / CSV: resolve each conversation's `audio` path; a conversation whose audio is refused is
    moved to the import's errors (refused whole, like any other bad record)."""
    kept: list[ParsedConversation] = []
    for conversation in parsed.conversations:
        try:
            attach_listed_audio_one(conversation, root=root, display=display)
        except RecordError as error:
            parsed.errors.append(error)
            continue
        kept.append(conversation)
    parsed.conversations = kept


def storage_name(sha256: str) -> str:
    return f"{STORAGE_PREFIX}/{sha256[:2]}/{sha256}.wav"


def store_audio(conversations: Iterable[ParsedConversation], conversation_ids: dict[str, int]) -> int:
    """Copy each conversation's audio into media storage (once per content) and point the conversation
    at it, where it has no audio yet; returns how many conversations got audio."""
    by_name: dict[str, list[int]] = {}
    for conversation in conversations:
        source = getattr(conversation, "audio_file", None)
        described = conversation.metadata.get("audio")
        if source is None or not isinstance(described, dict):
            continue
        name = storage_name(described["sha256"])
        if not default_storage.exists(name):
            with Path(source).open("rb") as handle:
                saved = default_storage.save(name, File(handle, name=Path(name).name))
            if saved != name:  # another import stored the same content a moment earlier
                default_storage.delete(saved)
        by_name.setdefault(name, []).append(conversation_ids[conversation.external_id[:200]])
    names = {conversation_id: name for name, ids in by_name.items() for conversation_id in ids}
    if not names:
        return 0
    # One UPDATE per 500 conversations, so the writer's query count does not grow with every recording.
    updated = 0
    pairs = sorted(names.items())
    for start in range(0, len(pairs), 500):
        batch = pairs[start : start + 500]
        updated += Conversation.objects.filter(pk__in=[pk for pk, _ in batch], audio="").update(
            audio=Case(*(When(pk=pk, then=Value(name)) for pk, name in batch), output_field=CharField())
        )
    return updated

"""Importers: one module per input format, each streaming `records.ParsedConversation`s.

`open_stream` picks the format (or detects it with fmt="auto") and returns the import's header
(`records.ParsedImport`, with no conversations) and an iterator over the input's conversations and
errors, one record at a time; `reviewapp.corpus.services.imports.dataset_import` writes them in batches
(`bulk.StreamWriter`) in one transaction. `parse_path` keeps the whole input in memory instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from reviewapp.corpus.importers import audio, eva_run, eva_validation, strict, tribunal_csv, tribunal_jsonl
from reviewapp.corpus.importers.limits import language_problem
from reviewapp.corpus.importers.records import ParsedConversation, ParsedImport, RecordError
from reviewapp.corpus.importers.strict import ReadProgress

FORMATS = ("auto", "jsonl", "csv", "eva-run", "eva-validation")

STREAMS = {
    "jsonl": tribunal_jsonl.stream,
    "csv": tribunal_csv.stream,
    "eva-run": eva_run.stream,
    "eva-validation": eva_validation.stream,
}

__all__ = [
    "FORMATS",
    "ImportStream",
    "ParsedImport",
    "RecordError",
    "default_dataset_name",
    "detect_format",
    "open_stream",
    "parse_path",
]


@dataclass
class ImportStream:
    """One input being read: its format, its header (judges met so far, kind, content hash), its
    conversations and errors in input order, and how far the reading has got."""

    fmt: str
    path: Path
    header: ParsedImport
    items: Iterator[ParsedConversation | RecordError]
    progress: ReadProgress


def detect_format(path: Path) -> str:
    """A folder is an EVA run; .csv is Tribunal CSV; JSONL is told apart by its first record's fields."""
    if path.is_dir():
        return "eva-run"
    if path.suffix.lower() == ".csv":
        return "csv"
    for number, raw in strict.text_lines(path, path.name):
        if not raw.strip():
            continue
        record = strict.json_value(raw, path.name, number)
        if isinstance(record, dict) and "turns" in record:
            return "jsonl"
        if eva_validation.looks_like_validation(record):
            return "eva-validation"
        raise RecordError(
            path.name,
            number,
            "(record)",
            "cannot tell the format: expected `turns` (Tribunal JSONL) or conv_turns / trace / "
            "intended_turns / user_tts (EVA validation set); pass --format",
        )
    raise RecordError(path.name, None, "(file)", "the file is empty")


def default_dataset_name(path: Path, fmt: str) -> str:
    if fmt == "eva-run":
        return eva_run.dataset_name_for(path)
    return path.stem


def open_stream(path: Path, *, fmt: str = "auto", language: str | None = None, hashed: bool = True) -> ImportStream:
    """Check the path and the options, pick the format; RecordError when the input cannot be read at all.
    With `hashed=False` the header's content_sha256 is left for the caller to set (`content_hash`).

    Reading starts when `items` is iterated; a file that cannot be read from its first byte (UTF-16,
    a symbolic link in an EVA folder) raises RecordError from the iteration."""
    if fmt not in FORMATS:
        raise RecordError(str(path), None, "--format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if not path.exists():
        raise RecordError(str(path), None, "PATH", "no such file or folder")
    if language:
        problem = language_problem(language)
        if problem:
            raise RecordError(str(path), None, "--language", problem)
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "eva-run" and not path.is_dir():
        raise RecordError(str(path), None, "PATH", "an EVA run import needs a folder (records/, or one record)")
    if fmt != "eva-run" and path.is_dir():
        raise RecordError(str(path), None, "PATH", f"a {fmt} import needs a file, not a folder")
    display = path.name
    header = {
        "jsonl": lambda: tribunal_jsonl.header(display),
        "csv": lambda: tribunal_csv.header(display),
        "eva-run": lambda: eva_run.header(display),
        "eva-validation": lambda: eva_validation.header(path, display),
    }[fmt]()
    if hashed:
        header.content_sha256 = content_hash(path)
    progress = ReadProgress(total=0 if path.is_dir() else path.stat().st_size)
    items = STREAMS[fmt](path, display=display, language=language, parsed=header, progress=progress)
    if fmt in ("jsonl", "csv"):
        items = _with_listed_audio(items, root=path.parent, display=display)
    return ImportStream(fmt=fmt, path=path, header=header, items=items, progress=progress)


def _with_listed_audio(
    items: Iterator[ParsedConversation | RecordError], *, root: Path, display: str
) -> Iterator[ParsedConversation | RecordError]:
    """A conversation whose audio is refused becomes that error (refused whole, like any bad record)."""
    for item in items:
        if isinstance(item, ParsedConversation):
            try:
                audio.attach_listed_audio_one(item, root=root, display=display)
            except RecordError as error:
                yield error
                continue
        yield item


def parse_path(path: Path, *, fmt: str = "auto", language: str | None = None) -> ParsedImport:
    """The whole input in memory: every conversation and every error (for small inputs and tests)."""
    stream = open_stream(path, fmt=fmt, language=language)
    return stream.header.collect(stream.items)


def content_hash(path: Path, stop: Callable[[], bool] | None = None) -> str:
    """sha256 over the file, or over every file of a folder (names and bytes), in a stable order; "" as
    soon as `stop()` says so (it is asked between blocks of a MiB)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda handle=handle: handle.read(1 << 20), b""):
                if stop is not None and stop():
                    return ""
                digest.update(block)
    return digest.hexdigest()

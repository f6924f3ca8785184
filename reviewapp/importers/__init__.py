"""Importers: one module per input format, all producing `records.ParsedImport` for `writer`.

`parse_path` picks the format (or detects it with fmt="auto") and parses the whole input before
anything is written; `reviewapp.services.imports.dataset_import` then writes it in one transaction.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import audio, eva_run, eva_validation, strict, tribunal_csv, tribunal_jsonl
from .limits import language_problem
from .records import ParsedImport, RecordError

FORMATS = ("auto", "jsonl", "csv", "eva-run", "eva-validation")
PARSERS = {
    "jsonl": tribunal_jsonl.parse,
    "csv": tribunal_csv.parse,
    "eva-run": eva_run.parse,
    "eva-validation": eva_validation.parse,
}

__all__ = ["FORMATS", "ParsedImport", "RecordError", "default_dataset_name", "detect_format", "parse_path"]


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


def parse_path(path: Path, *, fmt: str = "auto", language: str | None = None) -> ParsedImport:
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
    parsed = PARSERS[fmt](path, display=display, language=language)
    if fmt in ("jsonl", "csv"):
        audio.attach_listed_audio(parsed, root=path.parent, display=display)
    parsed.content_sha256 = content_hash(path)
    return parsed


def content_hash(path: Path) -> str:
    """sha256 over the file, or over every file of a folder (names and bytes), in a stable order."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda handle=handle: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()

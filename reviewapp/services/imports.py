"""Imports: conversations, gold labels and judge outputs from files into a dataset.

`dataset_import` parses the whole input first (reviewapp.importers), refuses it if any record is bad
(unless skip_invalid), then writes everything in bulk in one transaction: a failure leaves the
database as it was. Re-importing the same input changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from reviewapp.importers import default_dataset_name, parse_path
from reviewapp.importers.limits import length_problem
from reviewapp.importers.records import ParsedImport, RecordError
from reviewapp.importers.writer import write_parsed


@dataclass
class ImportSummary:
    dataset: str | None
    format: str
    conversations: int = 0
    turns: int = 0
    labels: int = 0
    verdicts: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    created: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.dataset is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "format": self.format,
            "conversations": self.conversations,
            "turns": self.turns,
            "labels": self.labels,
            "verdicts": self.verdicts,
            "skipped": self.skipped,
            "errors": self.errors,
            "created": self.created,
        }


class ImportFailed(ValueError):
    """The input was refused; nothing was written. `summary.errors` lists every bad record."""

    def __init__(self, summary: ImportSummary):
        self.summary = summary
        first = summary.errors[0] if summary.errors else {}
        message = str(
            RecordError(first.get("file", ""), first.get("line"), first.get("field", ""), first.get("message", ""))
        )
        if len(summary.errors) > 1:
            message += f" (and {len(summary.errors) - 1} more)"
        super().__init__(message)


def dataset_import(
    *,
    path: str | Path,
    fmt: str = "auto",
    dataset_name: str | None = None,
    language: str | None = None,
    skip_invalid: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> ImportSummary:
    """Import `path` into the dataset `dataset_name` (default: derived from the path).

    Raises ImportFailed when the input cannot be read, or when a record is invalid and skip_invalid
    is False; with skip_invalid the good records are imported and the bad ones listed in `errors`.
    `progress(stage, percent)` is told where the import stands (the browser's progress bar).
    """
    path = Path(path)
    report = progress or (lambda stage, percent: None)
    report("reading and checking every record", 10)
    try:
        parsed = parse_path(path, fmt=fmt or "auto", language=language or None)
    except RecordError as error:
        raise ImportFailed(ImportSummary(dataset=None, format=fmt, errors=[error.as_dict()], skipped=0)) from error
    except (OSError, UnicodeDecodeError) as error:
        failure = RecordError(path.name, None, "(file)", f"cannot read: {error}")
        raise ImportFailed(ImportSummary(dataset=None, format=fmt, errors=[failure.as_dict()])) from error

    summary = _summary_of(parsed)
    if parsed.errors and not skip_invalid:
        raise ImportFailed(summary)
    name = dataset_name or default_dataset_name(path, parsed.fmt)
    problem = length_problem(name, "dataset_name")
    if problem:
        failure = RecordError(path.name, None, "--dataset", f"the dataset name {problem}")
        raise ImportFailed(ImportSummary(dataset=None, format=parsed.fmt, errors=[failure.as_dict()]))
    report(f"writing {summary.conversations} conversations and {summary.turns} turns", 60)
    with transaction.atomic():
        dataset, created = write_parsed(parsed, dataset_name=name, source=f"{parsed.fmt}:{path}")
    summary.dataset = dataset.name
    summary.created = created
    return summary


def _summary_of(parsed: ParsedImport) -> ImportSummary:
    conversations = parsed.conversations
    return ImportSummary(
        dataset=None,
        format=parsed.fmt,
        conversations=len(conversations),
        turns=sum(len(c.turns) for c in conversations),
        labels=sum(len(c.labels) for c in conversations),
        verdicts=sum(len(c.verdicts) for c in conversations),
        skipped=len(parsed.errors),
        errors=[error.as_dict() for error in parsed.errors],
    )

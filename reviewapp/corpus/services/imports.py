"""Imports: conversations, gold labels and judge outputs from files into a dataset.

`dataset_import` streams the input (reviewapp.corpus.importers.open_stream), checking each record as it is
read, and writes the good ones in batches (reviewapp.corpus.importers.bulk) inside one transaction, on
a second thread while the next batch is read (importers.pipeline), so memory holds a few batches
whatever the input's size. A bad record (unless skip_invalid) stops the
writing, the rest of the input is still read so that every bad record is listed, and the
transaction is rolled back: a refused input leaves the database as it was. Re-importing the same
input changes nothing.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from reviewapp import planner_statistics
from reviewapp.corpus.importers import ImportStream, content_hash, default_dataset_name, open_stream, reading_process
from reviewapp.corpus.importers.bulk import BATCH_CONVERSATIONS, ParentIds, Prepared, StreamWriter
from reviewapp.corpus.importers.limits import length_problem
from reviewapp.corpus.importers.pipeline import WriterThread
from reviewapp.corpus.importers.records import ParsedConversation, RecordError
from scoring.errors import TribunalError
from scoring.records import record_dict

logger = logging.getLogger(__name__)


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
        return record_dict(self)


class ImportFailed(TribunalError, ValueError):
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


class _Refused(Exception):
    """Raised inside the import's transaction to roll it back; the summary says why."""


def dataset_import(
    *,
    path: str | Path,
    fmt: str = "auto",
    dataset_name: str | None = None,
    language: str | None = None,
    skip_invalid: bool = False,
    progress: Callable[[str, int], None] | None = None,
    method: str | None = None,
    batch_size: int = BATCH_CONVERSATIONS,
) -> ImportSummary:
    """Import `path` into the dataset `dataset_name` (default: derived from the path).

    Raises ImportFailed when the input cannot be read, or when a record is invalid and skip_invalid
    is False; with skip_invalid the good records are imported and the bad ones listed in `errors`.
    `progress(stage, percent)` is told where the import stands (the browser's progress bar), on the
    writing thread between two batches; it must not write through the import's own connection (whose
    row triggers may be off from batch to batch, importers.keys), and what it writes there would not be
    seen before the import commits anyway: import_progress.OutsideProgress writes outside it.
    `method` picks how rows are written ("copy" on PostgreSQL, or "insert": multi-row INSERTs;
    default: the fastest the database has).
    """
    path = Path(path)
    report = progress or (lambda stage, percent: None)
    report("reading and checking every record", 10)
    try:
        stream = open_stream(path, fmt=fmt or "auto", language=language or None, hashed=False)
    except RecordError as error:
        raise ImportFailed(ImportSummary(dataset=None, format=fmt, errors=[error.as_dict()], skipped=0)) from error
    except (OSError, UnicodeDecodeError) as error:
        raise ImportFailed(_unreadable(path, fmt, error)) from error
    name = dataset_name or default_dataset_name(path, stream.fmt)
    name_problem = length_problem(name, "dataset_name")
    summary = ImportSummary(dataset=None, format=stream.fmt)
    try:
        with transaction.atomic(), _WithoutCycleCollection():
            writer = StreamWriter(header=stream.header, dataset_name=name, source=f"{stream.fmt}:{path}", method=method)
            if not name_problem:
                writer.start()

            read = None
            if not name_problem and writer.direct and writer.method == "copy" and reading_process.available():
                read = _read_in_a_process(stream, writer, batch_size, skip_invalid, report)
            if read is not None:
                summary = read
            else:
                stream.header.content_sha256 = content_hash(path)
                _read_beside_writing(stream, writer, summary, batch_size, skip_invalid, report, name_problem)
            if summary.errors and not skip_invalid:
                raise _Refused
            if name_problem:
                failure = RecordError(path.name, None, "--dataset", f"the dataset name {name_problem}")
                summary = ImportSummary(dataset=None, format=stream.fmt, errors=[failure.as_dict()])
                raise _Refused
            dataset, created = writer.finish()
            planner_statistics.refresh_after_commit(*planner_statistics.IMPORTED)
    except _Refused:
        raise ImportFailed(summary) from None
    except RecordError as error:  # the input could not be read at all (UTF-16, a link in a folder)
        raise ImportFailed(ImportSummary(dataset=None, format=fmt, errors=[error.as_dict()], skipped=0)) from error
    except (OSError, UnicodeDecodeError) as error:
        raise ImportFailed(_unreadable(path, fmt, error)) from error
    summary.dataset = dataset.name
    summary.created = created
    return summary


def _progress(stream: ImportStream, summary: ImportSummary) -> tuple[str, int]:
    stage = f"writing: {summary.conversations} conversations and {summary.turns} turns so far"
    return stage, 10 + int(0.85 * stream.progress.percent())


def _read_beside_writing(
    stream: ImportStream,
    writer: StreamWriter,
    summary: ImportSummary,
    batch_size: int,
    skip_invalid: bool,
    report: Callable[[str, int], None],
    name_problem: str,
) -> None:
    """Read on this thread while a second one writes: the database stores one batch while the next is
    read, checked and prepared (importers.pipeline)."""

    def write(step: tuple[Prepared | None, str, int]) -> None:
        prepared, stage, percent = step
        if prepared is not None:
            writer.write(prepared)
        report(stage, percent)

    try:
        with WriterThread(write) as writing:
            for batch in _batches(stream, summary, batch_size):
                if summary.errors and not skip_invalid:
                    continue  # refused: read on only to list every bad record
                prepared = None if name_problem else writer.prepare(batch, writing.wait_idle)
                writing.put((prepared, *_progress(stream, summary)))
    finally:
        writer.close()


def _read_in_a_process(
    stream: ImportStream,
    writer: StreamWriter,
    batch_size: int,
    skip_invalid: bool,
    report: Callable[[str, int], None],
) -> ImportSummary | None:
    """Read, check and prepare in a child process (importers.reading_process) while this one writes each
    batch as it comes, in the import's transaction. The child asks for the ids of the judges and
    versions it meets (created here, in the transaction, after every batch before them is written) and
    ends by sending the summary, the header (the judges the input named, the dataset's kind) and what
    its preparation counted. Returns the summary; None, having read nothing, when a thread of this
    process started work just before the fork (the caller reads on a thread instead)."""
    summary = ImportSummary(dataset=None, format=stream.fmt)

    def read(channel: reading_process.Channel) -> None:
        header = stream.header

        def parents(judges: set[str], versions: set[tuple[str, str]]) -> ParentIds:
            return channel.ask((judges, versions, header.judges))

        try:
            for batch in _batches(stream, summary, batch_size):
                if summary.errors and not skip_invalid:  # refused: read on only to list every bad record
                    channel.send(("progress", *_progress(stream, summary)))
                    continue
                prepared = writer.detach(writer.prepare(batch, parents=parents))
                channel.send(("batch", prepared, *_progress(stream, summary)))
        finally:
            writer.close()  # the child's connection that takes ids
        channel.send(("read", summary, header, writer.reading_state()))

    reading = reading_process.ReadingProcess(read)
    if not reading.start():
        return None
    # The file's sha256 (for the import's sweep) is taken here while the child reads, on a thread:
    # hashlib lets go of the GIL, and this process mostly waits for the database.
    with reading, _Hashing(stream.path) as hashing:
        logger.info("import of %s: reading in process %d", stream.path.name, reading.pid)
        for message in reading.messages():
            kind = message[0]
            if kind == "ask":
                judges, versions, named = message[1]
                stream.header.judges.update(named)  # what a judge created now is made from
                reading.answer(writer.provide_parents(judges, versions))
            elif kind == "batch":
                writer.write(message[1])
                report(*message[2:])
            elif kind == "progress":
                report(*message[1:])
            elif kind == "read":
                summary, header, state = message[1:]
                for name in ("judges", "dataset_kind"):
                    setattr(stream.header, name, getattr(header, name))
                writer.adopt_reading_state(state)
        stream.header.content_sha256 = hashing.result()
    return summary


class _Hashing:
    """`with _Hashing(path) as hashing:` `content_hash(path)` on a thread of its own; `result` waits for it
    and raises what it raised. Leaving the block stops and waits for the thread, whatever happened: no
    thread of an import outlives it (a later import in the process would not fork beside it)."""

    def __init__(self, path: Path):
        self.path = path
        self.value = ""
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="import-hash", daemon=True)

    def __enter__(self) -> _Hashing:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopped.set()
        self.thread.join()

    def _run(self) -> None:
        try:
            self.value = content_hash(self.path, stop=self.stopped.is_set)
        except BaseException as error:  # raised again by `result`
            self.error = error

    def result(self) -> str:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.value


class _WithoutCycleCollection:
    """A batch of parsed conversations is a tree of small objects, freed by reference counting when the
    next batch comes; while it lives, the cycle collector walks it again and again for nothing (a fifth
    of an import's CPU). A class, not contextlib's generator: that one sets __traceback__ on the
    exception passing through, and a RecordError is frozen."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self.was_enabled:
            gc.enable()


def _unreadable(path: Path, fmt: str, error: Exception) -> ImportSummary:
    failure = RecordError(path.name, None, "(file)", f"cannot read: {error}")
    return ImportSummary(dataset=None, format=fmt, errors=[failure.as_dict()])


def _batches(stream: ImportStream, summary: ImportSummary, size: int) -> Iterator[list[ParsedConversation]]:
    """The stream's conversations in lists of `size`, counted into `summary` (errors too) as they pass."""
    batch: list[ParsedConversation] = []
    for item in stream.items:
        if isinstance(item, RecordError):
            summary.errors.append(item.as_dict())
            summary.skipped += 1
            continue
        summary.conversations += 1
        summary.turns += len(item.turns)
        summary.labels += len(item.labels)
        summary.verdicts += len(item.verdicts)
        if item.labels:
            stream.header.note_labels(True)
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch

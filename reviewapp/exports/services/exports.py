"""Export snapshots: versioned, immutable validation datasets with a datasheet of their provenance.

`snapshot_create` records what to export (judge, filters, format) as the next version of a name and
queues `tasks.exports.snapshot_build` when the transaction commits. `snapshot_write` streams the rows
into the file: JSONL, CSV and Parquet from the streamed rows of `selectors.export_flat` (a line at a time,
Parquet a record batch at a time, `services.export_writers`), the EVA shapes a conversation at a time
from `selectors.export_rows` (`services.export_eva`), so memory does not grow with the row count.
The file is written beside its final name and renamed when complete, then its sha256 and the
datasheet (filters, counts per class and language, judge versions, code version) are stored on the
snapshot and written next to the file as `<name>-v<version>.datasheet.json`.

A snapshot never changes once done: exporting the same name again makes version + 1.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from reviewapp.audit import audit_record
from reviewapp.exports.selectors import export_filters
from reviewapp.exports.selectors import export_flat as export_flat_selectors
from reviewapp.exports.selectors import export_rows as export_rows_selectors
from reviewapp.exports.selectors.export_filters import ExportFilters
from reviewapp.exports.selectors.export_rows import ExportRow
from reviewapp.exports.services import export_parallel
from reviewapp.exports.services.export_eva import EvaWriter
from reviewapp.exports.services.export_progress import Progress, no_cycle_collection
from reviewapp.exports.services.export_writers import (
    COLUMN_NAMES,
    PARQUET_ROW_GROUP,
    JsonlWriter,
    NonFinite,
    ParquetWriter,
    flat_writer,
    open_released,
)
from reviewapp.models import ExportSnapshot, Judge, JudgeVersion
from reviewapp.quality.selectors.outcomes import outcome_for
from reviewapp.versioning import code_version
from scoring.errors import TribunalError

__all__ = [
    "FORMATS",
    "ExportError",
    "datasheet_name",
    "file_name",
    "file_sha256",
    "snapshot_create",
    "snapshot_fail",
    "snapshot_path",
    "snapshot_write",
]

log = logging.getLogger(__name__)

# format -> file extension
FORMATS = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet", "eva": "eva.jsonl"}
PROGRESS_EVERY_ROWS = 2_000
HASH_BLOCK = 1 << 20
# An export whose rows are nearly all kept is read on one connection, not in two halves: reading a
# kept row costs the database a few microseconds, so one connection keeps up (Parquet's in three
# threads: `_write_columns`), and the second half's spool (written, read back and appended) costs
# more than the second connection gains. A built row costs the database ten times that, where the
# halves win, so a few built rows tip it. Measured on 200,000 rows of 2.2 KB, one connection against
# halves: every row kept, JSONL 1.53-1.73 s against 1.69-1.82, Parquet 2.2-2.3 against 2.6-2.7; 70%
# kept, JSONL 3.3-3.45 against 2.8-2.9, Parquet 3.8 against 3.6; the two cross at about 93% (JSONL)
# and 80% (Parquet).
ONE_READ_FROM_KEPT_SHARE = {"jsonl": 0.95, "parquet": 0.8}
# A Parquet export's CSV is parsed a piece at a time, at most PARQUET_ROW_GROUP rows and about this
# many bytes (half as many for each of two halves read at once): the pieces, the tables parsed from
# them and the row groups they make up are each held at one stage of the export at once (read,
# parsed, written), so memory follows these bounds, not the rows' width. Smaller pieces cost more:
# pyarrow's CSV reader takes about a millisecond more for each. The row groups do not depend on
# them (`export_writers.RowGroups`).
PARQUET_PIECE_BYTES = 8 << 20


class ExportError(TribunalError, ValueError):
    """An export that cannot be created or written as asked."""


def exports_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "exports"


def file_name(snapshot: ExportSnapshot) -> str:
    return f"{snapshot.name}-v{snapshot.version}.{FORMATS[snapshot.format]}"


def datasheet_name(snapshot: ExportSnapshot) -> str:
    return f"{snapshot.name}-v{snapshot.version}.datasheet.json"


def snapshot_path(snapshot: ExportSnapshot) -> Path:
    """The snapshot's file on disk (file_path is relative to MEDIA_ROOT)."""
    return Path(settings.MEDIA_ROOT) / (snapshot.file_path or f"exports/{file_name(snapshot)}")


# --- creating -----------------------------------------------------------------------------------------


def _clean_name(name: str, judge: Judge) -> str:
    cleaned = slugify(name or judge.slug)
    if not cleaned:
        raise ExportError(f"{name!r} cannot name a file: use letters, digits, - or _.")
    return cleaned[:150]


def snapshot_create(
    *,
    judge: Judge,
    fmt: str,
    name: str = "",
    languages: Sequence[str] = (),
    dataset_ids: Sequence[int] = (),
    gold_sources: Sequence[str] = (),
    date_from: date | None = None,
    date_to: date | None = None,
    user=None,
    build: Callable[[int], None] | None = None,
) -> ExportSnapshot:
    """Record the next version of an export and queue its build once the transaction commits.

    `build(snapshot_id)` queues the build, handed in by the caller (tasks.exports.snapshot_build_queue);
    without it the snapshot is only recorded (the caller writes it with `snapshot_write`, as the command does).
    """
    if fmt not in FORMATS:
        raise ExportError(f"Unknown format {fmt!r}: expected one of {', '.join(FORMATS)}.")
    unknown = set(gold_sources) - set(export_filters.SOURCE_PRIORITY)
    if unknown:
        raise ExportError(f"Unknown gold source(s): {', '.join(sorted(unknown))}.")
    if date_from and date_to and date_from > date_to:
        raise ExportError("The date range ends before it starts.")
    name = _clean_name(name, judge)
    filters = ExportFilters(
        languages=tuple(dict.fromkeys(code.strip() for code in languages if code.strip())),
        dataset_ids=tuple(sorted({int(pk) for pk in dataset_ids})),
        gold_sources=tuple(s for s in export_filters.SOURCE_PRIORITY if s in set(gold_sources)),
        date_from=date_from,
        date_to=date_to,
    )
    creator = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        for _attempt in range(5):
            last = ExportSnapshot.objects.filter(name=name).order_by("-version").values_list("version", flat=True)
            version = (last.first() or 0) + 1
            try:
                with transaction.atomic():
                    snapshot = ExportSnapshot.objects.create(
                        name=name,
                        version=version,
                        judge=judge,
                        format=fmt,
                        filters=filters.as_dict(),
                        status=ExportSnapshot.Status.PENDING,
                        code_version=code_version(),
                        created_by=creator,
                    )
            except IntegrityError:
                continue  # another export took this version a moment ago: take the next one
            break
        else:
            raise ExportError(f"Could not reserve a version of {name!r}; try again.")
        snapshot.file_path = f"exports/{file_name(snapshot)}"
        snapshot.save(update_fields=["file_path"])
        audit_record(
            actor=creator,
            action="export.create",
            obj=snapshot,
            before=None,
            after={"name": name, "version": version, "format": fmt, "judge": judge.slug, "filters": snapshot.filters},
        )
        if build:
            snapshot_id = snapshot.pk
            transaction.on_commit(lambda: build(snapshot_id))
    return snapshot


# --- the datasheet ------------------------------------------------------------------------------------


UNSCORED = "unscored"


@dataclass
class _Tally:
    """The datasheet's counts. A row's class is the outcome its judge is scored on, by the one rule
    (`selectors.outcomes.outcome_for`); gold that rule cannot score is counted as "unscored"."""

    judge: Judge
    rows: int = 0
    by_class: Counter = field(default_factory=Counter)
    by_language: Counter = field(default_factory=Counter)
    by_language_class: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    by_source: Counter = field(default_factory=Counter)
    by_dataset: Counter = field(default_factory=Counter)
    versions: Counter = field(default_factory=Counter)
    reviews: int = 0
    comments: int = 0
    non_finite: int = 0
    classes: dict[tuple, str] = field(default_factory=dict)  # (rating, passed, label) -> class
    flat: Counter = field(default_factory=Counter)  # flat rows by what the counts tell apart
    keyed: Counter = field(default_factory=Counter)  # rows by their key from the database (`add_keys`)
    gold_non_finite: int = 0  # of the keyed rows

    def class_of(self, rating: float | None, passed: bool | None, label: str) -> str:
        key = (rating, passed, label)
        found = self.classes.get(key)
        if found is None:
            outcome = outcome_for(self.judge, rating=rating, passed=passed, label=label)
            found = self.classes[key] = outcome.value if outcome.value is not None else UNSCORED
        return found

    def add(
        self, *, language: str, dataset: str, source: str, label: str, verdicts, reviews: int, comments: int
    ) -> None:
        self.rows += 1
        self.by_class[label] += 1
        self.by_language[language] += 1
        self.by_language_class[language][label] += 1
        self.by_source[source] += 1
        self.by_dataset[dataset] += 1
        self.versions.update(verdicts)
        self.reviews += reviews
        self.comments += comments

    def add_flat(self, row: dict[str, Any]) -> None:
        """A flat row, before its writer turns non-finite numbers into null. Rows are counted by
        what the datasheet tells apart (few distinct keys), and spread into the counts at `close`:
        one counter update a row instead of nine."""
        self.rows += 1
        self.flat[
            row["language"],
            row["dataset"],
            row["gold_source"],
            self.class_of(row["gold_rating"], row["gold_passed"], row["gold_label"] or ""),
            tuple(row["verdicts"]),
            len(row["reviews"]),
            len(row["comments"]),
        ] += 1

    def add_keys(self, keys: list) -> None:
        """Rows written by the database (`export_flat.postgres_lines`, `CsvTables`), each with
        its key: the JSON list of what `add_flat` counts, the gold rating as text."""
        self.rows += len(keys)
        self.keyed.update(keys)

    def merge(self, other: _Tally) -> None:
        """The keyed rows of another part of the same export."""
        self.rows += other.rows
        self.keyed.update(other.keyed)

    def close(self) -> None:
        """Spread the flat rows' counts (`add_flat`, `add_keys`) into the datasheet's."""
        for key, rows in self.keyed.items():
            language, dataset, source, rating, passed, label, versions, reviews, comments = orjson.loads(key)
            rating = None if rating is None else float(rating)
            if rating is not None and not math.isfinite(rating):
                self.gold_non_finite += rows
            label = self.class_of(rating, passed, label or "")
            self.flat[language, dataset, source, label, tuple(versions), reviews, comments] += rows
        self.keyed.clear()
        for (language, dataset, source, label, versions, reviews, comments), rows in self.flat.items():
            self.by_class[label] += rows
            self.by_language[language] += rows
            self.by_language_class[language][label] += rows
            self.by_source[source] += rows
            self.by_dataset[dataset] += rows
            for version in versions:
                self.versions[version] += rows
            self.reviews += reviews * rows
            self.comments += comments * rows
        self.flat.clear()

    def add_row(self, row: ExportRow) -> None:
        gold = row.gold
        self.add(
            language=row.language,
            dataset=row.conversation.dataset.name,
            source=gold.source,
            label=self.class_of(gold.rating, gold.passed, gold.label or ""),
            verdicts=row.versions,
            reviews=row.reviews,
            comments=row.comments,
        )


def _sorted(counter: Counter) -> dict[str, int]:
    return dict(sorted(counter.items()))


def _datasheet(snapshot: ExportSnapshot, judge: Judge, tally: _Tally, sha256: str, size: int) -> dict[str, Any]:
    versions = JudgeVersion.objects.filter(judge=judge).order_by("created_at", "id")
    return {
        "name": snapshot.name,
        "version": snapshot.version,
        "format": snapshot.format,
        "file": file_name(snapshot),
        "bytes": size,
        "sha256": sha256,
        "judge": {"slug": judge.slug, "level": judge.level, "scale": judge.scale},
        "filters": snapshot.filters,
        "rows": tally.rows,
        "counts": {
            "by_class": _sorted(tally.by_class),
            "by_language": _sorted(tally.by_language),
            "by_language_class": {lang: _sorted(c) for lang, c in sorted(tally.by_language_class.items())},
            "by_gold_source": _sorted(tally.by_source),
            "by_dataset": _sorted(tally.by_dataset),
            "reviews": tally.reviews,
            "comments": tally.comments,
        },
        "non_finite_values_written_as_null": tally.non_finite,
        "judge_versions": [
            {
                "version": jv.version,
                "spec_hash": jv.spec_hash,
                "source": jv.source,
                "rows_with_verdicts": tally.versions.get(jv.version, 0),
            }
            for jv in versions
        ],
        "columns": list(COLUMN_NAMES) if snapshot.format != "eva" else None,
        "gold_priority": list(export_filters.SOURCE_PRIORITY),
        "reviewer_ids": "HMAC-SHA256 of the user id keyed by the server secret (stable, not reversible)",
        "code_version": snapshot.code_version,
        "created_at": snapshot.created_at.isoformat(),
        "created_by": snapshot.created_by.get_username() if snapshot.created_by else None,
        "written_at": timezone.now().isoformat(),
    }


# --- writing ------------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _open(path: Path, binary: bool, *, released: bool = False):
    """The export file opened for writing; `released` for a file hashed as it is written, never read
    back: its pages leave the page cache as it grows (`export_writers.ReleasingFile`)."""
    if released:
        return open_released(path, HASH_BLOCK)
    if binary:
        return path.open("wb", buffering=HASH_BLOCK)
    return path.open("w", encoding="utf-8", newline="", buffering=HASH_BLOCK)


def _write_rows(snapshot, judge: Judge, filters: ExportFilters, partial: Path, tally, chunk_size: int, progress):
    """Stream the rows into `partial`: the flat formats from `export_flat.flat_rows`, EVA from row
    objects a conversation at a time. Returns the closed writer (its NonFinite holds the count)."""
    fmt = snapshot.format
    database_lines = fmt == "jsonl" and connection.vendor == "postgresql"  # hashed as written (`_write_lines`)
    handle = None if fmt == "parquet" else _open(partial, binary=fmt != "csv", released=database_lines)
    try:
        if fmt == "eva":
            writer: Any = EvaWriter(handle, judge)
            chunks: Any = export_rows_selectors.export_rows(judge=judge, filters=filters, chunk_size=chunk_size)
            add = tally.add_row
        elif database_lines:
            return _write_lines(judge, filters, handle, partial, tally, chunk_size, progress)
        elif fmt == "parquet" and connection.vendor == "postgresql":
            return _write_columns(judge, filters, partial, tally, progress)
        else:
            writer = flat_writer(fmt, partial, handle)
            chunks = export_flat_selectors.flat_rows(judge=judge, filters=filters, chunk_size=chunk_size)
            add = tally.add_flat
        write, next_progress = writer.write, PROGRESS_EVERY_ROWS
        # closing(): a stream given up half way must end before its connection marks the snapshot failed
        with closing(chunks), no_cycle_collection():
            for chunk in chunks:
                for row in chunk:
                    add(row)  # before the writer, which writes non-finite numbers as null
                    write(row)
                if tally.rows >= next_progress:
                    progress(tally.rows)
                    next_progress = tally.rows + PROGRESS_EVERY_ROWS
        tally.close()
        writer.close()
    finally:
        if handle is not None:
            handle.close()
    return writer


def _halves(judge: Judge, filters: ExportFilters, fmt: str, total: int) -> int | None:
    """Where the second half of a JSONL or Parquet export on PostgreSQL starts (`export_parallel.split`),
    or None to read it on one connection: small, or nearly all kept (`ONE_READ_FROM_KEPT_SHARE`)."""
    first_rows = export_parallel.split(total)
    if first_rows is None:
        return None
    kept = export_flat_selectors.postgres_kept_share(judge=judge, filters=filters, total=total)
    return None if kept >= ONE_READ_FROM_KEPT_SHARE[fmt] else first_rows


def _write_lines(judge: Judge, filters: ExportFilters, handle, partial: Path, tally, chunk_size: int, progress):
    """JSONL on PostgreSQL: the lines as the database writes them (`export_flat.postgres_lines`);
    a large export in two halves at once (`export_parallel`) unless its rows are nearly all kept
    (`ONE_READ_FROM_KEPT_SHARE`). The file is hashed as it is written
    (`writer.sha256`): the first half as its chunks go out, the second as it is appended, so the
    file is not read again to be hashed (0.3 s for 440 MB, after the rows)."""
    writer, digest = JsonlWriter(handle), hashlib.sha256()

    def read(finite, rows, using=connection, blocks=False):
        return export_flat_selectors.postgres_lines(
            judge=judge, filters=filters, finite=finite, chunk_size=chunk_size, using=using, rows=rows, blocks=blocks
        )

    def write(chunk, writer=writer, tally=tally, digest=digest) -> int:
        lines, keys = chunk
        if digest is not None:
            digest.update(lines)
        writer.write_lines(lines)
        tally.add_keys(keys)
        return len(keys)

    first_rows = _halves(judge, filters, "jsonl", progress.total)
    if first_rows is None:
        next_progress = PROGRESS_EVERY_ROWS
        # In one piece, kept blocks are read where current (`export_sql.postgres_blocks_statement`).
        with (
            closing(read(writer.finite, (0, None), blocks=True)) as chunks,  # as in _write_rows: the stream ends first
            export_parallel.behind(write) as put,
        ):
            for chunk in chunks:
                put(chunk)
                if tally.rows >= next_progress:
                    progress(tally.rows)
                    next_progress = tally.rows + PROGRESS_EVERY_ROWS
    else:
        spool = partial.with_name(partial.name + ".second")
        second, second_tally = JsonlWriter(None), _Tally(judge=judge)
        try:
            with spool.open("wb", buffering=HASH_BLOCK) as second.handle:
                export_parallel.in_halves(
                    read_first=lambda using: read(writer.finite, (0, first_rows), using),
                    read_second=lambda using: read(second.finite, (first_rows, None), using),
                    write_first=write,
                    write_second=lambda chunk: write(chunk, second, second_tally, None),
                    progress=progress,
                )
            export_parallel.append_file(spool, handle, digest)
        finally:
            spool.unlink(missing_ok=True)
        tally.merge(second_tally)
        writer.finite.count += second.finite.count
    tally.close()
    writer.close()
    writer.sha256 = digest.hexdigest()
    return writer


def _write_columns(judge: Judge, filters: ExportFilters, partial: Path, tally, progress):
    """Parquet on PostgreSQL: the columns as the database writes them (`export_flat.postgres_csv`),
    parsed a piece of at most PARQUET_ROW_GROUP rows and PARQUET_PIECE_BYTES of CSV at a time, cut
    into row groups by the writer (`export_writers.RowGroups`). A large export is read in two halves
    at once (`export_parallel`): the second half's tables are parsed in its thread and written beside
    the file as Arrow IPC as they come, then read back, a record batch at a time, into the row groups
    after the first half's."""
    writer = ParquetWriter(partial, group_rows=PARQUET_ROW_GROUP)
    tables = export_flat_selectors.CsvTables(finite=writer.finite, schema=writer.schema)

    def read(rows, using=connection, blocks=False, readers=1):
        return export_flat_selectors.postgres_csv(
            judge=judge,
            filters=filters,
            rows_per_table=PARQUET_ROW_GROUP,
            bytes_per_table=PARQUET_PIECE_BYTES // readers,  # two halves at once share the bound
            using=using,
            rows=rows,
            blocks=blocks,
        )

    def write(blocks, write_table=writer.write_table) -> int:
        table, keys = tables(blocks)
        write_table(table)
        tally.add_keys(keys)
        return len(keys)

    first_rows = _halves(judge, filters, "parquet", progress.total)
    if first_rows is None:
        # Three stages at once, each in its own thread: the rows read (the database builds or reads
        # the next ones meanwhile), a row group parsed here, the one before compressed and written.
        # In one piece, kept blocks are read where current (`export_sql.postgres_blocks_statement`).
        with (
            closing(export_parallel.prefetched(lambda using: read((0, None), using, blocks=True))) as chunks,
            export_parallel.behind(writer.write_table) as write_table,
        ):
            for blocks in chunks:
                write(blocks, write_table)
                progress(tally.rows)
    else:
        import pyarrow as pa

        # The second half is parsed into its tables in its own thread (pyarrow's CSV reader lets go
        # of the GIL) and spooled beside the file as Arrow IPC, a table at a time; once the first
        # half is written its tables are read back (no parsing) and cut into the row groups they
        # would have been in one pass.
        spool = partial.with_name(partial.name + ".second")
        second_tables = export_flat_selectors.CsvTables(finite=NonFinite(), schema=writer.schema)
        second_tally = _Tally(judge=judge)
        try:
            with pa.OSFile(str(spool), "wb") as sink, pa.ipc.new_stream(sink, writer.schema) as spooled:

                def write_second(blocks) -> int:
                    table, keys = second_tables(blocks)
                    spooled.write_table(table)
                    second_tally.add_keys(keys)
                    return len(keys)

                export_parallel.in_halves(
                    read_first=lambda using: read((0, first_rows), using, readers=2),
                    read_second=lambda using: read((first_rows, None), using, readers=2),
                    write_first=write,
                    write_second=write_second,
                    progress=progress,
                )
            # Read, not memory-mapped: mapped pages would count in the process's memory until the
            # end, and the second half of a million rows is hundreds of megabytes of Arrow.
            with pa.OSFile(str(spool), "rb") as source, pa.ipc.open_stream(source) as batches:
                for batch in batches:
                    writer.write_table(pa.Table.from_batches([batch], schema=writer.schema))
        finally:
            spool.unlink(missing_ok=True)
        tally.merge(second_tally)
        writer.finite.count += second_tables.marks.finite.count
    tally.close()
    writer.close()
    writer.finite.count += tally.gold_non_finite  # NULL from the database, as the row path writes it
    return writer


def snapshot_write(*, snapshot_id: int, chunk_size: int = export_filters.CHUNK_SIZE) -> ExportSnapshot:
    """Write the snapshot's file and datasheet; safe to run again (a done snapshot is left as it is).

    Not one transaction: progress must be visible to the page while the rows stream. The file only
    takes its final name when complete, and the snapshot is marked done after that.
    """
    snapshot = ExportSnapshot.objects.select_related("judge", "created_by").get(pk=snapshot_id)
    if snapshot.status == ExportSnapshot.Status.DONE:
        return snapshot
    if snapshot.judge is None:
        raise ExportError(f"Snapshot {snapshot.pk} has no judge any more (it was deleted).")
    judge = snapshot.judge
    ExportSnapshot.objects.filter(pk=snapshot_id).update(
        status=ExportSnapshot.Status.RUNNING, progress=0, row_count=0, error=""
    )
    filters = ExportFilters.from_dict(snapshot.filters)
    total = export_filters.export_target_count(judge=judge, filters=filters)
    final = snapshot_path(snapshot)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(final.name + ".partial")
    tally, progress = _Tally(judge=judge), Progress(snapshot_id, total)
    try:
        writer = _write_rows(snapshot, judge, filters, partial, tally, chunk_size, progress)
        tally.non_finite = writer.finite.count
        sha256 = getattr(writer, "sha256", None) or file_sha256(partial)
        size = partial.stat().st_size
        os.replace(partial, final)
        datasheet = _datasheet(snapshot, judge, tally, sha256, size)
        sheet_path = final.with_name(datasheet_name(snapshot))
        sheet_partial = sheet_path.with_name(sheet_path.name + ".partial")
        sheet_partial.write_text(
            json.dumps(datasheet, ensure_ascii=False, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        os.replace(sheet_partial, sheet_path)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        snapshot_fail(snapshot_id=snapshot_id, error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        progress.close()
    ExportSnapshot.objects.filter(pk=snapshot_id).update(
        status=ExportSnapshot.Status.DONE,
        progress=100,
        row_count=tally.rows,
        sha256=sha256,
        file_path=str(final.relative_to(Path(settings.MEDIA_ROOT))),
        datasheet=datasheet,
    )
    snapshot.refresh_from_db()
    log.info("export %s v%s: %d rows, sha256 %s", snapshot.name, snapshot.version, tally.rows, sha256)
    return snapshot


def snapshot_fail(*, snapshot_id: int, error: str) -> None:
    ExportSnapshot.objects.filter(pk=snapshot_id).exclude(status=ExportSnapshot.Status.DONE).update(
        status=ExportSnapshot.Status.FAILED, error=error[:5000]
    )

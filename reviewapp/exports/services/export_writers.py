"""The flat export formats (JSONL, CSV, Parquet): pure writers of the rows `selectors.export_flat` gives.

Each writer takes one flat row (a dict of `COLUMNS`) at a time and holds at most one Parquet record
batch, so memory does not grow with the row count. Every format says "no value" the same way:
NaN and ±Infinity (from rows stored before imports refused them) are written as null and counted.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import math
import os
from pathlib import Path
from typing import IO, Any

import orjson

# A Parquet row group holds at most this many rows, and at most PARQUET_GROUP_BYTES of values
# (`RowGroups`): 10,000 rows of the side-by-side workload (2.2 KB each) held 22 MB of CSV and 20 MB
# of Arrow at each of the export's stages at once, and the process peaked at 330 MiB.
PARQUET_ROW_GROUP = 10_000
PARQUET_GROUP_BYTES = 8 << 20

# The flat formats' columns, in order, with their Parquet types (docs/exports.md documents each one).
# Nested values (context, reviews, comments, verdicts, failure modes) are JSON text in CSV and Parquet;
# a missing value is empty (CSV) or null (Parquet), never the text "null".
COLUMNS: tuple[tuple[str, str], ...] = (
    ("dataset", "string"),
    ("conversation_id", "string"),
    ("language", "string"),
    ("judge", "string"),
    ("level", "string"),
    ("turn_position", "int64"),
    ("turn_role", "string"),
    ("text", "string"),
    ("intended_text", "string"),
    ("context", "json"),
    ("gold_rating", "float64"),
    ("gold_label", "string"),
    ("gold_passed", "bool"),
    ("gold_failure_modes", "json"),
    ("gold_source", "string"),
    ("gold_labelled_at", "string"),
    ("adjudication", "json"),
    ("reviews", "json"),
    ("comments", "json"),
    ("verdicts", "json"),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)
# Parquet dictionaries for the columns of few values only, and min/max statistics for the columns that
# are not free text or JSON: the writing thread bounds a kept Parquet export, and a dictionary tried
# on every text (each context is its own) or the bounds of a JSON column are work no reader uses
# (4-8% of the writing and 2.7% of the file for the side-by-side workload's rows).
PARQUET_DICTIONARY_COLUMNS = (
    "dataset", "language", "judge", "level", "turn_role", "gold_label", "gold_source", "gold_failure_modes",
)  # fmt: skip
PARQUET_STATISTICS_COLUMNS = tuple(
    name for name, kind in COLUMNS if kind != "json" and name not in ("text", "intended_text")
)


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON by orjson. orjson would write NaN and Infinity as null without a word, so
    every value is passed through `NonFinite.clean` first, which counts them for the datasheet."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def flat_json_bytes(value: Any) -> bytes:
    """`json_bytes` for a flat row or cell: every key there is text (column names, version labels,
    decoded JSON), and orjson's non-text-key option costs more than the rest of the encoding (a
    non-text key would raise, not pass silently)."""
    return orjson.dumps(value)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


class NonFinite:
    """Writes NaN and ±Infinity (from rows stored before imports refused them) as null, and counts
    them for the datasheet: every export format says "no value" the same way."""

    def __init__(self) -> None:
        self.count = 0

    def flat(self, row: dict[str, Any]) -> dict[str, Any]:
        """A flat row: numbers can only be non-finite in the rating fields and the JSON columns that
        come from stored JSON (failure modes, verdict flags), so only those are walked."""
        rating = row["gold_rating"]
        if rating is not None and not math.isfinite(rating):
            self.count += 1
            row["gold_rating"] = None
        if row["gold_failure_modes"]:
            row["gold_failure_modes"] = self.clean(row["gold_failure_modes"])
        for review in row["reviews"]:
            review["rating"] = self.clean(review["rating"])
        if row["adjudication"] is not None:
            row["adjudication"]["rating"] = self.clean(row["adjudication"]["rating"])
        for verdicts in row["verdicts"].values():
            for verdict in verdicts:
                verdict["rating"] = self.clean(verdict["rating"])
                if verdict["flags"]:
                    verdict["flags"] = self.clean(verdict["flags"])
        return row

    def clean(self, value: Any) -> Any:
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            self.count += 1
            return None
        if isinstance(value, dict):
            return {key: self.clean(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.clean(item) for item in value]
        return value


# A file written once and not read back (a JSONL export on PostgreSQL, hashed as it is written) hands
# its pages back to the kernel once it passes RELEASE_AFTER bytes (`ReleasingFile`): then every
# RELEASE_WINDOW bytes, the pages of the last RELEASE_KEPT windows are advised away.
RELEASE_AFTER = 512 << 20
RELEASE_WINDOW = 32 << 20
RELEASE_KEPT = 4


class ReleasingFile(io.FileIO):
    """A file opened for writing whose written pages leave the page cache once it is large.

    Left alone, every page of a file written once stays cached until memory runs short: an export of
    a million rows (2.4 GB) would push the database's own pages out (PostgreSQL reads through the
    page cache), and on a virtual machine whose host hands out memory as the guest first touches it
    each new page costs more than writing it (2.2 GB through `dd`: 4.6 s on fresh memory, 0.4 s on
    memory the kernel had used and freed). Past RELEASE_AFTER bytes, every RELEASE_WINDOW bytes,
    `posix_fadvise(DONTNEED)` over what was written (the first time all of it, then the last
    RELEASE_KEPT windows) starts writing back the pages still dirty and drops those already written
    back, so the file reuses the same few hundred MiB (after a kept export of 1.1M rows, 61 MiB of its
    2.3 GiB were still cached). It never waits for the disk: a page not yet written back stays, as it
    would without the advice (at most the first RELEASE_AFTER bytes and the last windows). A smaller file is
    a plain one (the advice, and the write-back it starts while the export runs, cost a file of 440
    MB about 0.1 s). Where the advice does not exist, or the file system refuses it, the file is plain.
    The file must not be read back while it is written (its pages would come from the disk)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(str(path), "w")
        self.size = 0
        self.released_at = 0  # the size at the last advice (0: none yet)
        self.advise = hasattr(os, "posix_fadvise")

    def write(self, data, /) -> int:
        written = super().write(data) or 0
        self.size += written
        if self.advise and self.size >= RELEASE_AFTER and self.size - self.released_at >= RELEASE_WINDOW:
            low = max(0, self.size - RELEASE_KEPT * RELEASE_WINDOW) if self.released_at else 0
            try:
                os.posix_fadvise(self.fileno(), low, self.size - low, os.POSIX_FADV_DONTNEED)
            except OSError:  # a file system that takes no advice: written as a plain file from here on
                self.advise = False
            self.released_at = self.size
        return written


def open_released(path: Path, buffering: int) -> io.BufferedWriter:
    """`path` opened for writing bytes as a `ReleasingFile`, buffered by `buffering` bytes."""
    return io.BufferedWriter(ReleasingFile(path), buffer_size=buffering)


class JsonlWriter:
    binary = True

    def __init__(self, handle: IO[bytes]):
        self.handle = handle
        self.finite = NonFinite()
        self.sha256: str | None = None  # the file's, when it was hashed as it was written

    def write(self, row: dict[str, Any]) -> None:
        self.handle.write(flat_json_bytes(self.finite.flat(row)) + b"\n")

    def write_lines(self, lines: bytes) -> None:
        """Finished lines (the database's, on PostgreSQL: `export_flat.postgres_lines`)."""
        self.handle.write(lines)

    def close(self) -> None:
        pass


class CsvWriter:
    binary = False

    def __init__(self, handle: IO[str]):
        self.finite = NonFinite()
        self.writer = csv.writer(handle, lineterminator="\n")
        self.writer.writerow(COLUMN_NAMES)

    def write(self, row: dict[str, Any]) -> None:
        values = self.finite.flat(row)
        cells = []
        for name, kind in COLUMNS:
            value = values[name]
            if value is None:
                cells.append("")
            elif kind == "json":
                cells.append(_json(value))
            elif kind == "bool":
                cells.append("true" if value else "false")
            else:
                cells.append(value)
        self.writer.writerow(cells)

    def close(self) -> None:
        pass


@functools.cache
def arrow_memory_pool() -> str:
    """Arrow's memory pool for the Parquet exports: jemalloc where pyarrow is built with it (and
    ARROW_DEFAULT_MEMORY_POOL does not name another). The default (mimalloc) keeps what a row group
    freed for the next one, and an export parses row groups on two threads at once: a million-row
    Parquet export peaked at 290 MiB with it, 243 MiB with jemalloc, at the same speed. Returns the
    pool's name."""
    import pyarrow as pa

    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        with contextlib.suppress(NotImplementedError):  # a pyarrow built without it keeps its default
            pa.set_memory_pool(pa.jemalloc_memory_pool())
    return pa.default_memory_pool().backend_name


def row_bytes(table) -> Any:
    """Each row's size as `RowGroups` counts it (a numpy array): its strings' bytes, 4 for each
    string's offset, 8 for each number, 1 for each bool. It depends on the values alone. Summed
    column by column in Arrow, and read from the sum's buffer: pyarrow's to_numpy, pa.scalar and
    pa.array on Python values first import pandas (0.3 s of a worker's first export) to check for
    its types."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    total, fixed = None, 0
    for field, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            lengths = pc.binary_length(column)
            if lengths.null_count:
                lengths = pc.fill_null(lengths, _zero(lengths.type))
            total = pc.cast(lengths, pa.int64()) if total is None else pc.add(total, lengths)
            fixed += 4
        else:
            fixed += 1 if pa.types.is_boolean(field.type) else 8
    if total is None or not len(table):
        return np.full(len(table), fixed, dtype=np.int64)
    summed = total.combine_chunks()
    values = np.frombuffer(summed.buffers()[1], dtype=np.int64)[summed.offset : summed.offset + len(summed)]
    return values + fixed


@functools.cache
def _zero(kind) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(kind, 1, [None, pa.py_buffer(bytes(kind.bit_width // 8))])[0]


class RowGroups:
    """Cuts a stream of Arrow tables into Parquet row groups of at most `rows` rows holding at most
    `size` bytes (`row_bytes`; a row larger than that is a group of its own), whatever tables the
    rows come in: a group ends at a place the rows alone decide, so a file read in two halves, or
    parsed in other pieces, has the same row groups as one read in one piece. Each row group is given
    as a table of one chunk."""

    def __init__(self, rows: int, size: int) -> None:
        self.rows, self.size = rows, size
        self.pending: list = []
        self.pending_rows = self.pending_bytes = 0

    def add(self, table) -> list:
        """The row groups `table` completes (the rest is held for the next)."""
        import numpy as np

        done: list = []
        ends = np.cumsum(row_bytes(table))  # where each row ends, in bytes from the table's start
        start, count = 0, len(table)
        while start < count:
            before = int(ends[start - 1]) if start else 0
            room = self.rows - self.pending_rows
            take = int(
                np.searchsorted(ends[start : start + room], before + self.size - self.pending_bytes, side="right")
            )
            if not take and not self.pending_rows:
                take = 1  # a row larger than a group on its own
            if take:
                self.pending.append(table.slice(start, take))
                self.pending_rows += take
                self.pending_bytes += int(ends[start + take - 1]) - before
                start += take
            if start < count or self.pending_rows == self.rows:  # full: by rows, or the next row is too big
                done.append(self._take())
        return done

    def finish(self) -> list:
        return [self._take()] if self.pending_rows else []

    def _take(self):
        import pyarrow as pa

        # One chunk per column: ParquetWriter's pages follow the chunks it is given, so a group made
        # of other pieces would be written in other bytes.
        group = pa.concat_tables(self.pending).combine_chunks()
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0
        return group


class ParquetWriter:
    """Row groups through pyarrow's ParquetWriter, cut by `RowGroups` from the record batches and
    tables it is given: at most one row group's rows are held. pyarrow is imported here, not when
    the module loads."""

    def __init__(self, path: Path, *, group_rows: int | None = None, group_bytes: int | None = None):
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrow_memory_pool()
        self.pa = pa
        types = {"string": pa.string(), "json": pa.string(), "int64": pa.int64(), "float64": pa.float64()}
        types["bool"] = pa.bool_()
        self.schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
        self.writer = pq.ParquetWriter(
            str(path),
            self.schema,
            compression="zstd",
            use_dictionary=list(PARQUET_DICTIONARY_COLUMNS),
            write_statistics=list(PARQUET_STATISTICS_COLUMNS),
        )
        self.json_columns = [name for name, kind in COLUMNS if kind == "json"]
        self.plain_columns = [name for name, kind in COLUMNS if kind != "json"]
        self.rows: list[dict[str, Any]] = []
        self.groups = RowGroups(group_rows or PARQUET_ROW_GROUP, group_bytes or PARQUET_GROUP_BYTES)
        self.finite = NonFinite()

    def write(self, row: dict[str, Any]) -> None:
        self.rows.append(self.finite.flat(row))
        if len(self.rows) >= self.groups.rows:
            self._flush()

    def write_table(self, table) -> None:
        """Finished columns (the database's, on PostgreSQL: `export_flat.CsvTables`), written as the
        row groups they complete."""
        for group in self.groups.add(table):
            self.writer.write_table(group, row_group_size=len(group))

    def _flush(self) -> None:
        if not self.rows:
            return
        rows, dumps = self.rows, _json
        columns: dict[str, list] = {name: [row[name] for row in rows] for name in self.plain_columns}
        for name in self.json_columns:
            columns[name] = [None if row[name] is None else dumps(row[name]) for row in rows]
        batch = self.pa.RecordBatch.from_pydict({name: columns[name] for name in COLUMN_NAMES}, schema=self.schema)
        self.rows = []
        self.write_table(self.pa.Table.from_batches([batch]))

    def close(self) -> None:
        self._flush()
        for group in self.groups.finish():
            self.writer.write_table(group, row_group_size=len(group))
        self.writer.close()


def flat_writer(fmt: str, path: Path, handle: IO | None):
    """The writer of a flat format: Parquet writes to `path` itself, the others to `handle`."""
    if fmt == "parquet":
        return ParquetWriter(path)
    return {"jsonl": JsonlWriter, "csv": CsvWriter}[fmt](handle)

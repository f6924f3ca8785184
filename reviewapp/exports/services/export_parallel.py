"""A large flat export on PostgreSQL read in two halves at once, on two connections that share one
snapshot (`pg_export_snapshot`): the database builds each row's line (or columns) from lookups by
index, one core's work per connection, and Python only writes bytes, so the second half keeps the
other core busy. Both halves see the same data, as the one statement would.

The first half goes straight into the file; the second is written beside it (its JSONL, or its
CSV for Parquet) and appended when the first is done, so memory stays flat.
A failure on either side stops the other before it is raised, and both connections are closed.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

# Below this many rows one connection is as quick (a second one costs its start and a second sort
# of the gold labels).
SPLIT_FROM_ROWS = 20_000


def split(total: int) -> int | None:
    """Where the second half starts, or None when the export is read in one piece: small, inside a
    transaction (the other connection could not see its uncommitted rows), or not on PostgreSQL.
    (Parquet's row groups do not depend on it: `export_writers.RowGroups` cuts them the same way.)"""
    if connection.vendor != "postgresql" or connection.in_atomic_block or total < SPLIT_FROM_ROWS:
        return None
    return total // 2 or None


@contextmanager
def _snapshot_connection(snapshot: str | None = None) -> Iterator[tuple[Any, str]]:
    """A new connection in a read-only repeatable-read transaction: exporting its snapshot, or
    importing `snapshot`. Yields the connection and the snapshot's name."""
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if snapshot is None:
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = cursor.fetchone()[0]
            else:
                cursor.execute("SET TRANSACTION SNAPSHOT %s", [snapshot])
        yield other, snapshot
        with other.cursor() as cursor:
            cursor.execute("COMMIT")
    finally:
        other.close()


class _SecondHalf(threading.Thread):
    """Reads the second half on its own connection (in this thread: connections are per thread)
    and hands each chunk to `write`; stops early when asked, keeps what went wrong for the caller."""

    def __init__(self, snapshot: str, read: Callable[[Any], Iterator], write: Callable[[Any], None]) -> None:
        super().__init__(name="export-second-half", daemon=True)
        self.snapshot, self.read, self.write = snapshot, read, write
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.rows = 0

    def run(self) -> None:
        try:
            with _snapshot_connection(self.snapshot) as (other, _), closing(self.read(other)) as chunks:
                for chunk in chunks:
                    if self.stop.is_set():
                        return
                    self.rows += self.write(chunk)
        except BaseException as exc:
            self.error = exc


def in_halves(
    *,
    read_first: Callable[[Any], Iterator],
    read_second: Callable[[Any], Iterator],
    write_first: Callable[[Any], int],
    write_second: Callable[[Any], int],
    progress: Callable[[int], None],
) -> None:
    """Read the first half here and the second in a thread, on one snapshot. `read_*(connection)`
    gives a half's chunks; the writers take one chunk and return its row count."""
    with _snapshot_connection() as (first, snapshot):
        second = _SecondHalf(snapshot, read_second, write_second)
        second.start()
        try:
            rows = 0
            with closing(read_first(first)) as chunks:
                for chunk in chunks:
                    rows += write_first(chunk)
                    progress(rows + second.rows)
                    if second.error is not None:
                        break
        except BaseException:
            second.stop.set()
            raise
        finally:
            second.join()
    if second.error is not None:
        raise second.error


class _Prefetch(threading.Thread):
    """Runs `read(wrapper)` in its own thread on this thread's connection (`wrapper`, shared for the
    time), putting each chunk on a short queue; ends it with _DONE, or with the error it met."""

    def __init__(self, read: Callable[[Any], Iterator], wrapper, depth: int) -> None:
        super().__init__(name="export-prefetch", daemon=True)
        self.read, self.wrapper = read, wrapper
        self.chunks: queue.Queue = queue.Queue(maxsize=depth)
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            with closing(self.read(self.wrapper)) as chunks:
                for chunk in chunks:
                    if not self._put(chunk):
                        return
            self._put(_DONE)
        except BaseException as exc:
            self._put(exc)

    def _put(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.chunks.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False


_DONE = object()


def prefetched(read: Callable[[Any], Iterator], depth: int = 1) -> Iterator:
    """The chunks of `read(connection)`, read in a thread of their own while the caller works on the
    ones before (at most `depth` waiting): a statement read with COPY stalls while its reader is
    busy (the socket fills and the database waits), so the database's work and the caller's (parsing
    and compressing a row group: pyarrow lets go of the GIL) run at once instead of in turn. The
    reading thread uses this thread's connection, which this thread must leave alone until the
    iterator is closed or exhausted; closing it early stops the reading and waits for it."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    wrapper.inc_thread_sharing()
    reader = _Prefetch(read, wrapper, depth)
    reader.start()
    try:
        while True:
            item = reader.chunks.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        reader.stop.set()
        reader.join()
        wrapper.dec_thread_sharing()


@contextmanager
def behind(work: Callable[[Any], None]) -> Iterator[Callable[[Any], None]]:
    """A `put(item)` that has `work(item)` done in a thread of its own, in the order put: a Parquet
    row group is compressed and written there while the next is parsed. `put` returns once the
    thread has taken the item, so at most one waits besides the one being worked on (a row group of
    wide rows is tens of megabytes). What `work` raised is raised by the next `put`, or on leaving;
    leaving waits for what was put."""
    items: queue.Queue = queue.Queue(maxsize=1)
    taken = threading.Semaphore(0)
    failed: list[BaseException] = []

    def run() -> None:
        while True:
            item = items.get()
            taken.release()
            if item is _DONE:
                return
            if not failed:  # after a failure the rest is only taken off the queue
                try:
                    work(item)
                except BaseException as exc:
                    failed.append(exc)

    worker = threading.Thread(target=run, name="export-behind", daemon=True)
    worker.start()

    def put(item) -> None:
        if failed:
            raise failed[0]
        items.put(item)
        taken.acquire()

    try:
        yield put
    finally:
        items.put(_DONE)
        worker.join()
    if failed:
        raise failed[0]


def append_file(source: Path, handle, digest) -> None:
    """The second half's JSONL after the first's, added to `digest` (a hashlib object) on the way."""
    with source.open("rb") as spooled:
        for block in iter(lambda: spooled.read(1 << 20), b""):
            digest.update(block)
            handle.write(block)

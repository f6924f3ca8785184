"""Writing on a second thread while the input is read: the database works on one batch while the
next is parsed.

An import's time is spent half in Python (reading and checking records, building rows) and half in
the database (storing rows, maintaining indexes, checking foreign keys). Done one after the other,
each waits for the other; with the writes on a thread of their own the two overlap on two cores:
the database driver (psycopg's waits, sqlite3's statements) releases the GIL while the server or
the SQLite library works, and the reading thread runs meanwhile.

The writing thread uses the importing thread's own database connection (Django lets a connection be
shared between threads once `inc_thread_sharing` is called), so every write stays in the import's one
transaction and a refused import still writes nothing. The two threads never use the connection at
the same time: the reading thread does not touch the database between `__enter__` and `__exit__`
while anything it put is still being written.
At most `depth` batches wait in the queue, so memory holds a few batches whatever the input's size.
The reading thread may use the connection between `wait_idle` and its next `put`.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

_STOP = object()

# While a writing thread runs, the interpreter hands the GIL over every SWITCH_INTERVAL seconds instead
# of every 5 ms. The writing thread wakes dozens of times per batch (each 128 KB of a COPY, each
# statement's answer) and each time needs the GIL for a few microseconds, which the reading thread,
# busy in Python, may hold for the whole interval while the database waits for data. On 100,000
# conversations (three alternating pairs, 2 cores) the import took 10.9 s on average against 11.5 s.
# The setting is the process's: it is put back when the last writing thread of the process ends.
SWITCH_INTERVAL = 0.0005
_switching = threading.Lock()
_writers = 0
_interval_before = 0.0


def _short_switches(enter: bool) -> None:
    global _writers, _interval_before
    with _switching:
        if enter:
            if _writers == 0:
                _interval_before = sys.getswitchinterval()
                sys.setswitchinterval(min(SWITCH_INTERVAL, _interval_before))
            _writers += 1
        else:
            _writers -= 1
            if _writers == 0:
                sys.setswitchinterval(_interval_before)


class WriterThread:
    """`with WriterThread(write) as writer: writer.put(item)`: `write(item)` runs on the writing thread,
    in the order items were put. An exception raised by `write` is raised again in the reading
    thread by the next `put` or by the end of the block; items put after it are not written."""

    def __init__(self, write: Callable[[Any], None], *, depth: int = 1, using: str = DEFAULT_DB_ALIAS):
        self.write = write
        self.using = using
        self.connection = connections[using]
        self.items: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="import-writer", daemon=True)

    def __enter__(self) -> WriterThread:
        self.connection.inc_thread_sharing()
        _short_switches(True)
        try:
            self.thread.start()
        except BaseException:
            _short_switches(False)
            self.connection.dec_thread_sharing()
            raise
        return self

    def put(self, item: Any) -> None:
        self._raise_error()
        self.items.put(item)

    def wait_idle(self) -> None:
        """Return once every item put so far is written (or failed): the connection is free until the
        next `put`. A failed write is raised here."""
        self.items.join()
        self._raise_error()

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.items.put(_STOP)
        self.thread.join()
        _short_switches(False)
        self.connection.dec_thread_sharing()
        if exc_type is None:
            self._raise_error()

    def _raise_error(self) -> None:
        if self.error is not None:  # kept: the writing thread writes nothing more once it is set
            raise self.error

    def _run(self) -> None:
        # This thread's default connection is the importing thread's: the same session and transaction.
        connections[self.using] = self.connection
        try:
            while (item := self.items.get()) is not _STOP:
                if self.error is None:  # after a failure the queue is still drained, so `put` never blocks
                    try:
                        self.write(item)
                    except BaseException as error:  # raised again in the reading thread
                        self.error = error
                self.items.task_done()
        finally:
            del connections[self.using]

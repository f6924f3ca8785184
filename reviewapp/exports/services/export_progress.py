"""What runs beside an export's rows while they stream: its progress, and the paused cycle collector."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

from reviewapp.models import ExportSnapshot


class Progress:
    """The snapshot's progress, for the page to poll while the rows stream. On PostgreSQL the rows
    come as one streamed statement that keeps the export's connection busy to the last row, so
    progress goes through a second connection (autocommit, opened at the first update). Inside a
    transaction it waits for the final update: nobody could see it before the commit, and the
    snapshot's row may be locked by that very transaction."""

    def __init__(self, snapshot_id: int, total: int) -> None:
        self.snapshot_id, self.total = snapshot_id, total
        self.other: Any = None
        self.streamed = connection.vendor == "postgresql"

    def __call__(self, rows: int) -> None:
        percent = min(99, (100 * rows) // self.total) if self.total else 0
        if not self.streamed:
            ExportSnapshot.objects.filter(pk=self.snapshot_id).update(progress=percent, row_count=rows)
            return
        if connection.in_atomic_block:
            return
        if self.other is None:
            self.other = connections.create_connection(DEFAULT_DB_ALIAS)
        quote, meta = self.other.ops.quote_name, ExportSnapshot._meta
        columns = (quote(meta.get_field(name).column) for name in ("progress", "row_count", "id"))
        with self.other.cursor() as cursor:
            cursor.execute(
                "UPDATE {} SET {} = %s, {} = %s WHERE {} = %s".format(quote(meta.db_table), *columns),  # noqa: S608 - quoted model names only
                [percent, rows, self.snapshot_id],
            )

    def close(self) -> None:
        if self.other is not None:
            self.other.close()


@contextmanager
def no_cycle_collection():
    """The rows are plain dicts and lists without cycles, freed as soon as they are written; but
    every few hundred of them allocated set off Python's cycle collector, which walked them all for
    nothing (40% of the export's CPU at 100,000 rows). It is paused while the rows stream."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()

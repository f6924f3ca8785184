"""An import job's progress, seen by its page while the import's transaction is still open.

An import writes every row in one transaction, so that a refused file writes nothing. Progress written
to the job's row inside that transaction would be seen by nobody until it commits: the page would show
"reading and checking every record" until the very end. So the stage and percent are written outside it:

- on PostgreSQL, to the job's row through a connection of their own, in autocommit, so the page reads
  them from the row as it reads everything else;
- on SQLite, whose one writer at a time is the import itself, to a small file beside the database
  (`<TRIBUNAL_VAR_DIR>/import-progress/<job id>.json`, replaced whole on each write), which the job's
  page reads while the job runs (`live`).

Writes are at most one per `INTERVAL` seconds (the first and a change of percent to 100 always), and a
failure to write progress is logged and never fails the import.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from reviewapp.models import ImportJob

logger = logging.getLogger(__name__)

INTERVAL = 0.5  # seconds between two writes at most


def _file(job_id: int) -> Path:
    return Path(settings.VAR_DIR) / "import-progress" / f"{int(job_id)}.json"


class OutsideProgress:
    """`progress(stage, percent)` for `dataset_import`, written outside its transaction; `close()` at
    the end (it removes the SQLite side file and closes the PostgreSQL connection)."""

    def __init__(self, job_id: int, *, using: str = DEFAULT_DB_ALIAS, interval: float | None = None):
        self.job_id = job_id
        self.connection = connections[using]
        self.interval = INTERVAL if interval is None else interval
        self.last = float("-inf")
        self.raw: Any = None
        self.broken = False

    def __call__(self, stage: str, percent: int) -> None:
        now = time.monotonic()
        if self.broken or (now - self.last < self.interval and percent < 100):
            return
        self.last = now
        try:
            if self.connection.vendor == "sqlite":
                self._to_file(stage[:200], int(percent))
            else:
                self._to_row(stage[:200], int(percent))
        except Exception:  # progress is a courtesy: the import goes on without it
            logger.exception("import job %s: progress could not be written; the import goes on", self.job_id)
            self.broken = True

    def _to_row(self, stage: str, percent: int) -> None:
        if self.raw is None:
            self.raw = self.connection.get_new_connection(self.connection.get_connection_params())
            self.raw.autocommit = True
        quote = self.connection.ops.quote_name
        meta = ImportJob._meta
        table, stage_column, percent_column = (
            quote(meta.db_table),
            quote(meta.get_field("stage").column),
            quote(meta.get_field("progress").column),
        )
        with self.raw.cursor() as cursor:
            # Names come from the model's meta, quoted; the values are parameters. Only a running job moves.
            cursor.execute(
                f"UPDATE {table} SET {stage_column} = %s, {percent_column} = %s WHERE id = %s AND status = %s",  # noqa: S608
                [stage, percent, self.job_id, ImportJob.Status.RUNNING.value],
            )

    def _to_file(self, stage: str, percent: int) -> None:
        path = _file(self.job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_text(json.dumps({"stage": stage, "progress": percent}), encoding="utf-8")
        os.replace(partial, path)  # a reader sees the old file or the new one, never half of one

    def close(self) -> None:
        if self.raw is not None:
            try:
                self.raw.close()
            except Exception:  # already gone with a broken connection
                logger.debug("import job %s: the progress connection was already closed", self.job_id)
            self.raw = None
        _file(self.job_id).unlink(missing_ok=True)


def live(job: ImportJob) -> ImportJob:
    """The job with the stage and percent its import last wrote outside its transaction (SQLite's side
    file), while it runs; as it is otherwise."""
    if job.status != ImportJob.Status.RUNNING:
        return job
    try:
        written = json.loads(_file(job.pk).read_text(encoding="utf-8"))
        stage, percent = str(written["stage"]), int(written["progress"])
    except (OSError, ValueError, KeyError, TypeError):
        return job  # none written yet (or PostgreSQL, where the row has it)
    if percent >= job.progress:
        job.stage, job.progress = stage, percent
    return job

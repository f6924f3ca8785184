"""Export builds on a Celery worker: large snapshots stream to disk away from the web process."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import shared_task
from django.db import connection

from reviewapp.exports.services import export_lines
from reviewapp.exports.services import exports as exports_service

log = logging.getLogger(__name__)


def export_lines_keep_queue(dataset_id: int | None, judge_ids: Sequence[int] = ()) -> None:
    """Queue the keeping of the export rows an import or a sweep brought or made stale: what the
    import task, the import job's task, `manage.py import_data` and a sweep's close call once their
    writes are committed. Lines are kept on PostgreSQL only: elsewhere nothing is queued."""
    if connection.vendor == "postgresql":
        export_lines_keep.delay(dataset_id, list(judge_ids))


def export_lines_keep_after_import(summary) -> None:
    """`export_lines_keep_queue` for the dataset a finished import (`dataset_import`'s summary) wrote:
    what the import task and `manage.py import_data` call (services queue no tasks themselves)."""
    from reviewapp.models import Dataset

    if summary.dataset:
        dataset_id = Dataset.objects.filter(name=summary.dataset).values_list("pk", flat=True).first()
        if dataset_id is not None:
            export_lines_keep_queue(dataset_id)


@shared_task(acks_late=True)
def export_lines_keep(dataset_id: int | None, judge_ids: list[int]) -> dict:
    """Keep the export rows of every judge with gold labels in the dataset (or of these judges, for a
    sweep without one). Safe to run twice: a second run finds every row current and builds nothing."""
    done = export_lines.refresh_after_bulk_write(dataset_id, judge_ids)
    return {"dataset": dataset_id, "built": sum(d.built for d in done), "ran": [d.ran for d in done]}


@shared_task
def export_lines_keep_current() -> dict:
    """Celery beat's periodic keep (export_lines.keep_current): rows built for every judge that keeps
    some, and the judges skipped because a refresh of theirs was running or could not wait."""
    done = export_lines.keep_current()
    return {
        "built": {slug: d.built for slug, d in done},
        "skipped": {slug: d.reason for slug, d in done if not d.ran},
    }


def snapshot_build_queue(snapshot_id: int) -> None:
    """Queue a recorded snapshot's build: what callers hand to snapshot_create."""
    snapshot_build.delay(snapshot_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=6 * 3600, time_limit=6 * 3600 + 300)
def snapshot_build(snapshot_id: int) -> dict:
    """Write one snapshot. Safe to run twice: a done snapshot is returned as it is, and a build killed
    half-way is redelivered (acks_late) and written again from the start under its temporary name."""
    snapshot = exports_service.snapshot_write(snapshot_id=snapshot_id)
    if snapshot.judge_id is not None and snapshot.format in ("jsonl", "parquet"):
        # With the file done, keep the rows this export built (its line and its Parquet columns), so
        # the next JSONL or Parquet export reads them.
        export_lines.refresh(snapshot.judge)
    return {"snapshot": snapshot.pk, "status": snapshot.status, "rows": snapshot.row_count, "sha256": snapshot.sha256}

"""An export built by a real Celery worker from PostgreSQL, queued through Redis when the snapshot commits."""

import hashlib
import json

import pandas as pd
from django.db import connection

from reviewapp.exports.services.export_writers import COLUMN_NAMES
from reviewapp.exports.services.exports import snapshot_create
from reviewapp.exports.tasks.exports import snapshot_build_queue
from reviewapp.models import Conversation, Dataset, ExportSnapshot, GoldLabel, Judge, Turn

CONVERSATIONS = 300


def make_corpus() -> Judge:
    judge = Judge.objects.create(slug="conciseness", level="turn", scale="ordinal")
    dataset = Dataset.objects.create(name="worker-export")
    conversations = Conversation.objects.bulk_create(
        [
            Conversation(dataset=dataset, external_id=f"call-{n:04d}", language=("fr", "ja")[n % 2])
            for n in range(CONVERSATIONS)
        ]
    )
    turns = Turn.objects.bulk_create(
        [
            Turn(conversation=c, position=p, role=("user", "agent")[p % 2], text=f"« tour {p} » {c.external_id}")
            for c in conversations
            for p in range(4)
        ]
    )
    GoldLabel.objects.bulk_create(
        [
            GoldLabel(judge=judge, conversation=t.conversation, turn=t, source="imported", rating=1 + t.pk % 3)
            for t in turns
            if t.role == "agent"
        ]
    )
    return judge


def test_a_snapshot_is_built_by_the_worker(celery_worker_process, wait_until):
    assert connection.vendor == "postgresql"
    judge = make_corpus()

    snapshot = snapshot_create(judge=judge, fmt="parquet", name="worker", languages=["fr"], build=snapshot_build_queue)

    def finished():
        snapshot.refresh_from_db()
        return snapshot.status in ("done", "failed")

    wait_until(finished, timeout=120, message=f"snapshot {snapshot.pk} built\n{celery_worker_process.log_tail()}")
    assert snapshot.status == ExportSnapshot.Status.DONE, snapshot.error
    assert (snapshot.row_count, snapshot.progress, snapshot.version) == (CONVERSATIONS, 100, 1)
    assert snapshot.code_version

    # The worker wrote under its own MEDIA_ROOT (its TRIBUNAL_VAR_DIR).
    media = celery_worker_process.var_dir / "media"
    path = media / snapshot.file_path
    assert path.name == "worker-v1.parquet"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == snapshot.sha256
    frame = pd.read_parquet(path)
    assert list(frame.columns) == list(COLUMN_NAMES) and len(frame) == CONVERSATIONS
    assert set(frame["language"]) == {"fr"}
    sheet = json.loads((path.parent / "worker-v1.datasheet.json").read_text())
    assert sheet["sha256"] == snapshot.sha256 and sheet["counts"]["by_language"] == {"fr": CONVERSATIONS}
    assert sheet == snapshot.datasheet


def _children(pid: int) -> list[int]:
    from pathlib import Path

    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _maps_arrow(pid: int) -> bool:
    from pathlib import Path

    return "libarrow" in Path(f"/proc/{pid}/maps").read_text()


def test_the_worker_loads_pyarrow_once_before_it_forks_its_pool(celery_worker_process, wait_until):
    """The worker's main process runs no task, so Arrow's libraries mapped there were loaded for the
    pool (reviewapp.celery.preload_worker): every pool process starts with them, and no process's
    first Parquet export pays for importing them."""
    pid = celery_worker_process.process.pid
    wait_until(lambda: len(_children(pid)) == celery_worker_process.concurrency, timeout=60, message="pool started")
    assert _maps_arrow(pid)
    assert all(_maps_arrow(child) for child in _children(pid))

"""Progress while an export streams: written where the page reads it, and the cycle collector back on after."""

import gc

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction

from reviewapp.exports.services.export_progress import Progress, no_cycle_collection
from reviewapp.exports.services.exports import snapshot_create, snapshot_write
from reviewapp.models import ExportSnapshot, Judge


def judge() -> Judge:
    return Judge.objects.create(slug="brevity", level="turn", scale="ordinal", scale_min=1, scale_max=3)


@pytest.mark.django_db(transaction=True)
def test_progress_is_written_where_the_page_reads_it():
    snapshot = snapshot_create(judge=judge(), fmt="jsonl", build=False)
    progress = Progress(snapshot.pk, total=8)
    try:
        progress(6)  # on PostgreSQL through a second connection: the export's is busy streaming
    finally:
        progress.close()
    assert ExportSnapshot.objects.values_list("progress", "row_count").get(pk=snapshot.pk) == (75, 6)


@pytest.mark.django_db
def test_progress_inside_a_transaction_is_left_to_the_final_update():
    snapshot = snapshot_create(judge=judge(), fmt="jsonl", build=False)
    with transaction.atomic():
        progress = Progress(snapshot.pk, total=8)
        progress(6)
        progress.close()
    written = ExportSnapshot.objects.values_list("progress", "row_count").get(pk=snapshot.pk)
    # PostgreSQL's second connection could not see the uncommitted snapshot (or would wait on its lock)
    assert written == ((0, 0) if connection.vendor == "postgresql" else (75, 6))


def test_the_cycle_collector_comes_back_on_even_after_an_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_cycle_collection():
        assert not gc.isenabled()
        raise RuntimeError("the export failed")
    assert gc.isenabled()


@pytest.mark.django_db
def test_an_export_leaves_the_cycle_collector_on(media):
    snapshot = snapshot_create(judge=judge(), fmt="jsonl", build=False)
    assert snapshot_write(snapshot_id=snapshot.pk).status == "done"
    assert gc.isenabled()


@pytest.mark.django_db(transaction=True)
def test_progress_mid_stream_is_written_while_the_rows_come(corpus, media, monkeypatch):
    """Progress after every chunk: on PostgreSQL the export's connection is still streaming then
    (a query on it would fail with "another command is already in progress")."""
    seen = []
    monkeypatch.setattr("reviewapp.exports.services.exports.PROGRESS_EVERY_ROWS", 1)
    reader = connections.create_connection(DEFAULT_DB_ALIAS) if connection.vendor == "postgresql" else connection
    monkeypatch.setattr(Progress, "__call__", _recording(Progress.__call__, reader, seen))
    snapshot = snapshot_create(judge=corpus.judge, fmt="jsonl", build=False)
    try:
        done = snapshot_write(snapshot_id=snapshot.pk, chunk_size=1)
    finally:
        if reader is not connection:
            reader.close()
    assert (done.status, done.progress, done.row_count) == ("done", 100, 3)
    assert seen == [(33, 1), (66, 2), (99, 3)]  # each written and read back between two chunks


def _recording(write, reader, seen):
    """Progress.__call__, then what `reader` sees. On PostgreSQL the reader has its own connection:
    the export's is streaming (a query on it would wait for the stream to end)."""

    def call(self, rows):
        write(self, rows)
        with reader.cursor() as cursor:
            cursor.execute("SELECT progress, row_count FROM reviewapp_exportsnapshot WHERE id = %s", [self.snapshot_id])
            seen.append(tuple(cursor.fetchone()))

    return call


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fmt", ["jsonl", "eva"])
def test_a_write_failing_half_way_marks_the_snapshot_failed(corpus, media, monkeypatch, fmt):
    """The rows still streaming when the writer fails: the stream ends before the failure is
    written on the same connection (on PostgreSQL that write would otherwise wait forever)."""
    written = []

    def full_after_one(self, row):
        if written:
            raise OSError("disk full")
        written.append(row)

    writer = "export_eva.EvaWriter" if fmt == "eva" else "export_writers.JsonlWriter"
    monkeypatch.setattr(f"reviewapp.exports.services.{writer}.write", full_after_one)
    if fmt == "jsonl":  # PostgreSQL writes the database's lines, a chunk of them (one row here) at a time
        monkeypatch.setattr(f"reviewapp.exports.services.{writer}.write_lines", full_after_one)
    snapshot = snapshot_create(judge=corpus.judge, fmt=fmt, build=False)
    with pytest.raises(OSError, match="disk full"):
        snapshot_write(snapshot_id=snapshot.pk, chunk_size=1)
    assert ExportSnapshot.objects.values_list("status", flat=True).get(pk=snapshot.pk) == "failed"
    assert len(written) == 1

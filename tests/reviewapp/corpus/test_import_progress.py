"""An import job's page shows its progress while the import's one transaction is still open: the stage
and percent are written outside that transaction (import_progress), so a lead watching a long import
sees it move instead of "reading and checking every record" until the end."""

import json
import threading

import pytest
from django.db import connection
from django.urls import reverse

from reviewapp.corpus.services import import_progress
from reviewapp.corpus.services.import_jobs import import_job_run
from reviewapp.corpus.services.import_progress import OutsideProgress
from reviewapp.models import Conversation, ImportJob, Role

ON_POSTGRES = connection.vendor == "postgresql"


def write_calls(path, count: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            turns = [{"role": "user", "text": f"Bonjour {n}"}, {"role": "agent", "text": "Bonjour, je vous écoute."}]
            handle.write(json.dumps({"external_id": f"c{n}", "language": "fr", "turns": turns}) + "\n")


def running_job(path, name: str) -> ImportJob:
    return ImportJob.objects.create(
        source_kind=ImportJob.Source.PATH,
        source=path.name,
        path=str(path),
        fmt="jsonl",
        dataset_name=name,
        status=ImportJob.Status.RUNNING,
        stage="started",
        progress=5,
    )


def progress_fragment(client, job) -> str:
    return client.get(reverse("import_detail", args=[job.pk]), HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite has one writer: its side file is tested below")
def test_the_page_shows_the_import_moving_while_its_transaction_is_open(client, make_user, tmp_path, monkeypatch):
    """The import runs on a thread of its own (its own connection, its own transaction) and is held after
    its first batch is written; the page, read meanwhile through another connection, shows that batch."""
    client.force_login(make_user("lea", role=Role.LEAD))
    path = tmp_path / "calls.jsonl"
    write_calls(path, 5000)  # three batches of at most 2,000 conversations
    job = running_job(path, "watched")
    written, release = threading.Event(), threading.Event()
    original = OutsideProgress.__call__

    def held(self, stage, percent):
        original(self, stage, percent)
        if stage.startswith("writing: 2000 conversations") and not written.is_set():
            written.set()
            assert release.wait(30), "the test did not let the import go on"

    monkeypatch.setattr(OutsideProgress, "__call__", held)
    monkeypatch.setattr(import_progress, "INTERVAL", 0)  # every batch's stage is written
    outcome = {}

    def run():
        try:
            outcome["job"] = import_job_run(job_id=job.pk)
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert written.wait(30), "the import never wrote its first batch"
        fragment = progress_fragment(client, job)
        row = ImportJob.objects.get(pk=job.pk)
        assert row.status == "running" and row.stage.startswith("writing: 2000 conversations and 4000 turns")
        assert 10 < row.progress < 100
        assert "Writing: 2000 conversations and 4000 turns so far" in fragment
        assert f'value="{row.progress}"' in fragment and 'hx-trigger="every 1s"' in fragment
        assert not Conversation.objects.filter(dataset__name="watched").exists()  # nothing committed yet
    finally:
        release.set()
        worker.join(60)
    assert outcome["job"].status == "done" and outcome["job"].progress == 100
    assert Conversation.objects.filter(dataset__name="watched").count() == 5000
    fragment = progress_fragment(client, job)
    assert "5000 new conversations" in fragment and 'hx-trigger="every 1s"' not in fragment


@pytest.mark.django_db
def test_a_finished_job_row_is_never_moved_back_by_a_late_write(tmp_path):
    path = tmp_path / "calls.jsonl"
    write_calls(path, 3)
    job = running_job(path, "late")
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.DONE, stage="done", progress=100)
    job.refresh_from_db()
    progress = OutsideProgress(job.pk)
    progress("writing: 3 conversations and 6 turns so far", 60)
    progress.close()
    job.refresh_from_db()
    assert (job.status, job.stage, job.progress) == ("done", "done", 100)
    assert import_progress.live(job).progress == 100


@pytest.mark.django_db
@pytest.mark.skipif(ON_POSTGRES, reason="PostgreSQL writes the row itself: tested above")
def test_sqlite_progress_goes_to_a_side_file_that_the_page_reads(client, make_user, tmp_path, settings):
    settings.VAR_DIR = tmp_path / "var"
    client.force_login(make_user("lea", role=Role.LEAD))
    path = tmp_path / "calls.jsonl"
    write_calls(path, 3)
    job = running_job(path, "side")
    progress = OutsideProgress(job.pk, interval=0)
    progress("writing: 2000 conversations and 18000 turns so far", 42)
    side = settings.VAR_DIR / "import-progress" / f"{job.pk}.json"
    assert json.loads(side.read_text()) == {
        "stage": "writing: 2000 conversations and 18000 turns so far",
        "progress": 42,
    }
    fragment = progress_fragment(client, job)
    assert "Writing: 2000 conversations and 18000 turns so far" in fragment and 'value="42"' in fragment
    assert ImportJob.objects.get(pk=job.pk).progress == 5  # the row is the import's to write, at its end

    side.write_text("{not json")  # a torn or foreign file: the row's own values are shown
    assert 'value="5"' in progress_fragment(client, job)
    progress.close()
    assert not side.exists()
    assert 'value="5"' in progress_fragment(client, job)


@pytest.mark.django_db
def test_progress_writes_are_spaced_and_a_failure_never_stops_the_import(tmp_path, monkeypatch, caplog):
    path = tmp_path / "calls.jsonl"
    write_calls(path, 3)
    job = running_job(path, "spaced")
    progress = OutsideProgress(job.pk, interval=60)
    seen = []
    monkeypatch.setattr(OutsideProgress, "_to_row", lambda self, stage, percent: seen.append(percent))
    monkeypatch.setattr(OutsideProgress, "_to_file", lambda self, stage, percent: seen.append(percent))
    for percent in (10, 20, 30, 100):
        progress("writing", percent)
    assert seen == [10, 100]  # the first, then nothing for 60 s but the end

    def broken(self, stage, percent):
        raise OSError("disk full")

    monkeypatch.setattr(OutsideProgress, "_to_row", broken)
    monkeypatch.setattr(OutsideProgress, "_to_file", broken)
    failing = OutsideProgress(job.pk, interval=0)
    failing("writing", 20)
    failing("writing", 30)  # not tried again
    failures = [r for r in caplog.records if "progress could not be written" in r.getMessage()]
    assert len(failures) == 1 and "disk full" in str(failures[0].exc_info[1])
    failing.close()


@pytest.mark.django_db
def test_a_whole_job_run_ends_with_its_own_row_and_no_side_file(tmp_path, settings):
    settings.VAR_DIR = tmp_path / "var"
    path = tmp_path / "calls.jsonl"
    write_calls(path, 5)
    job = running_job(path, "whole")
    finished = import_job_run(job_id=job.pk)
    assert (finished.status, finished.progress, finished.stage) == ("done", 100, "done")
    assert not (settings.VAR_DIR / "import-progress" / f"{job.pk}.json").exists()

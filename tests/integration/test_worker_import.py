"""Imports through the real stack: a task queued in Redis, a Celery worker process writing to PostgreSQL."""

import json
from pathlib import Path

import pytest
from django.db import connection

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.corpus.tasks.imports import import_file
from reviewapp.models import Conversation, Dataset, ExportLine, GoldLabel, Turn, Verdict

CONVERSATIONS = 120
TURNS_PER_CONVERSATION = 6


def write_jsonl(path: Path, *, conversations: int = CONVERSATIONS, language: str = "fr") -> Path:
    """A Tribunal JSONL file: each conversation has user/agent turns, one gold label and one verdict."""
    with path.open("w", encoding="utf-8") as handle:
        for number in range(conversations):
            turns = [
                {
                    "role": "user" if position % 2 == 0 else "agent",
                    "text": f"Tour {position} de la conversation {number} : « {'é' * (position + 1)} »",
                }
                for position in range(TURNS_PER_CONVERSATION)
            ]
            turns[1]["labels"] = [{"judge": "conciseness", "rating": 1 + number % 3, "failure_modes": []}]
            turns[1]["verdicts"] = [{"judge": "conciseness", "version": "v1", "rating": 2, "explanation": "ok"}]
            record = {"external_id": f"conv-{number:04d}", "language": language, "turns": turns}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def dataset_counts(name: str) -> dict[str, int]:
    return {
        "conversations": Conversation.objects.filter(dataset__name=name).count(),
        "turns": Turn.objects.filter(conversation__dataset__name=name).count(),
        "labels": GoldLabel.objects.filter(conversation__dataset__name=name).count(),
        "verdicts": Verdict.objects.filter(conversation__dataset__name=name).count(),
    }


EXPECTED = {
    "conversations": CONVERSATIONS,
    "turns": CONVERSATIONS * TURNS_PER_CONVERSATION,
    "labels": CONVERSATIONS,
    "verdicts": CONVERSATIONS,
}


def task_succeeded(worker, task_id: str) -> str | None:
    """The worker's log line for this task's success (it carries the returned summary), if any."""
    for line in worker.log().splitlines():
        if f"[{task_id}] succeeded" in line:
            return line
    return None


def test_a_queued_import_is_written_to_postgresql_by_the_worker(celery_worker_process, wait_until, tmp_path):
    assert connection.vendor == "postgresql"
    source = write_jsonl(tmp_path / "agent-run.jsonl")

    queued = import_file.delay(str(source), "jsonl", "worker-import", None, False)

    line = wait_until(
        lambda: task_succeeded(celery_worker_process, queued.id),
        timeout=60,
        message=f"the worker to finish task {queued.id}",
    )
    assert dataset_counts("worker-import") == EXPECTED
    assert "'conversations': 120" in line and "'turns': 720" in line
    dataset = Dataset.objects.get(name="worker-import")
    assert dataset.kind == Dataset.Kind.VALIDATION
    turn = Turn.objects.get(conversation__external_id="conv-0007", position=3)
    assert turn.role == Turn.Role.AGENT
    assert turn.text == "Tour 3 de la conversation 7 : « éééé »"
    assert set(Conversation.objects.filter(dataset=dataset).values_list("language", flat=True)) == {"fr"}
    # A prefork worker's process runs no other thread: it read the file in a child process of its own.
    assert "import of agent-run.jsonl: reading in process" in celery_worker_process.log()
    # Then it kept the export lines of the new gold labels, so their first export reads them.
    labels = GoldLabel.objects.filter(conversation__dataset=dataset)
    kept = ExportLine.objects.filter(gold_id__in=labels.values("pk"))
    wait_until(lambda: kept.count() == CONVERSATIONS, timeout=60, message="the worker to keep the export lines")
    assert kept.count() == CONVERSATIONS
    # The refresh logs once it has also composed the blocks, after the lines are committed and visible.
    wait_until(
        lambda: "export lines of conciseness: 120 built" in celery_worker_process.log(),
        timeout=60,
        message="the worker to log the refresh",
    )


def test_the_same_import_delivered_twice_at_once_writes_each_row_once(celery_worker_process, wait_until, tmp_path):
    """A redelivered task may run beside the original (two pool processes): rows must still be unique."""
    source = write_jsonl(tmp_path / "twice.jsonl")

    first = import_file.delay(str(source), "jsonl", "delivered-twice", None, False)
    second = import_file.delay(str(source), "jsonl", "delivered-twice", None, False)

    for queued in (first, second):
        wait_until(lambda queued=queued: task_succeeded(celery_worker_process, queued.id), timeout=60)
    assert dataset_counts("delivered-twice") == EXPECTED
    assert Dataset.objects.filter(name="delivered-twice").count() == 1


def test_a_refused_import_writes_nothing_and_the_worker_reports_why(celery_worker_process, wait_until, tmp_path):
    source = tmp_path / "broken.jsonl"
    source.write_text('{"external_id": "ok", "turns": [{"role": "user", "text": "hi"}]}\n{not json\n')

    queued = import_file.delay(str(source), "jsonl", "refused-import", None, False)

    line = wait_until(lambda: task_succeeded(celery_worker_process, queued.id), timeout=60)
    assert "not valid JSON" in line
    assert not Dataset.objects.filter(name="refused-import").exists()


@pytest.mark.django_db
def test_bulk_import_on_postgresql_is_idempotent(tmp_path):
    assert connection.vendor == "postgresql"
    source = write_jsonl(tmp_path / "validation.jsonl")

    first = dataset_import(path=source, fmt="jsonl", dataset_name="idempotent", language=None, skip_invalid=False)
    after_first = dataset_counts("idempotent")
    second = dataset_import(path=source, fmt="jsonl", dataset_name="idempotent", language=None, skip_invalid=False)

    assert after_first == EXPECTED
    assert dataset_counts("idempotent") == EXPECTED
    assert {key: first.created[key] for key in EXPECTED} == EXPECTED
    assert {key: second.created[key] for key in EXPECTED} == dict.fromkeys(EXPECTED, 0)
    assert second.created["dataset"] == 0

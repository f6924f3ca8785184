"""The harness itself: a killed worker is really gone, and a restarted one takes tasks again."""

import os

from reviewapp.corpus.tasks.imports import import_file
from reviewapp.models import Dataset
from tests.integration.test_worker_import import EXPECTED, dataset_counts, task_succeeded, write_jsonl


def pool_processes(parent_pid: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[1] is the parent pid; fields[2] the process group.
        if int(fields[1]) == parent_pid or int(fields[2]) == parent_pid:
            children.append(int(entry))
    return children


def test_kill_takes_the_pool_down_and_restart_serves_tasks_again(celery_worker_process, wait_until, tmp_path):
    worker = celery_worker_process
    first_pid = worker.process.pid
    assert wait_until(lambda: len(pool_processes(first_pid)) >= 2, timeout=10, message="the prefork pool")

    worker.kill()

    assert not worker.alive
    assert worker.process.returncode == -9
    assert wait_until(lambda: not pool_processes(first_pid), timeout=10, message="the pool children to exit")

    worker.restart()

    assert worker.alive and worker.process.pid != first_pid
    queued = import_file.delay(str(write_jsonl(tmp_path / "after-restart.jsonl")), "jsonl", "after-restart")
    wait_until(lambda: task_succeeded(worker, queued.id), timeout=60, message="the restarted worker")
    assert dataset_counts("after-restart") == EXPECTED
    assert Dataset.objects.filter(name="after-restart").count() == 1

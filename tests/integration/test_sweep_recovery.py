"""A killed worker's sweep finishes within two minutes of a worker being back, with default settings.

PostgreSQL, Redis, a real Celery worker started the way `make run` starts it (with embedded beat,
`-B`) and nothing shortened: the default Redis visibility timeout (sized to the longest chunk, ten
minutes) would bring the killed worker's chunks back far too late, so what finishes the sweep is the
reconcile task on beat re-sending the chunks of a sweep with no progress.
"""

import time

import pytest
from django.conf import settings
from django.db import connection

from reviewapp.models import Sweep
from tests.integration import harness
from tests.integration.sweep_support import assert_each_owed_verdict_once, kill_mid_sweep, start_sweep
from tests.llm_server import run_llm_server


class WorkerWithBeat(harness.CeleryWorker):
    """The worker of `make run`: embedded beat, and the broker's visibility timeout left at its default."""

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env.pop("CELERY_VISIBILITY_TIMEOUT")
        for name in list(env):
            if name.startswith("TRIBUNAL_SWEEP_") or name in ("CELERY_TASK_SOFT_TIME_LIMIT", "CELERY_TASK_TIME_LIMIT"):
                env.pop(name)
        return env

    def command(self) -> list[str]:
        return [*super().command(), "-B"]


@pytest.fixture
def beat_worker(celery_worker_process, monkeypatch):
    """Replace the session's worker with one that runs beat, talking to the local LLM server."""
    celery_worker_process.stop()
    with run_llm_server(behaviour="good", latency_s=0.2) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        worker = WorkerWithBeat(
            database_url=celery_worker_process.database_url, broker_url=celery_worker_process.broker_url
        )
        worker.start()
        try:
            yield worker
        finally:
            worker.stop()
            # Copies of chunks still waiting (a redelivery, a lease wait) must not reach the next
            # worker while the test database is being emptied.
            harness.redis_flush(celery_worker_process.broker_url)
            monkeypatch.delenv("OPENAI_BASE_URL")
            monkeypatch.delenv("OPENAI_API_KEY")
            celery_worker_process.start()


def test_a_sweep_whose_worker_was_killed_finishes_within_two_minutes_of_a_restart(beat_worker, wait_until):
    worker = beat_worker
    assert connection.vendor == "postgresql"
    # The defaults this test relies on, not shortened for it.
    assert settings.TRIBUNAL_SWEEP_STALL_SECONDS == 30 and settings.TRIBUNAL_SWEEP_RECONCILE_SECONDS == 15
    assert "CELERY_VISIBILITY_TIMEOUT" not in worker.environment()

    judge, sweep, expected = start_sweep(qa_sample=0)

    kill_mid_sweep(worker, sweep, expected, written=40, wait_until=wait_until)
    time.sleep(2)
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.RUNNING

    worker.start()
    back = time.monotonic()
    try:
        wait_until(
            lambda: Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE,
            timeout=120,
            interval=1.0,
            message=f"sweep {sweep.pk} to finish within two minutes of the restart",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{worker.log_tail(80)}") from None
    took = time.monotonic() - back
    sweep.refresh_from_db()

    assert_each_owed_verdict_once(sweep, judge, expected)
    # The reconcile task re-sent the chunks the killed worker held.
    assert sweep.params.get("resent_chunks", 0) >= 1, worker.log_tail(60)
    assert "re-sent" in worker.log()
    print(f"finished {took:.0f} s after the worker was back; {sweep.params['resent_chunks']} chunk(s) re-sent")

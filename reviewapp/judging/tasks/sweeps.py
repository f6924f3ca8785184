"""Sweep tasks: dispatch a sweep into chunks, run each chunk, close the sweep.

Every task takes ids and calls a service; each is safe to run twice (see services/sweeps/).
Services never import these tasks: a caller hands sweep_start `sweep_queue` as its dispatch.
acks_late + reject_on_worker_lost: a task whose worker is killed goes back to the queue.

Recovery from a killed worker does not wait for Redis to redeliver (CELERY_VISIBILITY_TIMEOUT,
sized to the longest chunk): a running chunk heartbeats every TRIBUNAL_SWEEP_HEARTBEAT_SECONDS and
holds a lease on its chunk; `sweeps_reconcile`, on Celery beat every
TRIBUNAL_SWEEP_RECONCILE_SECONDS, re-sends the unfinished chunks of a sweep silent for
TRIBUNAL_SWEEP_STALL_SECONDS (doubling after each reconcile of the same sweep). A copy of a chunk
whose lease is still live waits for it to end, so no LLM call is made twice at once.

Queues: every sweep task goes to the default queue unless TRIBUNAL_SWEEP_QUEUE names another. For
LLM-heavy deployments run the chunks on their own queue and worker, e.g.
    TRIBUNAL_SWEEP_QUEUE=llm celery -A reviewapp worker -Q llm --pool prefork --concurrency 2

Worker setting: prefork with one process per core. Each process makes its chunks' LLM calls from one
thread pool of TRIBUNAL_SWEEP_LLM_THREADS threads, kept for the life of the process; keep
TRIBUNAL_SWEEP_CHUNK_SIZE at or below it so a chunk's calls go out in one wave (bench/sweep.py uses
128 and 128). Threads rather than asyncio: a waiting thread costs no CPU, the worker's CPU per call
is the openai client building and reading the request (which the async client does the same way),
and the synchronous client, its retries and the shared rate limit serve replays and commands too.
The shared rate limit reserves its slots in batches (scoring/ratelimit_slots.py) rather than polling
Redis per call, which had cost more CPU than the call itself. Figures: bench/sweep.py's docstring.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import OperationalError

from reviewapp.judging.services import sweeps as sweeps_service

log = logging.getLogger(__name__)

SWEEP_QUEUE = settings.TRIBUNAL_SWEEP_QUEUE or None
CHUNK_SOFT_TIME_LIMIT = settings.TRIBUNAL_SWEEP_CHUNK_SOFT_LIMIT
CHUNK_TIME_LIMIT = settings.TRIBUNAL_SWEEP_CHUNK_TIME_LIMIT
# A copy of a chunk that another run holds waits for that lease at most this many times (a lease
# lasts TRIBUNAL_SWEEP_STALL_SECONDS and a chunk cannot outlive its time limit).
LEASE_WAITS = max(3, CHUNK_TIME_LIMIT // max(1, settings.TRIBUNAL_SWEEP_STALL_SECONDS) + 2)


def _send(task, *args) -> None:
    if SWEEP_QUEUE:
        task.apply_async(args=args, queue=SWEEP_QUEUE)
    else:
        task.delay(*args)


def _finalize(sweep_id: int, *, recount: bool = True):
    """Close the sweep if it is complete; the call that closes it queues the keeping of the export
    rows its verdicts made stale (every judge with gold labels in its dataset, or its own judges).
    A chunk's end passes `recount=False`: the counters kept on write say when to count."""
    sweep = sweeps_service.sweep_finalize(sweep_id=sweep_id, recount=recount)
    if sweep.closed:
        from reviewapp.exports.tasks.exports import export_lines_keep_queue

        judges = [] if sweep.dataset_id else sorted(set(sweep.judge_versions.values_list("judge_id", flat=True)))
        export_lines_keep_queue(sweep.dataset_id, judges)
    return sweep


def sweep_queue(sweep_id: int) -> None:
    """Queue a planned sweep's dispatch: what callers hand to sweep_start (it runs after the commit)."""
    _send(sweep_dispatch, sweep_id)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=120,
    time_limit=150,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def sweep_dispatch(self, sweep_id: int) -> int:
    """Queue every chunk of a sweep once; a redelivered dispatch re-queues only if it had not finished."""
    from reviewapp.models import Sweep

    sweep = Sweep.objects.select_related("dataset").get(pk=sweep_id)
    if sweep.status in (Sweep.Status.CANCELLED, Sweep.Status.FAILED, Sweep.Status.DONE):
        return 0
    if sweep.params.get("dispatched"):
        return 0
    sweeps_service.sweep_mark_running(sweep_id=sweep_id)
    chunks = sweeps_service.sweep_chunks(sweep=sweep)
    for judge_version_id, target_ids in chunks:
        _send(sweep_chunk, sweep_id, judge_version_id, target_ids)
    # Marked after sending: a dispatch killed half-way is redelivered and sends every chunk again
    # (the chunks skip what is already written).
    sweeps_service.sweep_mark_dispatched(sweep_id=sweep_id, chunks=len(chunks))
    if not chunks:
        _finalize(sweep_id)
    return len(chunks)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=CHUNK_SOFT_TIME_LIMIT,
    time_limit=CHUNK_TIME_LIMIT,
    max_retries=8,
)
def sweep_chunk(self, sweep_id: int, judge_version_id: int, target_ids: list[int]) -> dict:
    """Score one chunk, then recompute the sweep's counters (and close it if this was the last).

    The chunk's lease keeps a re-sent copy from running beside it; the copy then only refreshes
    the counters.
    """
    holder = sweeps_service.chunk_lease_acquire(
        sweep_id=sweep_id, judge_version_id=judge_version_id, target_ids=target_ids
    )
    if holder is None:
        # Another run holds the chunk: wait for its lease to end, then do whatever it left (nothing,
        # if it finished; everything unwritten, if its worker died and the lease ran out).
        if self.request.is_eager or self.request.retries >= LEASE_WAITS:
            log.info("sweep %s: this chunk is held by another run; leaving it to that run", sweep_id)
            _finalize(sweep_id)
            return {"signature_verdicts": 0, "llm_verdicts": 0, "llm_calls": 0, "skipped": len(target_ids)}
        wait = sweeps_service.chunk_lease_wait_seconds(
            sweep_id=sweep_id, judge_version_id=judge_version_id, target_ids=target_ids
        )
        raise self.retry(countdown=int(wait) + 5, max_retries=LEASE_WAITS)
    try:
        try:
            outcome = sweeps_service.sweep_chunk_run(
                sweep_id=sweep_id, judge_version_id=judge_version_id, target_ids=target_ids
            )
        finally:
            # Released before any retry is queued, so the retry can take the lease.
            sweeps_service.chunk_lease_release(holder=holder)
    except SoftTimeLimitExceeded as exc:
        # What was answered is written; the retry only does the rest.
        log.warning("sweep %s chunk of %d targets hit its time limit; retrying the rest", sweep_id, len(target_ids))
        raise self.retry(exc=exc, countdown=5) from exc
    except OperationalError as exc:
        raise self.retry(exc=exc, countdown=min(60, 2**self.request.retries)) from exc
    except Exception as exc:
        if self.request.retries >= self.max_retries:
            sweeps_service.sweep_fail(sweep_id=sweep_id, error=f"chunk failed: {type(exc).__name__}: {exc}")
            raise
        raise self.retry(exc=exc, countdown=min(60, 2**self.request.retries)) from exc
    _finalize(sweep_id, recount=False)
    return {
        "signature_verdicts": outcome.signature_verdicts,
        "llm_verdicts": outcome.llm_verdicts,
        "llm_calls": outcome.llm_calls,
        "skipped": outcome.skipped,
    }


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=300, time_limit=360)
def sweep_finalize(sweep_id: int) -> str:
    return _finalize(sweep_id).status


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=120, time_limit=150)
def sweeps_reconcile() -> dict:
    """Celery beat, every TRIBUNAL_SWEEP_RECONCILE_SECONDS: re-send the unfinished chunks of stalled sweeps.

    A sweep is stalled when it is running and nothing (no verdict, no chunk heartbeat) happened for
    TRIBUNAL_SWEEP_STALL_SECONDS: its worker died holding the chunks. Re-sending is idempotent: a
    chunk skips the keys that already have a verdict, and verdict writes ignore conflicts.
    """
    resent: dict[str, int] = {}
    for sweep_id in sweeps_service.sweeps_stalled():
        plan = sweeps_service.sweep_reconcile(sweep_id=sweep_id)
        if plan.redispatch:
            _send(sweep_dispatch, sweep_id)
        for judge_version_id, target_ids in plan.chunks:
            _send(sweep_chunk, sweep_id, judge_version_id, target_ids)
        if plan.finalize:
            _finalize(sweep_id)
        resent[str(sweep_id)] = len(plan.chunks)
        if plan.chunks:
            log.warning("sweep %s stalled: re-sent %d unfinished chunk(s)", sweep_id, len(plan.chunks))
    return resent

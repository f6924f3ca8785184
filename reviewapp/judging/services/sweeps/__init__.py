"""Sweeps: score a dataset with judge versions, signatures first, the LLM only where needed.

A sweep is planned once (plan.sweep_start), cut into chunks of targets that Celery workers run
(run.sweep_chunk_run, with llm_tier for the calls), and closed by finish.sweep_finalize, which
recomputes every counter from the Verdict table. Every step is safe to run twice: a verdict is
keyed by (sweep, judge version, target, run index) and written with conflict-ignoring inserts, and
a chunk skips the keys that already have a verdict, so a redelivered task never calls the LLM again
for them. recovery.py holds the chunk leases and re-sends the chunks of a sweep whose worker died.

Counters on Sweep are per (target, judge version) on run 0 - tier1_resolved, escalated,
unresolved, failed - plus verdicts_written over every run.

This module is the package's public face: callers import from here.
"""

from __future__ import annotations

from reviewapp.judging.services import calls as calls_service
from reviewapp.judging.services.sweeps.finish import SweepCounts, sweep_counts, sweep_fail, sweep_finalize
from reviewapp.judging.services.sweeps.llm_tier import HEARTBEAT_SECONDS, LLM_THREADS, VERDICT_FLUSH_EVERY, llm_pool
from reviewapp.judging.services.sweeps.plan import (
    CHUNK_SIZE,
    MAX_REPEATS,
    SweepError,
    eva_render_problems,
    judge_eva_profile,
    sweep_chunks,
    sweep_mark_dispatched,
    sweep_mark_running,
    sweep_start,
    sweep_targets,
    target_ids_for,
    target_level,
    target_role,
    variance_sample_pick,
)
from reviewapp.judging.services.sweeps.recovery import (
    ReconcilePlan,
    chunk_lease_acquire,
    chunk_lease_release,
    chunk_lease_wait_seconds,
    sweep_heartbeat,
    sweep_reconcile,
    sweep_unfinished_chunks,
    sweeps_stalled,
)
from reviewapp.judging.services.sweeps.run import LLM_OFF_EXPLANATION, sweep_chunk_run
from reviewapp.judging.services.sweeps.verdicts import ChunkOutcome, verdict_fields_from_result
from reviewapp.versioning import code_version


def llm_client():
    """The configured LLM client, or None when the LLM tier is off (the seam tests replace)."""
    return calls_service.llm_client_from_settings()


__all__ = [
    "CHUNK_SIZE",
    "HEARTBEAT_SECONDS",
    "LLM_OFF_EXPLANATION",
    "LLM_THREADS",
    "MAX_REPEATS",
    "VERDICT_FLUSH_EVERY",
    "ChunkOutcome",
    "ReconcilePlan",
    "SweepCounts",
    "SweepError",
    "chunk_lease_acquire",
    "chunk_lease_release",
    "chunk_lease_wait_seconds",
    "code_version",
    "eva_render_problems",
    "judge_eva_profile",
    "llm_client",
    "llm_pool",
    "sweep_chunk_run",
    "sweep_chunks",
    "sweep_counts",
    "sweep_fail",
    "sweep_finalize",
    "sweep_heartbeat",
    "sweep_mark_dispatched",
    "sweep_mark_running",
    "sweep_reconcile",
    "sweep_start",
    "sweep_targets",
    "sweep_unfinished_chunks",
    "sweeps_stalled",
    "target_ids_for",
    "target_level",
    "target_role",
    "variance_sample_pick",
    "verdict_fields_from_result",
]

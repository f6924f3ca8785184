"""Chunk leases, heartbeats, and recovery of sweeps whose worker died.

A running chunk holds a lease on itself and heartbeats; a sweep silent for its stall time has its
unfinished chunks re-sent (sweeps_reconcile task), and a re-sent copy waits for a live lease.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.judging.services.sweeps.plan import sweep_chunks
from reviewapp.models import Judge, Sweep, SweepChunkLease, Verdict

# The chunk leases this process holds (prefork: one chunk task at a time per process).


_held_leases: set[str] = set()


def sweep_heartbeat(*, sweep_id: int) -> None:
    """A chunk says it is alive: the reconcile task leaves a sweep alone while its chunks report."""
    now = timezone.now()
    Sweep.objects.filter(pk=sweep_id).update(progress_at=now)
    if _held_leases:
        lease_ttl = timedelta(seconds=settings.TRIBUNAL_SWEEP_STALL_SECONDS)
        SweepChunkLease.objects.filter(sweep_id=sweep_id, holder__in=list(_held_leases)).update(
            expires_at=now + lease_ttl
        )


def chunk_lease_acquire(*, sweep_id: int, judge_version_id: int, target_ids: Sequence[int]) -> str | None:
    """Take the chunk's lease; None when another run of the same chunk holds a live one."""
    holder = uuid.uuid4().hex
    now = timezone.now()
    expires_at = now + timedelta(seconds=settings.TRIBUNAL_SWEEP_STALL_SECONDS)
    key = {"sweep_id": sweep_id, "judge_version_id": judge_version_id, "first_target": min(target_ids)}
    with transaction.atomic():
        lease, created = SweepChunkLease.objects.select_for_update().get_or_create(
            **key, defaults={"holder": holder, "expires_at": expires_at}
        )
        if not created:
            if lease.expires_at > now:
                return None
            lease.holder, lease.expires_at = holder, expires_at
            lease.save(update_fields=["holder", "expires_at"])
    _held_leases.add(holder)
    return holder


def chunk_lease_wait_seconds(*, sweep_id: int, judge_version_id: int, target_ids: Sequence[int]) -> float:
    """Seconds until the live lease of this chunk runs out (0 when there is none)."""
    lease = SweepChunkLease.objects.filter(
        sweep_id=sweep_id, judge_version_id=judge_version_id, first_target=min(target_ids)
    ).first()
    if lease is None:
        return 0.0
    return max(0.0, (lease.expires_at - timezone.now()).total_seconds())


def chunk_lease_release(*, holder: str) -> None:
    _held_leases.discard(holder)
    SweepChunkLease.objects.filter(holder=holder).delete()


def _last_sign_of_life(sweep: Sweep):
    """When `sweep` last showed life: a chunk's heartbeat and every verdict write set `progress_at`."""
    moments = [sweep.progress_at, sweep.started_at, sweep.created_at]
    return max(m for m in moments if m is not None)


def _stall_for(sweep: Sweep, stall_seconds: int | None) -> timedelta:
    """The silence after which `sweep` counts as stalled: doubled after each reconcile (at most 32x).

    A sweep waiting behind other work in the queue is silent too; the backoff keeps re-sending its
    chunks from piling up copies in the queue (each copy would do nothing, but costs a delivery).
    """
    base = settings.TRIBUNAL_SWEEP_STALL_SECONDS if stall_seconds is None else stall_seconds
    reconciled = int((sweep.params or {}).get("reconciled") or 0)
    return timedelta(seconds=base * 2 ** min(reconciled, 5))


def sweeps_stalled(*, now=None, stall_seconds: int | None = None) -> list[int]:
    """Ids of sweeps planned or running with no verdict and no chunk heartbeat for their stall time."""
    now = now or timezone.now()
    base = timedelta(seconds=settings.TRIBUNAL_SWEEP_STALL_SECONDS if stall_seconds is None else stall_seconds)
    candidates = Sweep.objects.filter(
        kind=Sweep.Kind.SWEEP, status__in=(Sweep.Status.PENDING, Sweep.Status.RUNNING), created_at__lte=now - base
    ).filter(Q(progress_at__isnull=True) | Q(progress_at__lte=now - base))
    return [
        sweep.pk
        for sweep in candidates.order_by("id")
        if now - _last_sign_of_life(sweep) >= _stall_for(sweep, stall_seconds)
    ]


@dataclass
class ReconcilePlan:
    chunks: list[tuple[int, list[int]]] = field(default_factory=list)
    redispatch: bool = False
    finalize: bool = False


def sweep_unfinished_chunks(*, sweep: Sweep) -> list[tuple[int, list[int]]]:
    """The chunks of `sweep` that still miss a verdict (run 0, or an owed variance run)."""
    sampled = {level: set(ids) for level, ids in sweep.params.get("variance_sample", {}).items()}
    written: dict[tuple[int, int], dict[int, bool]] = defaultdict(dict)
    rows = Verdict.objects.filter(sweep=sweep).values_list(
        "judge_version_id", "turn_id", "conversation_id", "run_index", "tier", "call_id"
    )
    levels = {int(jv_id): info["level"] for jv_id, info in sweep.params.get("plan", {}).items()}
    for jv_id, turn_id, conversation_id, run_index, tier, call_id in rows:
        level = levels.get(jv_id, Judge.Level.TURN)
        if level == Judge.Level.CONVERSATION and turn_id is not None:
            continue
        target = conversation_id if level == Judge.Level.CONVERSATION else turn_id
        # Run 0 escalated with a call owes the extra runs; a signature or call-less verdict does not.
        written[(jv_id, target)][run_index] = tier == Verdict.Tier.LLM and call_id is not None
    unfinished = []
    for jv_id, target_ids in sweep_chunks(sweep=sweep):
        level = levels.get(jv_id, Judge.Level.TURN)
        for target_id in target_ids:
            runs = written.get((jv_id, target_id), {})
            if 0 not in runs:
                break
            if runs[0] and target_id in sampled.get(level, ()) and len(runs) < sweep.repeats:
                break
        else:
            continue
        unfinished.append((jv_id, target_ids))
    return unfinished


def sweep_reconcile(*, sweep_id: int, stall_seconds: int | None = None) -> ReconcilePlan:
    """What to re-send for a stalled sweep; marks it so the next check waits another stall period.

    Serialised on the sweep row and re-checked under the lock, so two reconciles never both re-send.
    """
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        now = timezone.now()
        if sweep.status not in (Sweep.Status.PENDING, Sweep.Status.RUNNING):
            return ReconcilePlan()
        if now - _last_sign_of_life(sweep) < _stall_for(sweep, stall_seconds):
            return ReconcilePlan()
        plan = ReconcilePlan()
        if not sweep.params.get("dispatched"):
            plan.redispatch = True
        else:
            plan.chunks = sweep_unfinished_chunks(sweep=sweep)
            plan.finalize = not plan.chunks
        sweep.progress_at = now
        sweep.params = {
            **sweep.params,
            "reconciled": int(sweep.params.get("reconciled") or 0) + 1,
            "resent_chunks": int(sweep.params.get("resent_chunks") or 0) + len(plan.chunks),
        }
        sweep.save(update_fields=["progress_at", "params"])
    return plan

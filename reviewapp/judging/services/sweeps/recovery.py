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
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.db import connection, transaction
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


# Targets whose verdicts one statement reads when unfinished chunks are looked for (a group of a
# judge version's consecutive chunks): memory holds one group's, whatever the sweep's size.
UNFINISHED_GROUP = 8192


def sweep_unfinished_chunks(*, sweep: Sweep) -> list[tuple[int, list[int]]]:
    """The chunks of `sweep` that still miss a verdict (run 0, or an owed variance run).

    Read a group of a judge version's chunks at a time (UNFINISHED_GROUP targets): the targets of the
    group that have their run-0 verdict, then every run of those sampled for variance. With every
    verdict of the sweep read into one map at once, a sweep of 989,692 verdicts took the process to
    712 MiB; read a group at a time, 173 MiB, in less time (the reconcile holds the sweep's row)."""
    sampled = {level: set(ids) for level, ids in sweep.params.get("variance_sample", {}).items()}
    levels = {int(jv_id): info["level"] for jv_id, info in sweep.params.get("plan", {}).items()}
    limit = connection.features.max_query_params  # SQLite's reads take the targets as parameters
    size = UNFINISHED_GROUP if limit is None else min(UNFINISHED_GROUP, limit - 16)
    unfinished: list[tuple[int, list[int]]] = []
    group: list[tuple[int, list[int]]] = []
    count = 0
    for jv_id, target_ids in sweep_chunks(sweep=sweep):
        if group and (group[0][0] != jv_id or count + len(target_ids) > size):
            unfinished += _unfinished_in(sweep, group, levels, sampled)
            group, count = [], 0
        group.append((jv_id, target_ids))
        count += len(target_ids)
    if group:
        unfinished += _unfinished_in(sweep, group, levels, sampled)
    return unfinished


def _unfinished_in(
    sweep: Sweep, group: list[tuple[int, list[int]]], levels: dict[int, str], sampled: dict[str, set[int]]
) -> list[tuple[int, list[int]]]:
    """The unfinished chunks of `group` (consecutive chunks of one judge version), in its order."""
    jv_id = group[0][0]
    level = levels.get(jv_id, Judge.Level.TURN)
    conversation_level = level == Judge.Level.CONVERSATION
    targets = [target_id for _, target_ids in group for target_id in target_ids]
    with_run0 = {row[0] for row in _verdict_rows(sweep, jv_id, conversation_level, targets, run0=True)}
    # Run 0 escalated with a call owes the extra runs; a signature or call-less verdict does not.
    level_sample = sampled.get(level, set())
    runs: dict[int, int] = defaultdict(int)
    owing: set[int] = set()
    sampled_here = [target_id for target_id in targets if target_id in level_sample and target_id in with_run0]
    if sampled_here and sweep.repeats > 1:
        for target_id, run_index, tier, call_id in _verdict_rows(sweep, jv_id, conversation_level, sampled_here):
            runs[target_id] += 1
            if run_index == 0 and tier == Verdict.Tier.LLM and call_id is not None:
                owing.add(target_id)
    return [
        (jv_id, target_ids)
        for _, target_ids in group
        if any(
            target_id not in with_run0 or (target_id in owing and runs[target_id] < sweep.repeats)
            for target_id in target_ids
        )
    ]


def _verdict_rows(
    sweep: Sweep, jv_id: int, conversation_level: bool, targets: list[int], *, run0: bool = False
) -> list[tuple[Any, ...]]:
    """(target, run index, tier, call id) of the verdicts of one judge version of `sweep` on `targets`
    (conversations for a conversation judge, whose own verdicts name no turn; turns otherwise), of run 0
    only with `run0`.

    On PostgreSQL, targets in ascending order (a sweep's usual plan) are read as the range they span,
    one walk of the verdicts' unique index, and the rows of other targets in that range left out here;
    others go as one array. At 989,692 verdicts: 3.0 s by ranges, 4.4 s by arrays, 28.7 s by IN lists
    of 8,192 values, which PostgreSQL plans value by value."""
    key = "conversation_id" if conversation_level else "turn_id"
    if connection.vendor != "postgresql":
        verdicts = Verdict.objects.filter(sweep=sweep, judge_version_id=jv_id, **{f"{key}__in": targets})
        if conversation_level:
            verdicts = verdicts.filter(turn__isnull=True)
        if run0:
            verdicts = verdicts.filter(run_index=0)
        return list(verdicts.values_list(key, "run_index", "tier", "call_id"))
    ascending = all(before < after for before, after in pairwise(targets))
    # The table and column names are the model's; every value is a parameter.
    sql = (
        f"SELECT {key}, run_index, tier, call_id FROM {Verdict._meta.db_table}"  # noqa: S608
        f" WHERE sweep_id = %s AND judge_version_id = %s"
        + (f" AND {key} BETWEEN %s AND %s" if ascending else f" AND {key} = ANY(%s)")
        + (" AND turn_id IS NULL" if conversation_level else "")
        + (" AND run_index = 0" if run0 else "")
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [sweep.pk, jv_id, *((targets[0], targets[-1]) if ascending else (targets,))])
        rows = cursor.fetchall()
    if not ascending:
        return rows
    wanted = set(targets)
    return [row for row in rows if row[0] in wanted]


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

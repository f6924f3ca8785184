"""Finishing a sweep: counters recomputed from the Verdict table, then triage once it is complete."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from reviewapp import planner_statistics
from reviewapp.judging.services.sweeps.verdicts import verdict_key_field
from reviewapp.models import Judge, Sweep, Verdict


@dataclass(frozen=True)
class SweepCounts:
    targets: int
    run0_written: int
    expected_verdicts: int
    verdicts_written: int
    tier1_resolved: int
    escalated: int
    unresolved: int
    failed: int

    @property
    def complete(self) -> bool:
        return self.run0_written >= self.targets and self.verdicts_written >= self.expected_verdicts


def sweep_counts(*, sweep: Sweep) -> SweepCounts:
    """Counters recomputed from the Verdict table (never incremented, so re-runs cannot double-count)."""
    verdicts = Verdict.objects.filter(sweep=sweep)
    run0 = verdicts.filter(run_index=0).aggregate(
        written=Count("id"),
        tier1=Count("id", filter=Q(tier=Verdict.Tier.SIGNATURE)),
        escalated=Count("id", filter=Q(tier=Verdict.Tier.LLM)),
        unresolved=Count("id", filter=Q(status=Verdict.Status.UNRESOLVED)),
        failed=Count("id", filter=Q(status=Verdict.Status.ERROR)),
    )
    written = verdicts.count()
    expected = sweep.total_targets
    if sweep.repeats > 1:
        extra_runs = sweep.repeats - 1
        sample = sweep.params.get("variance_sample", {})
        plan = sweep.params.get("plan", {})
        for jv_id, info in plan.items():
            sampled = sample.get(info["level"], [])
            if not sampled:
                continue
            key = verdict_key_field(info["level"])
            rows = Verdict.objects.filter(
                sweep=sweep, judge_version_id=int(jv_id), run_index=0, **{f"{key}__in": sampled}
            )
            if info["level"] == Judge.Level.CONVERSATION:
                rows = rows.filter(turn__isnull=True)
            # Extra runs are owed by every sampled target that went to the LLM, and by those not yet scored.
            without_llm_call = rows.filter(Q(tier=Verdict.Tier.SIGNATURE) | Q(call__isnull=True)).count()
            owed = info.get("sampled", len(sampled))  # the sampled targets this version scores (its scope)
            expected += extra_runs * (owed - without_llm_call)
    return SweepCounts(
        targets=sweep.total_targets,
        run0_written=run0["written"],
        expected_verdicts=expected,
        verdicts_written=written,
        tier1_resolved=run0["tier1"],
        escalated=run0["escalated"],
        unresolved=run0["unresolved"],
        failed=run0["failed"],
    )


COUNTERS = ("verdicts_written", "tier1_resolved", "escalated", "unresolved", "failed")


def _counters_set(sweep: Sweep, counts: SweepCounts) -> SweepCounts:
    for name in COUNTERS:
        setattr(sweep, name, getattr(counts, name))
    return counts


def sweep_counters_recount(*, sweep_id: int) -> Sweep:
    """After verdicts were written: the sweep's counters set from the Verdict table, its row locked
    first (a writer that has not committed yet adds its own rows when it does, and one that has is in
    the count), and its `progress_at` moved to now, as verdicts.write_verdicts does on its other path."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        _counters_set(sweep, sweep_counts(sweep=sweep))
        sweep.progress_at = timezone.now()
        sweep.save(update_fields=[*COUNTERS, "progress_at"])
    return sweep


def sweep_finalize(*, sweep_id: int, triage: bool = True, recount: bool = True) -> Sweep:
    """Recompute the counters; when every expected (target, run) has a verdict, close the sweep and triage it.

    Serialised on the sweep row, so two chunks finishing together close it once: the sweep returned
    says whether this call closed it (`closed`), so its caller acts on the close once.

    `recount=False` (a chunk's end): the counters kept on write (verdicts.write_verdicts) say whether
    every target has its run-0 verdict yet; until they do, nothing is counted. Counting reads every
    verdict of the sweep (0.2 s at a million), which each of a large sweep's thousands of chunks did
    while holding the sweep's row. The close itself always recounts, so counters that drifted never
    close a sweep early; counters short of the truth leave the close to the reconcile task's recount.
    """
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        if not recount and (
            sweep.status not in (Sweep.Status.PENDING, Sweep.Status.RUNNING)
            # A sweep's run-0 verdicts are signature or LLM ones (sweep_counts' run0_written).
            or sweep.tier1_resolved + sweep.escalated < sweep.total_targets
        ):
            sweep.closed = False
            return sweep
        counts = _counters_set(sweep, sweep_counts(sweep=sweep))
        sweep.params = {**sweep.params, "expected_verdicts": counts.expected_verdicts}
        fields = [*COUNTERS, "params"]
        if counts.complete and sweep.status in (Sweep.Status.PENDING, Sweep.Status.RUNNING):
            if triage:
                from reviewapp.triage.services.triage import triage_run

                summary = triage_run(sweep=sweep)
                sweep.params = {**sweep.params, "triage": summary.as_dict()}
            sweep.status = Sweep.Status.DONE
            planner_statistics.refresh_after_commit(Verdict)  # a sweep's verdicts are a bulk write
            sweep.finished_at = timezone.now()
            sweep.started_at = sweep.started_at or sweep.finished_at
            fields += ["status", "finished_at", "started_at"]
        sweep.save(update_fields=fields)
    sweep.closed = "status" in fields
    return sweep


def sweep_fail(*, sweep_id: int, error: str) -> None:
    Sweep.objects.filter(pk=sweep_id).exclude(status=Sweep.Status.DONE).update(
        status=Sweep.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )

"""Running one chunk: tier-1 signatures first, then the LLM tier (llm_tier.py) for what is left."""

from __future__ import annotations

from collections.abc import Sequence

from reviewapp.judging.services import judges, signature_checks
from reviewapp.judging.services.sweeps import llm_tier
from reviewapp.judging.services.sweeps.plan import target_level
from reviewapp.judging.services.sweeps.recovery import sweep_heartbeat
from reviewapp.judging.services.sweeps.verdicts import (
    ChunkOutcome,
    existing_verdicts,
    load_targets,
    new_verdict,
    write_verdicts,
)
from reviewapp.models import JudgeVersion, Sweep, Verdict
from scoring import signatures as signature_engine

LLM_OFF_EXPLANATION = "LLM tier is off (OPENAI_BASE_URL / OPENAI_API_KEY unset): escalated without an answer."


def _configured_client():
    """The LLM client from settings: looked up on the package, the one seam callers and tests replace."""
    from reviewapp.judging.services import sweeps

    return sweeps.llm_client()


def sweep_chunk_run(
    *, sweep_id: int, judge_version_id: int, target_ids: Sequence[int], client=None, threads: int | None = None
) -> ChunkOutcome:
    """Score one chunk of targets with one judge version: tier 1, then the LLM for what is left.

    Writes only the (target, run) keys that have no verdict yet. `client` defaults to the one from
    settings (None: LLM tier off).
    """
    outcome = ChunkOutcome()
    sweep = Sweep.objects.select_related("dataset").get(pk=sweep_id)
    if sweep.status in (Sweep.Status.CANCELLED, Sweep.Status.FAILED):
        return outcome
    sweep_heartbeat(sweep_id=sweep_id)
    jv = JudgeVersion.objects.select_related("judge").get(pk=judge_version_id)
    spec = judges.runnable_spec(jv)
    level = target_level(jv)
    targets = load_targets(level, target_ids)
    existing = existing_verdicts(sweep, jv, level, list(targets))
    sampled = set(sweep.params.get("variance_sample", {}).get(level, []))
    repeats = max(1, sweep.repeats)

    # Tier 1: signatures, run 0 only, turn-level text only.
    buffer: list[Verdict] = []
    rules_cache: dict[str, list] = {}
    llm_runs: dict[int, list[int]] = {}
    for target_id in sorted(targets):
        target = targets[target_id]
        done = existing.get(target_id, {})
        run0 = done.get(0)
        if run0 is None and target.turn is not None:
            if target.language not in rules_cache:
                rules_cache[target.language] = signature_checks.rules_for_sweep(
                    sweep=sweep, judge=jv.judge, language=target.language
                )
            match = signature_engine.evaluate(rules_cache[target.language], target.turn.text, target.language)
            if match is not None:
                rule = match.rule
                buffer.append(
                    new_verdict(
                        sweep,
                        jv,
                        target,
                        0,
                        tier=Verdict.Tier.SIGNATURE,
                        status=Verdict.Status.RESOLVED,
                        rating=rule.rating,
                        label=(rule.label or "")[:100],
                        passed=rule.passed,
                        explanation=f"Signature {rule.intent!r} matched: {match.matched_text!r}",
                        signature_id=rule.id,
                    )
                )
                outcome.signature_verdicts += 1
                continue
        if run0 is not None and run0[0] == Verdict.Tier.SIGNATURE:
            outcome.skipped += 1
            continue
        if run0 is not None and run0[0] == Verdict.Tier.LLM and not run0[1]:
            outcome.skipped += 1  # escalated without a call (LLM off or unrenderable): no extra runs
            continue
        runs = [0] + (list(range(1, repeats)) if target_id in sampled else [])
        missing = [r for r in runs if r not in done]
        outcome.skipped += len(runs) - len(missing)
        if missing:
            llm_runs[target_id] = missing
    write_verdicts(buffer)

    if not llm_runs:
        return outcome
    if client is None:
        client = _configured_client()
    if client is None:
        for target_id, runs in llm_runs.items():
            if 0 in runs:
                buffer.append(
                    new_verdict(
                        sweep,
                        jv,
                        targets[target_id],
                        0,
                        tier=Verdict.Tier.LLM,
                        status=Verdict.Status.UNRESOLVED,
                        explanation=LLM_OFF_EXPLANATION,
                    )
                )
        outcome.llm_verdicts += write_verdicts(buffer)
        return outcome

    outcome_llm = llm_tier.llm_tier_run(
        sweep=sweep,
        jv=jv,
        spec=spec,
        targets=targets,
        llm_runs=llm_runs,
        client=client,
        threads=threads or llm_tier.LLM_THREADS,
    )
    outcome.llm_verdicts += outcome_llm.llm_verdicts
    outcome.llm_calls += outcome_llm.llm_calls
    outcome.errors.extend(outcome_llm.errors)
    return outcome

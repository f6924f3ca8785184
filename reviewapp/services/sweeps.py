"""Sweeps: score a dataset with judge versions, signatures first, the LLM only where needed.

A sweep is planned once (`sweep_start`), cut into chunks of targets that Celery workers run
(`sweep_chunk_run`), and closed by `sweep_finalize`, which recomputes every counter from the
Verdict table. Every step is safe to run twice: a verdict is keyed by (sweep, judge version,
target, run index) and written with conflict-ignoring inserts, and a chunk skips the keys that
already have a verdict, so a redelivered task never calls the LLM again for them.

Counters on Sweep are per (target, judge version) on run 0 - tier1_resolved, escalated,
unresolved, failed - plus verdicts_written over every run.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from reviewapp.access import language_match_q
from reviewapp.models import (
    Conversation,
    Dataset,
    Judge,
    JudgeCall,
    JudgeVersion,
    Sweep,
    SweepChunkLease,
    Turn,
    Verdict,
)
from reviewapp.services import calls as calls_service
from reviewapp.services import judge_audio, judge_inputs, judges, signature_checks
from reviewapp.services import sweep_scope as scopes
from reviewapp.services.rubrics import variance_check_params
from reviewapp.versioning import code_version
from scoring import eva
from scoring import signatures as signature_engine
from scoring.audio import AudioClip
from scoring.llm import CHAT_PARAMS
from scoring.parsing import JudgeResult, parse_answer
from scoring.specs import JudgeSpec, MissingVariable, render

log = logging.getLogger(__name__)

CHUNK_SIZE = settings.TRIBUNAL_SWEEP_CHUNK_SIZE
# Concurrent LLM calls per worker process (one pool, shared by the chunk tasks the process runs).
# The calls wait on the network, so threads are cheap; the database work stays on the task's own
# thread.
LLM_THREADS = settings.TRIBUNAL_SWEEP_LLM_THREADS
# Answers are archived and their verdicts written in batches of this many (or every second).
VERDICT_FLUSH_EVERY = 32
MAX_REPEATS = 10
HEARTBEAT_SECONDS = settings.TRIBUNAL_SWEEP_HEARTBEAT_SECONDS
LLM_OFF_EXPLANATION = "LLM tier is off (OPENAI_BASE_URL / OPENAI_API_KEY unset): escalated without an answer."


class SweepError(ValueError):
    """A sweep that cannot be started or continued as asked."""


@dataclass
class ChunkOutcome:
    signature_verdicts: int = 0
    llm_verdicts: int = 0
    skipped: int = 0
    llm_calls: int = 0
    errors: list[str] = field(default_factory=list)


# --- planning ------------------------------------------------------------------------------------


def _language_filter(language: str, field_name: str) -> Q:
    """`fr` covers `fr` and its regional variants (`fr-CA`), as for reviewers."""
    return language_match_q(language, field_name) if language else Q()


def level_of(judge_version: JudgeVersion) -> str:
    return judge_version.spec.get("level") or judge_version.judge.level or Judge.Level.TURN


def target_ids_for(*, dataset: Dataset, level: str, language: str = "", role: str = Turn.Role.AGENT) -> list[int]:
    """Agent turns (or `role` turns) for turn-level judges, conversations for conversation-level ones, in a stable order."""
    if level == Judge.Level.CONVERSATION:
        qs = Conversation.objects.filter(dataset=dataset).filter(_language_filter(language, "language"))
        return list(qs.order_by("id").values_list("id", flat=True))
    qs = Turn.objects.filter(conversation__dataset=dataset, role=role).filter(
        _language_filter(language, "conversation__language")
    )
    return list(qs.order_by("id").values_list("id", flat=True))


def eva_profile_of(judge_version: JudgeVersion) -> eva.EvaProfile | None:
    key = (judge_version.spec or {}).get("eva_profile")
    return eva.profile_for(key) if key else None


def target_role_of(judge_version: JudgeVersion) -> str:
    """The role of the turns a turn-level judge rates: agent turns, or user turns for EVA's user-side judges."""
    profile = eva_profile_of(judge_version)
    return Turn.Role.USER if profile is not None and profile.rated_role == eva.USER else Turn.Role.AGENT


def targets_of(*, sweep: Sweep, judge_version: JudgeVersion) -> list[int]:
    """The targets one judge version of a sweep scores: its level and role, the sweep's language and scope.

    A scoped sweep keeps the targets it planned (comments and verdicts change while it runs)."""
    planned = (sweep.params.get("scope_targets") or {}).get(str(judge_version.pk))
    if planned is not None:
        return list(planned)
    level = level_of(judge_version)
    ids = target_ids_for(
        dataset=sweep.dataset, level=level, language=sweep.language, role=target_role_of(judge_version)
    )
    scope = scopes.scope_from_params(sweep.params.get("scope"))
    return scopes.scope_targets(scope=scope, judge=judge_version.judge, level=level, target_ids=ids)


def eva_render_problems(*, judge_version: JudgeVersion, conversation_ids: Sequence[int], extra: dict | None) -> str:
    """Why an EVA judge cannot be rendered for these conversations ("" when it can): named before any call."""
    spec = judges.spec_of(judge_version)
    missing: dict[str, list[str]] = defaultdict(list)
    conversations = Conversation.objects.filter(pk__in=conversation_ids).order_by("id")
    turns = _conversation_turns(conversation_ids)
    total = 0
    for conversation in conversations:
        total += 1
        record = judge_inputs.eva_record(conversation, turns.get(conversation.pk, []), extra=extra)
        for name in judge_inputs.eva_variables(spec, record)[1]:
            missing[name].append(conversation.external_id)
    if not missing:
        return ""
    parts = []
    for name, ids in missing.items():
        where = "every record" if len(ids) == total else f"{len(ids)} of {total} records, e.g. {', '.join(ids[:3])}"
        parts.append(f"{name} (missing in {where})")
    return (
        f"{judge_version} needs template variables the records cannot provide: {'; '.join(parts)}. EVA takes them"
        " from the agent config and the dataset: pass the agent config (sweep --eva-agent), EVA's dataset file"
        " (--eva-dataset), or import records that carry them."
    )


def variance_sample_pick(*, sweep_id: int, target_ids: Sequence[int], rate: float) -> list[int]:
    """The targets that get extra runs: a random sample seeded by the sweep id (same sample on re-runs)."""
    if rate <= 0 or not target_ids:
        return []
    size = min(len(target_ids), max(1, round(rate * len(target_ids))))
    return sorted(random.Random(f"variance:{sweep_id}").sample(sorted(target_ids), size))


@transaction.atomic
def sweep_start(
    *,
    dataset: Dataset,
    judge_versions: Sequence[JudgeVersion],
    repeats: int = 1,
    variance_sample: float = 0.1,
    qa_sample: float = 0.05,
    language: str | None = None,
    user=None,
    name: str = "",
    dispatch: bool = True,
    scope: scopes.Scope = scopes.ALL,
    variables: dict[str, str] | None = None,
) -> Sweep:
    """Plan a sweep and queue it; the work starts when this transaction commits.

    `dispatch=False` plans without queueing (the caller runs tasks.sweeps.sweep_dispatch itself).
    `scope` narrows the targets (commented, gold, moved); `variables` are extra template values
    (EVA's agent config) for judges whose records cannot provide them.
    """
    judge_versions = list(dict.fromkeys(judge_versions))
    if not judge_versions:
        raise SweepError("A sweep needs at least one judge version.")
    if not 1 <= repeats <= MAX_REPEATS:
        raise SweepError(f"repeats must be between 1 and {MAX_REPEATS}, not {repeats}.")
    if not 0 <= variance_sample <= 1:
        raise SweepError(f"The variance sample is a rate between 0 and 1, not {variance_sample}.")
    if not 0 <= qa_sample <= 1:
        raise SweepError(f"The QA sample is a rate between 0 and 1, not {qa_sample}.")
    language = (language or "").strip()
    for jv in judge_versions:
        try:
            judges.runnable_spec(jv)
        except judges.JudgeNotRunnable as exc:
            raise SweepError(str(exc)) from exc

    sweep = Sweep.objects.create(
        kind=Sweep.Kind.SWEEP,
        name=name or f"{dataset.name}: {', '.join(str(jv) for jv in judge_versions)}"[:200],
        dataset=dataset,
        language=language,
        repeats=repeats,
        variance_sample_rate=variance_sample,
        qa_sample_rate=qa_sample,
        status=Sweep.Status.PENDING,
        code_version=code_version(),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    sweep.judge_versions.set(judge_versions)
    sweep.params = {"scope": scope.as_dict()} if scope.kind != "all" else {}
    if variables:
        sweep.params["variables"] = dict(variables)

    targets_by_version: dict[str, list[int]] = {}
    plan: dict[str, dict[str, Any]] = {}
    total = 0
    try:
        for jv in judge_versions:
            level = level_of(jv)
            ids = targets_of(sweep=sweep, judge_version=jv)
            targets_by_version[str(jv.pk)] = ids
            plan[str(jv.pk)] = {"level": level, "targets": len(ids)}
            total += len(ids)
            if ids and eva_profile_of(jv) is not None:
                conversation_ids = (
                    ids
                    if level == Judge.Level.CONVERSATION
                    else sorted(set(Turn.objects.filter(pk__in=ids).values_list("conversation_id", flat=True)))
                )
                problem = eva_render_problems(judge_version=jv, conversation_ids=conversation_ids, extra=variables)
                if problem:
                    raise SweepError(problem)
    except scopes.ScopeError as exc:
        raise SweepError(str(exc)) from exc
    if total == 0:
        where = f" in {language}" if language else ""
        within = f" within scope {scope.label}" if scope.kind != "all" else ""
        raise SweepError(f"Dataset {dataset.name!r} has no target for these judges{where}{within}.")

    rate = variance_sample if repeats > 1 else 0.0
    targets_by_level: dict[str, set[int]] = defaultdict(set)
    for jv_id, ids in targets_by_version.items():
        targets_by_level[plan[jv_id]["level"]].update(ids)
    samples = {
        level: variance_sample_pick(sweep_id=sweep.pk, target_ids=sorted(ids), rate=rate)
        for level, ids in targets_by_level.items()
    }
    for jv_id, ids in targets_by_version.items():
        plan[jv_id]["sampled"] = len(set(samples[plan[jv_id]["level"]]) & set(ids))
    sweep.params = {
        **sweep.params,
        "plan": plan,
        "variance_sample": samples,
        "chunk_size": CHUNK_SIZE,
        **variance_check_params(judge_versions),
    }
    if scope.kind != "all":
        sweep.params["scope_targets"] = targets_by_version
    # Tier 1: the signature versions this sweep uses, rechecked on gold first (a suspended one is left out).
    signature_checks.signatures_for_sweep(sweep=sweep, judges=[jv.judge for jv in judge_versions])
    sweep.total_targets = total
    sweep.save(update_fields=["params", "total_targets"])

    if dispatch:
        from reviewapp.tasks.sweeps import sweep_dispatch

        sweep_id = sweep.pk
        transaction.on_commit(lambda: sweep_dispatch.delay(sweep_id))
    return sweep


def sweep_chunks(*, sweep: Sweep) -> list[tuple[int, list[int]]]:
    """The (judge version id, target ids) chunks of a sweep, in a stable order."""
    chunk_size = int(sweep.params.get("chunk_size") or CHUNK_SIZE)
    chunks: list[tuple[int, list[int]]] = []
    for jv in sweep.judge_versions.select_related("judge").order_by("id"):
        ids = targets_of(sweep=sweep, judge_version=jv)
        profile = eva_profile_of(jv)
        if profile is not None and profile.per_turn:
            chunks.extend((jv.pk, chunk) for chunk in _conversation_chunks(ids, chunk_size))
            continue
        chunks.extend((jv.pk, ids[i : i + chunk_size]) for i in range(0, len(ids), chunk_size))
    return chunks


def _conversation_chunks(turn_ids: list[int], chunk_size: int) -> list[list[int]]:
    """Turn chunks that never split a conversation: a per-turn EVA judge makes one call per conversation."""
    conversation_of = dict(Turn.objects.filter(pk__in=turn_ids).values_list("id", "conversation_id"))
    chunks: list[list[int]] = []
    current: list[int] = []
    for _conversation_id, group in groupby(
        sorted(turn_ids, key=lambda t: (conversation_of[t], t)), key=conversation_of.get
    ):
        ids = list(group)
        if current and len(current) + len(ids) > chunk_size:
            chunks.append(current)
            current = []
        current.extend(ids)
    if current:
        chunks.append(current)
    return chunks


def sweep_mark_running(*, sweep_id: int) -> bool:
    """Pending -> running; False when the sweep was already started (a redelivered dispatch)."""
    updated = Sweep.objects.filter(pk=sweep_id, status=Sweep.Status.PENDING).update(
        status=Sweep.Status.RUNNING, started_at=timezone.now()
    )
    return bool(updated)


def sweep_mark_dispatched(*, sweep_id: int, chunks: int) -> None:
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        sweep.params = {**sweep.params, "dispatched": True, "chunks": chunks}
        sweep.save(update_fields=["params"])


def sweep_cancel(*, sweep: Sweep) -> Sweep:
    if sweep.status in (Sweep.Status.DONE, Sweep.Status.CANCELLED):
        raise SweepError(f"Sweep {sweep.pk} is already {sweep.status}.")
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.CANCELLED, finished_at=timezone.now())
    sweep.refresh_from_db()
    return sweep


# --- running a chunk -----------------------------------------------------------------------------


@dataclass
class _Target:
    conversation: Conversation
    turn: Turn | None

    @property
    def id(self) -> int:
        return self.turn.pk if self.turn is not None else self.conversation.pk

    @property
    def language(self) -> str:
        return self.conversation.language


@dataclass
class _Group:
    """The target turns of one conversation that a per-turn EVA judge rates in a single call."""

    conversation: Conversation
    members: list[_Target]
    turn_ids: list[int]  # every EVA turn id the conversation has
    eva_turn_of: dict[int, int]  # Tribunal turn id -> EVA turn id
    expected: set[int] = field(default_factory=set)  # the turn ids EVA's metric asks the judge to rate
    turn: None = None

    @property
    def id(self) -> int:
        return self.conversation.pk

    @property
    def language(self) -> str:
        return self.conversation.language


def _load_targets(level: str, target_ids: Sequence[int]) -> dict[int, _Target]:
    if level == Judge.Level.CONVERSATION:
        conversations = Conversation.objects.filter(pk__in=target_ids)
        return {c.pk: _Target(conversation=c, turn=None) for c in conversations}
    turns = Turn.objects.filter(pk__in=target_ids).select_related("conversation")
    return {t.pk: _Target(conversation=t.conversation, turn=t) for t in turns}


def _conversation_turns(conversation_ids: Iterable[int]) -> dict[int, list[Turn]]:
    grouped: dict[int, list[Turn]] = defaultdict(list)
    for turn in Turn.objects.filter(conversation_id__in=set(conversation_ids)).order_by("conversation_id", "position"):
        grouped[turn.conversation_id].append(turn)
    return grouped


def _verdict_key_field(level: str) -> str:
    return "conversation_id" if level == Judge.Level.CONVERSATION else "turn_id"


def _existing_verdicts(sweep: Sweep, jv: JudgeVersion, level: str, target_ids: Sequence[int]) -> dict[int, dict]:
    """target id -> {run index: (tier, has call)} for the verdicts already written."""
    key = _verdict_key_field(level)
    qs = Verdict.objects.filter(sweep=sweep, judge_version=jv, **{f"{key}__in": target_ids})
    if level == Judge.Level.CONVERSATION:
        qs = qs.filter(turn__isnull=True)
    existing: dict[int, dict] = defaultdict(dict)
    for target_id, run_index, tier, call_id in qs.values_list(key, "run_index", "tier", "call_id"):
        existing[target_id][run_index] = (tier, call_id is not None)
    return existing


def _new_verdict(sweep: Sweep, jv: JudgeVersion, target: _Target, run_index: int, **fields) -> Verdict:
    return Verdict(
        sweep=sweep,
        judge_version=jv,
        conversation_id=target.conversation.pk,
        turn=target.turn,
        run_index=run_index,
        **fields,
    )


def _write(verdicts: list[Verdict]) -> int:
    if not verdicts:
        return 0
    Verdict.objects.bulk_create(verdicts, ignore_conflicts=True)
    count = len(verdicts)
    verdicts.clear()
    return count


def verdict_fields_from_result(result: JudgeResult, raw_text: str) -> dict[str, Any]:
    """Verdict fields for a parsed LLM answer; an unresolved answer keeps its raw text and says why.

    The answer itself is in the archived call: a long raw text or explanation is kept here only as a
    marked excerpt (calls.verdict_raw_text), so a 5 MB answer is not stored twice.
    """
    raw_text = calls_service.verdict_raw_text(raw_text, archived=True)
    if result.status == "resolved":
        return {
            "status": Verdict.Status.RESOLVED,
            "rating": result.rating,
            "label": (result.label or "")[:100],
            "passed": result.passed,
            "flags": list(result.flags),
            "sub_scores": dict(result.sub_scores),
            "explanation": calls_service.verdict_raw_text(result.explanation, archived=True),
            "raw_text": raw_text,
            "problem_code": "",
        }
    return {
        "status": Verdict.Status.UNRESOLVED,
        "rating": None,
        "label": "",
        "passed": None,
        "flags": list(result.flags),
        "sub_scores": {},
        "explanation": result.problem or "unresolved",
        "raw_text": raw_text,
        "problem_code": result.problem_code or "invalid",
    }


def llm_client():
    """The configured LLM client, or None when the LLM tier is off."""
    return calls_service.llm_client_from_settings()


def _variables(
    spec: JudgeSpec, target: _Target, turns_by_conversation: dict[int, list[Turn]], extra: dict | None = None
) -> dict[str, Any]:
    turns = turns_by_conversation.get(target.conversation.pk, [])
    if spec.eva_profile:
        record = judge_inputs.eva_record(target.conversation, turns, extra=extra)
        values, missing = judge_inputs.eva_variables(spec, record)
        if missing:
            raise MissingVariable(missing[0], judge=spec.key, template="user", available=tuple(sorted(values)))
        return values
    if target.turn is None:
        return judge_inputs.variables_for_conversation(target.conversation, turns)
    return judge_inputs.variables_for_turn(target.turn, context_turns=turns)


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
    level = level_of(jv)
    targets = _load_targets(level, target_ids)
    existing = _existing_verdicts(sweep, jv, level, list(targets))
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
                    _new_verdict(
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
    _write(buffer)

    if not llm_runs:
        return outcome
    if client is None:
        client = llm_client()
    if client is None:
        for target_id, runs in llm_runs.items():
            if 0 in runs:
                buffer.append(
                    _new_verdict(
                        sweep,
                        jv,
                        targets[target_id],
                        0,
                        tier=Verdict.Tier.LLM,
                        status=Verdict.Status.UNRESOLVED,
                        explanation=LLM_OFF_EXPLANATION,
                    )
                )
        outcome.llm_verdicts += _write(buffer)
        return outcome

    outcome_llm = _run_llm(
        sweep=sweep,
        jv=jv,
        spec=spec,
        targets=targets,
        llm_runs=llm_runs,
        client=client,
        threads=threads or LLM_THREADS,
    )
    outcome.llm_verdicts += outcome_llm.llm_verdicts
    outcome.llm_calls += outcome_llm.llm_calls
    outcome.errors.extend(outcome_llm.errors)
    return outcome


def _run_llm(
    *,
    sweep: Sweep,
    jv: JudgeVersion,
    spec: JudgeSpec,
    targets: dict[int, _Target],
    llm_runs: dict[int, list[int]],
    client,
    threads: int,
) -> ChunkOutcome:
    outcome = ChunkOutcome()
    turns_by_conversation = _conversation_turns(targets[t].conversation.pk for t in llm_runs)
    model = spec.model or settings.OPENAI_MODEL
    # The client sends only chat parameters and reads Tribunal's own (rate_limit_per_second);
    # the archive keeps what was sent.
    call_params = dict(spec.params or {})
    sent_params = {k: v for k, v in call_params.items() if k in CHAT_PARAMS}
    buffer: list[Verdict] = []
    jobs: list[tuple[Any, int, Any]] = []
    clips: dict[int, AudioClip] = {}
    extra = sweep.params.get("variables") or None
    profile = eva.profile_for(spec.eva_profile) if spec.eva_profile else None
    if profile is not None and profile.per_turn:
        jobs = _group_jobs(sweep, jv, spec, targets, llm_runs, turns_by_conversation, extra, buffer, outcome, clips)
        llm_runs = {}
    for target_id, runs in llm_runs.items():
        target = targets[target_id]
        if spec.needs_audio:
            try:
                clips[target_id] = judge_audio.clip_for(
                    conversation=target.conversation,
                    turn=target.turn,
                    role=spec.audio_role,
                    turns=turns_by_conversation.get(target.conversation.pk, ()),
                )
            except judge_audio.NoAudio as no_audio:
                if 0 in runs:
                    buffer.append(_unsent(sweep, jv, target, Verdict.Status.UNRESOLVED, str(no_audio)))
                continue
        try:
            prompt = render(spec, _variables(spec, target, turns_by_conversation, extra), language=target.language)
        except (MissingVariable, KeyError, ValueError, IndexError) as exc:
            if 0 in runs:
                buffer.append(
                    _unsent(
                        sweep,
                        jv,
                        target,
                        Verdict.Status.ERROR,
                        f"Prompt could not be rendered: {type(exc).__name__}: {exc}",
                    )
                )
            outcome.errors.append(f"render {target_id}: {exc}")
            continue
        jobs.extend((target, run, prompt) for run in runs)
    outcome.llm_verdicts += _write(buffer)

    def call(prompt, clip=None):
        if clip is not None:
            return client.complete(model=model, system=prompt.system, user=prompt.user, params=call_params, audio=clip)
        return client.complete(model=model, system=prompt.system, user=prompt.user, params=call_params)

    answered: list[tuple[_Target, int, Any, Any]] = []
    done: queue.SimpleQueue[Future] = queue.SimpleQueue()
    pool = llm_pool(max(1, threads))
    futures: dict[Future, tuple[_Target, int, Any]] = {}
    for job in jobs:
        future = pool.submit(call, job[2], clips.get(job[0].id))
        futures[future] = job
        future.add_done_callback(done.put)
    remaining = len(futures)
    last_flush = last_beat = time.monotonic()
    try:
        while remaining:
            if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                sweep_heartbeat(sweep_id=sweep.pk)
                last_beat = time.monotonic()
            # Each answer is handed over as it comes (no re-scan of every pending call per answer);
            # the batch is written every VERDICT_FLUSH_EVERY answers or every second.
            try:
                finished = [done.get(timeout=max(0.05, 1.0 - (time.monotonic() - last_flush)))]
            except queue.Empty:
                finished = []
            while True:
                try:
                    finished.append(done.get_nowait())
                except queue.Empty:
                    break
            for future in finished:
                target, run, prompt = futures.pop(future)
                answered.append((target, run, prompt, _reply_of(future, sweep, target)))
                outcome.llm_calls += 1
                remaining -= 1
            if len(answered) >= VERDICT_FLUSH_EVERY or (answered and time.monotonic() - last_flush > 1.0):
                outcome.llm_verdicts += _archive_and_write(sweep, jv, spec, model, sent_params, answered, clips)
                last_flush = time.monotonic()
    finally:
        # On a time limit, keep what is answered; the redelivered chunk does only the rest. Calls
        # not started yet are dropped; those in flight finish in the pool and are not written.
        outcome.llm_verdicts += _archive_and_write(sweep, jv, spec, model, sent_params, answered, clips)
        for future in futures:
            future.cancel()
    return outcome


def _unsent(sweep: Sweep, jv: JudgeVersion, target, status: str, explanation: str) -> Verdict:
    """Run 0's verdict for a target whose call was never sent (no prompt, no audio), with the reason."""
    return _new_verdict(sweep, jv, target, 0, tier=Verdict.Tier.LLM, status=status, explanation=explanation)


def _group_jobs(sweep, jv, spec, targets, llm_runs, turns_by_conversation, extra, buffer, outcome, clips) -> list:
    """One job per (conversation, run) for a per-turn EVA judge: EVA rates every turn in one call.

    A listening judge's call carries the rated speaker's turns cut from the recording and joined (EVA
    sends that speaker's own channel); with no usable audio every turn is unresolved and nothing is sent.
    """
    members: dict[int, list[_Target]] = defaultdict(list)
    for target_id in llm_runs:
        members[targets[target_id].conversation.pk].append(targets[target_id])
    jobs = []
    for conversation_id, group in members.items():
        conversation = group[0].conversation
        record = judge_inputs.eva_record(conversation, turns_by_conversation.get(conversation_id, []), extra=extra)
        eva_turn_of = {e.source_id: e.turn_id for e in record.entries}
        try:
            values, missing = judge_inputs.eva_variables(spec, record)
            if missing:
                raise MissingVariable(missing[0], judge=spec.key, template="user", available=tuple(sorted(values)))
            prompt = render(spec, values, language=conversation.language)
        except (MissingVariable, KeyError, ValueError, IndexError) as exc:
            for target in group:
                if 0 in llm_runs[target.id]:
                    buffer.append(
                        _unsent(
                            sweep,
                            jv,
                            target,
                            Verdict.Status.ERROR,
                            f"Prompt could not be rendered: {type(exc).__name__}: {exc}",
                        )
                    )
            outcome.errors.append(f"render conversation {conversation_id}: {exc}")
            continue
        if spec.needs_audio:
            profile = eva.profile_for(spec.eva_profile)
            role = spec.audio_role or (profile.rated_role if profile is not None and profile.rated_role else "agent")
            try:
                clips[conversation_id] = judge_audio.clip_for(
                    conversation=conversation,
                    turn=None,
                    role=role,
                    turns=turns_by_conversation.get(conversation_id, ()),
                )
            except judge_audio.NoAudio as no_audio:
                buffer.extend(
                    _unsent(sweep, jv, target, Verdict.Status.UNRESOLVED, str(no_audio))
                    for target in group
                    if 0 in llm_runs[target.id]
                )
                continue
        runs = sorted({run for target in group for run in llm_runs[target.id]})
        for run in runs:
            in_run = [t for t in group if run in llm_runs[t.id]]
            unit = _Group(
                conversation=conversation,
                members=in_run,
                turn_ids=record.turn_ids(),
                eva_turn_of=eva_turn_of,
                expected=set(eva.expected_turn_ids(eva.profile_for(spec.eva_profile), record)),
            )
            jobs.append((unit, run, prompt))
    return jobs


_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def llm_pool(threads: int) -> ThreadPoolExecutor:
    """This process's thread pool for LLM calls, made once per size and shared by its chunk tasks.

    Starting a fresh pool (and its dozens of threads) for every chunk cost more CPU than the calls'
    own bookkeeping. Keyed by process id: a prefork worker child never reuses its parent's threads.
    """
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="llm")
    return pool


def _reply_of(future: Future, sweep: Sweep, target: _Target):
    """The LLMReply, or the exception the client raised (it should not; if it does, the verdict says so)."""
    try:
        return future.result()
    except Exception as exc:
        log.exception("LLM call raised for sweep %s target %s", sweep.pk, target.id)
        return exc


def _archive_and_write(sweep, jv, spec, model, sent_params, answered: list, clips: dict | None = None) -> int:
    """Archive a batch of answered calls and write their verdicts: a handful of queries per batch.

    The archive rows are those services.calls.call_archive writes (prompts stored once by hash via
    prompt_texts_store); done in bulk here because one call_archive per verdict (3-4 round trips)
    was what limited a worker's throughput.
    """
    if not answered:
        return 0
    with transaction.atomic():
        texts = [t for _, _, p, r in answered if not isinstance(r, Exception) for t in (p.system, p.user) if t]
        prompts = calls_service.prompt_texts_store(texts=texts)
        calls: list[JudgeCall | None] = []
        for target, _, prompt, reply in answered:
            if isinstance(reply, Exception):
                calls.append(None)
                continue
            clip = (clips or {}).get(target.id)
            calls.append(
                JudgeCall(
                    judge_version=jv,
                    sweep=sweep,
                    system_prompt=prompts.get(prompt.system) if prompt.system else None,
                    user_prompt=prompts[prompt.user],
                    model=model,
                    params=sent_params,
                    **calls_service.received_fields(reply),
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    latency_ms=max(0, reply.latency_ms),
                    attempts=max(1, reply.attempts),
                    error=reply.error,
                    audio=judge_audio.archived_audio(
                        clip, conversation_id=target.conversation.pk, turn_id=target.turn.pk if target.turn else None
                    )
                    if clip is not None
                    else {},
                )
            )
        JudgeCall.objects.bulk_create([c for c in calls if c is not None])
        verdicts = [
            verdict
            for (target, run, _, reply), judge_call in zip(answered, calls, strict=True)
            for verdict in _verdicts_from_reply(sweep, jv, spec, target, run, reply, judge_call)
        ]
        written = _write(verdicts)
    answered.clear()
    return written


def _verdicts_from_reply(sweep, jv, spec, target, run, reply, judge_call) -> list[Verdict]:
    """The verdicts one answered call gives: one, or one per target turn of a per-turn EVA call."""
    if not isinstance(target, _Group):
        return [_verdict_from_reply(sweep, jv, spec, target, run, reply, judge_call)]
    if isinstance(reply, Exception) or reply.error:
        return [_verdict_from_reply(sweep, jv, spec, member, run, reply, judge_call) for member in target.members]
    profile = eva.profile_for(spec.eva_profile)
    assert profile is not None
    rated = [target.eva_turn_of[m.id] for m in target.members if target.eva_turn_of[m.id] in target.expected]
    answers = eva.parse_per_turn(profile, reply.text, turn_ids=target.turn_ids, rated=rated)
    verdicts = []
    for member in target.members:
        eva_turn_id = target.eva_turn_of[member.id]
        if eva_turn_id not in answers:
            # EVA's metric does not send this turn (e.g. a user turn with no transcription to compare).
            fields = verdict_fields_from_result(
                eva.unresolved(f"turn {eva_turn_id}: not rated (EVA's {profile.key} does not rate it)"), reply.text
            )
            fields["status"] = Verdict.Status.NOT_RATED
        else:
            answer = answers[eva_turn_id]
            fields = verdict_fields_from_result(answer.result, reply.text)
            if answer.not_rated:
                fields["status"] = Verdict.Status.NOT_RATED
        verdicts.append(
            _new_verdict(
                sweep,
                jv,
                member,
                run,
                tier=Verdict.Tier.LLM,
                call=judge_call,
                metadata={"eva_turn_id": eva_turn_id},
                **fields,
            )
        )
    return verdicts


def _verdict_from_reply(sweep, jv, spec, target, run, reply, judge_call) -> Verdict:
    if isinstance(reply, Exception):
        return _new_verdict(
            sweep,
            jv,
            target,
            run,
            tier=Verdict.Tier.LLM,
            status=Verdict.Status.ERROR,
            explanation=f"LLM call raised {type(reply).__name__}: {reply}",
        )
    if reply.error:
        return _new_verdict(
            sweep,
            jv,
            target,
            run,
            tier=Verdict.Tier.LLM,
            status=Verdict.Status.ERROR,
            explanation=f"LLM call failed after {reply.attempts} attempt(s): {reply.error}",
            raw_text=calls_service.verdict_raw_text(reply.text or reply.body, archived=judge_call is not None),
            call=judge_call,
        )
    profile = eva.profile_for(spec.eva_profile) if spec.eva_profile else None
    result = eva.parse_conversation(profile, reply.text) if profile is not None else parse_answer(spec, reply.text)
    return _new_verdict(
        sweep, jv, target, run, tier=Verdict.Tier.LLM, call=judge_call, **verdict_fields_from_result(result, reply.text)
    )


# --- finishing -----------------------------------------------------------------------------------


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
            key = _verdict_key_field(info["level"])
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


def sweep_finalize(*, sweep_id: int, triage: bool = True) -> Sweep:
    """Recompute the counters; when every expected (target, run) has a verdict, close the sweep and triage it.

    Serialised on the sweep row, so two chunks finishing together close it once.
    """
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        counts = sweep_counts(sweep=sweep)
        sweep.verdicts_written = counts.verdicts_written
        sweep.tier1_resolved = counts.tier1_resolved
        sweep.escalated = counts.escalated
        sweep.unresolved = counts.unresolved
        sweep.failed = counts.failed
        sweep.params = {**sweep.params, "expected_verdicts": counts.expected_verdicts}
        fields = ["verdicts_written", "tier1_resolved", "escalated", "unresolved", "failed", "params"]
        if counts.complete and sweep.status in (Sweep.Status.PENDING, Sweep.Status.RUNNING):
            if triage:
                from reviewapp.services.triage import triage_run

                summary = triage_run(sweep=sweep)
                sweep.params = {**sweep.params, "triage": summary.as_dict()}
            sweep.status = Sweep.Status.DONE
            sweep.finished_at = timezone.now()
            sweep.started_at = sweep.started_at or sweep.finished_at
            fields += ["status", "finished_at", "started_at"]
        sweep.save(update_fields=fields)
    return sweep


def sweep_fail(*, sweep_id: int, error: str) -> None:
    Sweep.objects.filter(pk=sweep_id).exclude(status=Sweep.Status.DONE).update(
        status=Sweep.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )


def sweep_wait(*, sweep_id: int, timeout_s: float, poll_s: float = 0.5) -> Sweep:
    """Poll until the sweep is done (finalizing on the way), or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        sweep = sweep_finalize(sweep_id=sweep_id)
        if sweep.status != Sweep.Status.RUNNING and sweep.status != Sweep.Status.PENDING:
            return sweep
        if time.monotonic() >= deadline:
            return sweep
        time.sleep(poll_s)


# --- recovery ------------------------------------------------------------------------------------


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
    last_verdict = Verdict.objects.filter(sweep=sweep).order_by("-created_at").values_list("created_at", flat=True)
    moments = [sweep.progress_at, sweep.started_at, sweep.created_at, last_verdict.first()]
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

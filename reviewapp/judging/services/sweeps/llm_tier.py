"""The LLM tier of a chunk: render each prompt, keep many calls in flight, archive and write in batches."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction

from reviewapp import copy_writes, idle_threads
from reviewapp.judging.services import calls as calls_service
from reviewapp.judging.services import judge_audio, judge_inputs
from reviewapp.judging.services.sweeps.recovery import sweep_heartbeat
from reviewapp.judging.services.sweeps.verdicts import (
    ChunkOutcome,
    Group,
    Target,
    conversation_turns,
    unsent_verdict,
    verdicts_from_reply,
    write_verdicts,
)
from reviewapp.models import JudgeCall, JudgeVersion, PromptText, Sweep, Turn, Verdict
from scoring import eva, eva_variables
from scoring.audio import AudioClip
from scoring.llm import CHAT_PARAMS
from scoring.specs import JudgeSpec, MissingVariable, render

log = logging.getLogger(__name__)

# Concurrent LLM calls per worker process (one pool, shared by the chunk tasks the process runs).
# The calls wait on the network, so threads are cheap; the database work stays on the task's own
# thread.
LLM_THREADS = settings.TRIBUNAL_SWEEP_LLM_THREADS
# Answers are archived and their verdicts written in batches of this many (or every second): one
# transaction per batch, so a chunk whose calls come back together commits once or twice.
VERDICT_FLUSH_EVERY = 128
HEARTBEAT_SECONDS = settings.TRIBUNAL_SWEEP_HEARTBEAT_SECONDS


def variables_for(
    spec: JudgeSpec, target: Target, turns_by_conversation: dict[int, list[Turn]], extra: dict | None = None
) -> dict[str, Any]:
    turns = turns_by_conversation.get(target.conversation.pk, [])
    if spec.eva_profile:
        return judge_inputs.eva_prompt_values(spec, judge_inputs.eva_record(target.conversation, turns, extra=extra))
    if target.turn is None:
        return judge_inputs.variables_for_conversation(target.conversation, turns)
    return judge_inputs.variables_for_turn(target.turn, context_turns=turns)


def _unrendered(sweep: Sweep, jv: JudgeVersion, target: Target, exc: Exception) -> Verdict:
    return unsent_verdict(
        sweep, jv, target, Verdict.Status.ERROR, f"Prompt could not be rendered: {type(exc).__name__}: {exc}"
    )


def llm_tier_run(
    *,
    sweep: Sweep,
    jv: JudgeVersion,
    spec: JudgeSpec,
    targets: dict[int, Target],
    llm_runs: dict[int, list[int]],
    client,
    threads: int,
) -> ChunkOutcome:
    outcome = ChunkOutcome()
    turns_by_conversation = conversation_turns(targets[t].conversation.pk for t in llm_runs)
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
                    buffer.append(unsent_verdict(sweep, jv, target, Verdict.Status.UNRESOLVED, str(no_audio)))
                continue
        try:
            prompt = render(spec, variables_for(spec, target, turns_by_conversation, extra), language=target.language)
        except (MissingVariable, KeyError, ValueError, IndexError) as exc:
            if 0 in runs:
                buffer.append(_unrendered(sweep, jv, target, exc))
            outcome.errors.append(f"render {target_id}: {exc}")
            continue
        jobs.extend((target, run, prompt) for run in runs)
    outcome.llm_verdicts += write_verdicts(buffer)

    def call(prompt, clip=None):
        audio = {"audio": clip} if clip is not None else {}
        return client.complete(model=model, system=prompt.system, user=prompt.user, params=call_params, **audio)

    archive = _Archive(sweep=sweep, jv=jv, spec=spec, model=model, sent_params=sent_params, clips=clips)
    answered: list[tuple[Target, int, Any, Any]] = []
    answers = _Answers(len(jobs))
    pool = llm_pool(max(1, threads))
    futures: dict[Future, tuple[Target, int, Any]] = {}
    for job in jobs:
        future = pool.submit(idle_threads.running, call, job[2], clips.get(job[0].id))
        futures[future] = job
        future.add_done_callback(answers.add)
    remaining = len(futures)
    last_flush = last_beat = time.monotonic()

    def take_answers() -> None:
        nonlocal remaining
        for future in answers.take():
            target, run, prompt = futures.pop(future)
            answered.append((target, run, prompt, _reply_of(future, sweep, target)))
            outcome.llm_calls += 1
            remaining -= 1

    try:
        while remaining:
            if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                sweep_heartbeat(sweep_id=sweep.pk)
                last_beat = time.monotonic()
            # The batch is written every VERDICT_FLUSH_EVERY answers (or at the last) or every second.
            answers.wait(timeout=max(0.05, 1.0 - (time.monotonic() - last_flush)))
            take_answers()
            if len(answered) >= VERDICT_FLUSH_EVERY or (answered and time.monotonic() - last_flush > 1.0):
                outcome.llm_verdicts += archive.write(answered)
                last_flush = time.monotonic()
    finally:
        # On a time limit, keep what is answered; the redelivered chunk does only the rest. Calls
        # not started yet are dropped; those in flight finish in the pool and are not written.
        take_answers()
        outcome.llm_verdicts += archive.write(answered)
        for future in futures:
            future.cancel()
    return outcome


def _group_jobs(sweep, jv, spec, targets, llm_runs, turns_by_conversation, extra, buffer, outcome, clips) -> list:
    """One job per (conversation, run) for a per-turn EVA judge: EVA rates every turn in one call.

    A listening judge's call carries the rated speaker's turns cut from the recording and joined (EVA
    sends that speaker's own channel); with no usable audio every turn is unresolved and nothing is sent.
    """
    members: dict[int, list[Target]] = defaultdict(list)
    for target_id in llm_runs:
        members[targets[target_id].conversation.pk].append(targets[target_id])
    jobs = []
    for conversation_id, group in members.items():
        conversation = group[0].conversation
        record = judge_inputs.eva_record(conversation, turns_by_conversation.get(conversation_id, []), extra=extra)
        eva_turn_of = {e.source_id: e.turn_id for e in record.entries}
        try:
            prompt = render(spec, judge_inputs.eva_prompt_values(spec, record), language=conversation.language)
        except (MissingVariable, KeyError, ValueError, IndexError) as exc:
            buffer.extend(_unrendered(sweep, jv, target, exc) for target in group if 0 in llm_runs[target.id])
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
                    unsent_verdict(sweep, jv, target, Verdict.Status.UNRESOLVED, str(no_audio))
                    for target in group
                    if 0 in llm_runs[target.id]
                )
                continue
        runs = sorted({run for target in group for run in llm_runs[target.id]})
        for run in runs:
            in_run = [t for t in group if run in llm_runs[t.id]]
            unit = Group(
                conversation=conversation,
                members=in_run,
                turn_ids=record.turn_ids(),
                eva_turn_of=eva_turn_of,
                expected=set(eva_variables.expected_turn_ids(eva.profile_for(spec.eva_profile), record)),
            )
            jobs.append((unit, run, prompt))
    return jobs


_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()
# Its threads wait for calls between chunks; an import may fork its reading process beside them then.
idle_threads.register_pool("llm_")


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


def _reply_of(future: Future, sweep: Sweep, target: Target):
    """The LLMReply, or the exception the client raised (it should not; if it does, the verdict says so)."""
    try:
        return future.result()
    except Exception as exc:
        log.exception("LLM call raised for sweep %s target %s", sweep.pk, target.id)
        return exc


class _Answers:
    """A chunk's calls as they are answered, handed to the chunk's thread a batch at a time.

    Each call's done-callback (on the pool thread that made it) adds its future; the chunk's thread
    is woken only when a batch is due, at VERDICT_FLUSH_EVERY answers or the last one (or by its own
    timeout, for the every-second write). Waking it at every answer cost a thread switch and a pass
    of its loop per call."""

    def __init__(self, expected: int) -> None:
        self._lock = threading.Lock()
        self._futures: list[Future] = []
        self._left = expected
        self._due = threading.Event()
        if expected == 0:
            self._due.set()

    def add(self, future: Future) -> None:
        with self._lock:
            self._futures.append(future)
            self._left -= 1
            if len(self._futures) >= VERDICT_FLUSH_EVERY or self._left <= 0:
                self._due.set()

    def wait(self, timeout: float) -> bool:
        """Wait until a batch is due, at most `timeout` seconds; whether one is."""
        return self._due.wait(timeout)

    def take(self) -> list[Future]:
        """The answers added since the last take; cleared together, so an answer added after it
        wakes the next wait again when a batch is due."""
        with self._lock:
            self._due.clear()
            taken, self._futures = self._futures, []
        return taken


@dataclass
class _Archive:
    """Archives a chunk's answered calls and writes their verdicts, a batch per transaction.

    The archive rows are those services.calls.call_archive writes (prompts stored once by hash via
    prompt_texts_store); done in bulk here because one call_archive per verdict (3-4 round trips)
    was what limited a worker's throughput. The prompt rows a committed batch stored are kept for
    the chunk's next batches: the system prompt is stored (and hashed) once per chunk, not per batch.
    """

    sweep: Sweep
    jv: JudgeVersion
    spec: JudgeSpec
    model: str
    sent_params: dict[str, Any]
    clips: dict[int, AudioClip]
    prompts: dict[str, PromptText] = field(default_factory=dict)

    def write(self, answered: list) -> int:
        if not answered:
            return 0
        sweep, jv, clips = self.sweep, self.jv, self.clips
        with transaction.atomic():
            texts = {t for _, _, p, r in answered if not isinstance(r, Exception) for t in (p.system, p.user) if t}
            stored = calls_service.prompt_texts_store(texts=[t for t in texts if t not in self.prompts])
            prompts = {**self.prompts, **stored}
            calls: list[JudgeCall | None] = []
            for target, _, prompt, reply in answered:
                if isinstance(reply, Exception):
                    calls.append(None)
                    continue
                clip = clips.get(target.id)
                turn_id = target.turn.pk if target.turn else None
                calls.append(
                    JudgeCall(
                        judge_version=jv,
                        sweep=sweep,
                        model=self.model,
                        params=self.sent_params,
                        **calls_service.answered_call_fields(
                            prompts=prompts, system=prompt.system, user=prompt.user, reply=reply
                        ),
                        audio=judge_audio.archived_audio(clip, conversation_id=target.conversation.pk, turn_id=turn_id)
                        if clip is not None
                        else {},
                    )
                )
            archived = [c for c in calls if c is not None]
            if copy_writes.copy_supported():
                # New ids (the verdicts point at them), and no other unique column: no row can conflict.
                copy_writes.copy_instances(JudgeCall, archived, new_ids=True, conflicts=False)
            else:
                JudgeCall.objects.bulk_create(archived)
            verdicts = [
                verdict
                for (target, run, _, reply), judge_call in zip(answered, calls, strict=True)
                for verdict in verdicts_from_reply(sweep, jv, self.spec, target, run, reply, judge_call)
            ]
            written = write_verdicts(verdicts)
        self.prompts.update(stored)  # only once committed: a rolled-back batch's rows do not exist
        answered.clear()
        return written

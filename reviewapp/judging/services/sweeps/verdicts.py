"""The targets a chunk scores and the Verdict rows it writes for them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from reviewapp import copy_writes
from reviewapp.judging.services import calls as calls_service
from reviewapp.models import Conversation, Judge, JudgeVersion, Sweep, Turn, Verdict
from scoring import eva, eva_answers
from scoring.parsing import JudgeResult, ProblemCode, parse_answer, unresolved


@dataclass
class ChunkOutcome:
    signature_verdicts: int = 0
    llm_verdicts: int = 0
    skipped: int = 0
    llm_calls: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Target:
    conversation: Conversation
    turn: Turn | None

    @property
    def id(self) -> int:
        return self.turn.pk if self.turn is not None else self.conversation.pk

    @property
    def language(self) -> str:
        return self.conversation.language


@dataclass
class Group:
    """The target turns of one conversation that a per-turn EVA judge rates in a single call."""

    conversation: Conversation
    members: list[Target]
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


def load_targets(level: str, target_ids: Sequence[int]) -> dict[int, Target]:
    if level == Judge.Level.CONVERSATION:
        conversations = Conversation.objects.filter(pk__in=target_ids)
        return {c.pk: Target(conversation=c, turn=None) for c in conversations}
    turns = Turn.objects.filter(pk__in=target_ids).select_related("conversation")
    return {t.pk: Target(conversation=t.conversation, turn=t) for t in turns}


def conversation_turns(conversation_ids: Iterable[int]) -> dict[int, list[Turn]]:
    grouped: dict[int, list[Turn]] = defaultdict(list)
    for turn in Turn.objects.filter(conversation_id__in=set(conversation_ids)).order_by("conversation_id", "position"):
        grouped[turn.conversation_id].append(turn)
    return grouped


def verdict_key_field(level: str) -> str:
    return "conversation_id" if level == Judge.Level.CONVERSATION else "turn_id"


def existing_verdicts(sweep: Sweep, jv: JudgeVersion, level: str, target_ids: Sequence[int]) -> dict[int, dict]:
    """target id -> {run index: (tier, has call)} for the verdicts already written."""
    key = verdict_key_field(level)
    qs = Verdict.objects.filter(sweep=sweep, judge_version=jv, **{f"{key}__in": target_ids})
    if level == Judge.Level.CONVERSATION:
        qs = qs.filter(turn__isnull=True)
    existing: dict[int, dict] = defaultdict(dict)
    for target_id, run_index, tier, call_id in qs.values_list(key, "run_index", "tier", "call_id"):
        existing[target_id][run_index] = (tier, call_id is not None)
    return existing


def new_verdict(sweep: Sweep, jv: JudgeVersion, target: Target, run_index: int, **fields) -> Verdict:
    return Verdict(
        sweep=sweep,
        judge_version=jv,
        conversation_id=target.conversation.pk,
        turn=target.turn,
        run_index=run_index,
        **fields,
    )


def write_verdicts(verdicts: list[Verdict]) -> int:
    """Write the verdicts, skipping any a run of the same chunk wrote meanwhile (a redelivered chunk
    beside the original): by COPY on PostgreSQL, the ORM's ignore_conflicts when one is already there.

    The sweep's counters move in the same transaction: by what was written when every row went in
    (COPY), recounted from the Verdict table when some may not have (a conflict, or SQLite's ORM path,
    which does not say). A chunk's end then reads the counters instead of counting the whole sweep.
    Either way the sweep's `progress_at` says verdicts came in now: the reconcile task reads that,
    not the sweep's newest verdict (a sort of a million rows).
    """
    if not verdicts:
        return 0
    with transaction.atomic():
        if copy_writes.copy_supported() and copy_writes.copy_instances(Verdict, verdicts):
            _count_written(verdicts)
        else:
            Verdict.objects.bulk_create(verdicts, ignore_conflicts=True)
            from reviewapp.judging.services.sweeps.finish import sweep_counters_recount  # finish imports this

            for sweep_id in {verdict.sweep_id for verdict in verdicts}:
                sweep_counters_recount(sweep_id=sweep_id)
    count = len(verdicts)
    verdicts.clear()
    return count


def _count_written(verdicts: list[Verdict]) -> None:
    """Add verdicts known to be written to their sweep's counters (finish.sweep_counts' definitions)."""
    added: dict[int, Counter] = defaultdict(Counter)
    for verdict in verdicts:
        counts = added[verdict.sweep_id]
        counts["verdicts_written"] += 1
        if verdict.run_index == 0:
            counts["tier1_resolved"] += verdict.tier == Verdict.Tier.SIGNATURE
            counts["escalated"] += verdict.tier == Verdict.Tier.LLM
            counts["unresolved"] += verdict.status == Verdict.Status.UNRESOLVED
            counts["failed"] += verdict.status == Verdict.Status.ERROR
    for sweep_id, counts in added.items():
        moved = {name: F(name) + value for name, value in counts.items() if value}
        Sweep.objects.filter(pk=sweep_id).update(progress_at=timezone.now(), **moved)


def verdict_fields_from_result(result: JudgeResult, raw_text: str) -> dict[str, Any]:
    """Verdict fields for a parsed LLM answer; an unresolved answer keeps its raw text and says why.

    The answer itself is in the archived call: a long raw text or explanation is kept here only as a
    marked excerpt (calls.verdict_raw_text), so a 5 MB answer is not stored twice.
    """
    raw_text = calls_service.verdict_raw_text(raw_text, archived=True)
    if result.resolved:
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
        "problem_code": str(result.problem_code or ProblemCode.INVALID),
    }


def unsent_verdict(sweep: Sweep, jv: JudgeVersion, target, status: str, explanation: str) -> Verdict:
    """Run 0's verdict for a target whose call was never sent (no prompt, no audio), with the reason."""
    return new_verdict(sweep, jv, target, 0, tier=Verdict.Tier.LLM, status=status, explanation=explanation)


def verdicts_from_reply(sweep, jv, spec, target, run, reply, judge_call) -> list[Verdict]:
    """The verdicts one answered call gives: one, or one per target turn of a per-turn EVA call."""
    if not isinstance(target, Group):
        return [_verdict_from_reply(sweep, jv, spec, target, run, reply, judge_call)]
    if isinstance(reply, Exception) or reply.error:
        return [_verdict_from_reply(sweep, jv, spec, member, run, reply, judge_call) for member in target.members]
    profile = eva.profile_for(spec.eva_profile)
    assert profile is not None
    rated = [target.eva_turn_of[m.id] for m in target.members if target.eva_turn_of[m.id] in target.expected]
    answers = eva_answers.parse_per_turn(profile, reply.text, turn_ids=target.turn_ids, rated=rated)
    verdicts = []
    for member in target.members:
        eva_turn_id = target.eva_turn_of[member.id]
        if eva_turn_id not in answers:
            # EVA's metric does not send this turn (e.g. a user turn with no transcription to compare).
            fields = verdict_fields_from_result(
                unresolved(f"turn {eva_turn_id}: not rated (EVA's {profile.key} does not rate it)"), reply.text
            )
            fields["status"] = Verdict.Status.NOT_RATED
        else:
            answer = answers[eva_turn_id]
            fields = verdict_fields_from_result(answer.result, reply.text)
            if answer.not_rated:
                fields["status"] = Verdict.Status.NOT_RATED
        verdicts.append(
            new_verdict(
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
    return new_verdict(sweep, jv, target, run, tier=Verdict.Tier.LLM, **_reply_fields(spec, reply, judge_call))


def _reply_fields(spec, reply, judge_call) -> dict[str, Any]:
    if isinstance(reply, Exception):
        return {"status": Verdict.Status.ERROR, "explanation": f"LLM call raised {type(reply).__name__}: {reply}"}
    if reply.error:
        return {
            "status": Verdict.Status.ERROR,
            "explanation": f"LLM call failed after {reply.attempts} attempt(s): {reply.error}",
            "raw_text": calls_service.verdict_raw_text(reply.text or reply.body, archived=judge_call is not None),
            "call": judge_call,
        }
    profile = eva.profile_for(spec.eva_profile) if spec.eva_profile else None
    result = (
        eva_answers.parse_conversation(profile, reply.text) if profile is not None else parse_answer(spec, reply.text)
    )
    return {"call": judge_call, **verdict_fields_from_result(result, reply.text)}


# --- finishing -----------------------------------------------------------------------------------

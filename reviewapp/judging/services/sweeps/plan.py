"""Planning a sweep: its targets per judge version, the variance sample, and its chunks."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import groupby
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from reviewapp.access import language_match_q
from reviewapp.judging.services import judge_inputs, judges, signature_checks
from reviewapp.judging.services import sweep_scope as scopes
from reviewapp.judging.services.rubrics import variance_check_params
from reviewapp.judging.services.sweeps.verdicts import conversation_turns
from reviewapp.models import Conversation, Dataset, Judge, JudgeVersion, Sweep, Turn
from reviewapp.versioning import code_version
from scoring import eva
from scoring.errors import TribunalError

CHUNK_SIZE = settings.TRIBUNAL_SWEEP_CHUNK_SIZE
MAX_REPEATS = 10


class SweepError(TribunalError, ValueError):
    """A sweep that cannot be started or continued as asked."""


def _language_filter(language: str, field_name: str) -> Q:
    """`fr` covers `fr` and its regional variants (`fr-CA`), as for reviewers."""
    return language_match_q(language, field_name) if language else Q()


def target_level(judge_version: JudgeVersion) -> str:
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


def judge_eva_profile(judge_version: JudgeVersion) -> eva.EvaProfile | None:
    key = (judge_version.spec or {}).get("eva_profile")
    return eva.profile_for(key) if key else None


def target_role(judge_version: JudgeVersion) -> str:
    """The role of the turns a turn-level judge rates: agent turns, or user turns for EVA's user-side judges."""
    profile = judge_eva_profile(judge_version)
    return Turn.Role.USER if profile is not None and profile.rated_role == eva.USER else Turn.Role.AGENT


def sweep_targets(*, sweep: Sweep, judge_version: JudgeVersion) -> list[int]:
    """The targets one judge version of a sweep scores: its level and role, the sweep's language and scope.

    A scoped sweep keeps the targets it planned (comments and verdicts change while it runs)."""
    planned = (sweep.params.get("scope_targets") or {}).get(str(judge_version.pk))
    if planned is not None:
        return list(planned)
    level = target_level(judge_version)
    ids = target_ids_for(dataset=sweep.dataset, level=level, language=sweep.language, role=target_role(judge_version))
    scope = scopes.scope_from_params(sweep.params.get("scope"))
    return scopes.scope_targets(scope=scope, judge=judge_version.judge, level=level, target_ids=ids)


def eva_render_problems(*, judge_version: JudgeVersion, conversation_ids: Sequence[int], extra: dict | None) -> str:
    """Why an EVA judge cannot be rendered for these conversations ("" when it can): named before any call."""
    spec = judges.judge_version_spec(judge_version)
    missing: dict[str, list[str]] = defaultdict(list)
    conversations = Conversation.objects.filter(pk__in=conversation_ids).order_by("id")
    turns = conversation_turns(conversation_ids)
    total = 0
    for conversation in conversations:
        total += 1
        record = judge_inputs.eva_record(conversation, turns.get(conversation.pk, []), extra=extra)
        for name in judge_inputs.eva_prompt_variables(spec, record)[1]:
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
    dispatch: Callable[[int], None] | None = None,
    scope: scopes.Scope = scopes.ALL,
    variables: dict[str, str] | None = None,
) -> Sweep:
    """Plan a sweep and queue it; the work starts when this transaction commits.

    `dispatch(sweep_id)` queues the work once this transaction commits: the caller hands it in
    (tasks.sweeps.sweep_queue), so this service never imports a task; without it the sweep is only
    planned (the caller runs tasks.sweeps.sweep_dispatch itself).
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
            level = target_level(jv)
            ids = sweep_targets(sweep=sweep, judge_version=jv)
            targets_by_version[str(jv.pk)] = ids
            plan[str(jv.pk)] = {"level": level, "targets": len(ids)}
            total += len(ids)
            if ids and judge_eva_profile(jv) is not None:
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
        sweep_id = sweep.pk
        transaction.on_commit(lambda: dispatch(sweep_id))
    return sweep


def sweep_chunks(*, sweep: Sweep) -> list[tuple[int, list[int]]]:
    """The (judge version id, target ids) chunks of a sweep, in a stable order."""
    chunk_size = int(sweep.params.get("chunk_size") or CHUNK_SIZE)
    chunks: list[tuple[int, list[int]]] = []
    for jv in sweep.judge_versions.select_related("judge").order_by("id"):
        ids = sweep_targets(sweep=sweep, judge_version=jv)
        profile = judge_eva_profile(jv)
        if profile is not None and profile.per_turn:
            chunks.extend((jv.pk, chunk) for chunk in _conversation_chunks(ids, chunk_size))
            continue
        chunks.extend((jv.pk, ids[i : i + chunk_size]) for i in range(0, len(ids), chunk_size))
    return chunks


def _conversation_chunks(turn_ids: list[int], chunk_size: int) -> list[list[int]]:
    """Turn chunks that never split a conversation, `chunk_size` conversations each.

    A per-turn EVA judge makes one call per conversation for all its turns: counting conversations,
    not turns, gives its chunk as many calls as a chunk of a one-call-per-turn judge (one wave of the
    worker's pool), instead of a fifth of them for conversations of five rated turns.
    """
    conversation_of = dict(Turn.objects.filter(pk__in=turn_ids).values_list("id", "conversation_id"))
    chunks: list[list[int]] = []
    current: list[int] = []
    conversations = 0
    for _conversation_id, group in groupby(
        sorted(turn_ids, key=lambda t: (conversation_of[t], t)), key=conversation_of.get
    ):
        if conversations == chunk_size:
            chunks.append(current)
            current, conversations = [], 0
        current.extend(group)
        conversations += 1
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

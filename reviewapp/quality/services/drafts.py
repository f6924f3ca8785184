"""A new judge version from reviewers' corrections, stored immutable with its provenance.

The lead's edited guidance replaces the parent's block for each language; everything else of the spec
is the parent's. The items used as examples or quoted, and the turns of the quoted comments, are
recorded as the version's excluded targets (selectors/leakage.py): its figures never count them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from django.db import transaction

from reviewapp.audit import audit_record
from reviewapp.judging.services.judges import judge_version_ensure, judge_version_spec
from reviewapp.models import Comment, JudgeVersion, ReviewItem, VersionProvenance
from scoring.errors import TribunalError
from scoring.specs import spec_hash

MAX_LABEL = 64


class DraftError(TribunalError, ValueError):
    """A draft that cannot be saved as asked."""


@transaction.atomic
def draft_version_save(
    *,
    parent: JudgeVersion,
    label: str,
    guidance: Mapping[str, str],
    item_ids: Sequence[int],
    comment_ids: Sequence[int],
    user,
    evidence: Mapping | None = None,
    note: str = "",
) -> JudgeVersion:
    """Store the edited draft as a new JudgeVersion of `parent`'s judge, with parent, items, comments,
    approver and excluded targets. Refuses an existing label, an unchanged spec, or evidence that is
    not the judge's."""
    label = label.strip()
    if not label or len(label) > MAX_LABEL:
        raise DraftError(f"A version label is 1 to {MAX_LABEL} characters.")
    judge = parent.judge
    if JudgeVersion.objects.filter(judge=judge, version=label).exists():
        raise DraftError(f"{judge.slug} already has a version {label!r}: versions are immutable, pick a new label.")
    items = list(ReviewItem.objects.filter(pk__in=set(item_ids)))
    if len(items) != len(set(item_ids)) or any(i.judge_id != judge.pk for i in items):
        raise DraftError("Some evidence items do not exist or belong to another judge.")
    comments = list(Comment.objects.filter(pk__in=set(comment_ids)).select_related("turn"))
    if len(comments) != len(set(comment_ids)):
        raise DraftError("Some quoted comments do not exist.")
    spec = judge_version_spec(parent)
    merged = dict(spec.language_guidance)
    for language, text in guidance.items():
        text = text.replace("\r\n", "\n").strip()
        if text:
            merged[language] = text + "\n"
        else:
            merged.pop(language, None)
    draft = dataclasses.replace(spec, version=label, language_guidance=merged, source=f"draft from {parent}")
    if spec_hash(dataclasses.replace(draft, version=spec.version)) == parent.spec_hash:
        raise DraftError("The draft changes nothing in the prompt: edit the guidance before saving.")
    version = judge_version_ensure(spec=draft).version
    excluded = sorted(
        {(i.conversation_id, i.turn_id) for i in items} | {(c.turn.conversation_id, c.turn_id) for c in comments},
        key=lambda t: (t[0], t[1] or 0),
    )
    provenance = VersionProvenance.objects.create(
        version=version,
        parent=parent,
        approved_by=user,
        excluded=[list(t) for t in excluded],
        evidence=dict(evidence or {}),
        note=note,
    )
    provenance.items.set(items)
    provenance.comments.set(comments)
    audit_record(
        actor=user,
        action="judge_version.from_corrections",
        obj=version,
        before={"parent": parent.version},
        after={"version": label, "items": len(items), "comments": len(comments), "excluded": len(excluded)},
    )
    return version


# --- optional: an LLM rewrites the drafted block (through the same client and archive as sweeps) -------

LLM_DRAFT_SYSTEM = (
    "You maintain the per-language guidance block of an LLM judge's prompt. Native-speaker reviewers "
    "corrected the judge; their words and examples follow. Rewrite the block so the judge stops making "
    "these mistakes: keep every existing rule that still holds, keep the examples, quote reviewers only "
    "as given, and answer with the new block as plain text and nothing else."
)
LLM_DRAFT_PARAMS = {"temperature": 0, "max_tokens": 900}


def draft_llm_rewrite(*, parent: JudgeVersion, language: str, proposed: str, current: str, client, model: str):
    """Ask the LLM for a rewritten block; the call is archived as a JudgeCall of `parent` (no sweep).
    Returns (text or "", the archived call). An empty or failed answer leaves the structured draft."""
    from reviewapp.judging.services.calls import call_archive

    user = (
        f"## Current guidance ({language})\n{current or '(none)'}\n\n"
        f"## Reviewers' corrections and examples\n{proposed}\n\n## New guidance block ({language})"
    )
    request = {"model": model, "system": LLM_DRAFT_SYSTEM, "user": user, "params": LLM_DRAFT_PARAMS}
    reply = client.complete(**request)
    call = call_archive(judge_version=parent, sweep=None, reply=reply, **request)
    text = "" if reply.error else reply.text.strip()
    return text, call


def draft_guidance_from_llm(*, parent: JudgeVersion, draft) -> list[str]:
    """Replace each language's proposed block of `draft` (a selectors.drafts.Draft) by the LLM's rewrite,
    every call archived; returns what happened, in words for the page."""
    from django.conf import settings

    from reviewapp.judging.services import sweeps as sweeps_service

    client = sweeps_service.llm_client()
    if client is None:
        return ["LLM drafting is off (OPENAI_BASE_URL unset): the draft is the structured evidence and examples."]
    model = judge_version_spec(parent).model or settings.OPENAI_MODEL
    notes = []
    for lang in draft.languages:
        text, call = draft_llm_rewrite(
            parent=parent,
            language=lang.language,
            proposed=lang.proposed_guidance,
            current=lang.current_guidance,
            client=client,
            model=model,
        )
        if text:
            lang.proposed_guidance = text
            notes.append(f"{lang.language}: drafted by {model} (archived call {call.pk}).")
        else:
            notes.append(
                f"{lang.language}: the LLM gave no usable answer (call {call.pk}); the structured draft stays."
            )
    return notes

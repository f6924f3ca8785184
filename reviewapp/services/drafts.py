"""A new judge version from reviewers' corrections, stored immutable with its provenance.

The lead's edited guidance replaces the parent's block for each language; everything else of the spec
is the parent's. The items used as examples or quoted, and the turns of the quoted comments, are
recorded as the version's excluded targets (selectors/leakage.py): its figures never count them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from django.db import transaction

from scoring.specs import spec_hash

from ..models import Comment, JudgeVersion, ReviewItem, VersionProvenance
from .audit import audit_record
from .judges import judge_version_ensure, spec_of

MAX_LABEL = 64


class DraftError(ValueError):
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
    spec = spec_of(parent)
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

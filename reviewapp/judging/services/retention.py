"""Retention of the judge-call archive.

A JudgeCall keeps the exact prompts and raw answer of one LLM call so it can be replayed; that is
worth keeping for a while, not forever. `judge_calls_purge` deletes calls older than
JUDGE_CALL_RETENTION_DAYS (default 90) in batches, then the prompt texts no call refers to any more.
Verdicts keep their rating, label, explanation and raw text (Verdict.call is SET_NULL), and gold
labels, reviews and export snapshots are not touched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from reviewapp.models import JudgeCall, PromptText
from scoring.errors import TribunalError

log = logging.getLogger(__name__)

BATCH_SIZE = 1000


class RetentionError(TribunalError, ValueError):
    """A purge asked with an impossible window."""


@dataclass(frozen=True)
class PurgeResult:
    cutoff: datetime
    calls: int
    prompts: int
    dry_run: bool

    def as_dict(self) -> dict:
        return {
            "cutoff": self.cutoff.isoformat(),
            "calls": self.calls,
            "prompts": self.prompts,
            "dry_run": self.dry_run,
        }


def _orphan_prompts():
    used = JudgeCall.objects.filter(Q(user_prompt=OuterRef("pk")) | Q(system_prompt=OuterRef("pk")))
    return PromptText.objects.filter(~Exists(used))


def judge_calls_purge(
    *, older_than_days: int | None = None, batch_size: int = BATCH_SIZE, dry_run: bool = False
) -> PurgeResult:
    """Delete judge calls created before now - `older_than_days` (default: the setting), then orphan prompts.

    Each batch is its own transaction, so a long purge never holds locks for long and can be stopped
    and run again. `dry_run` only counts.
    """
    days = settings.JUDGE_CALL_RETENTION_DAYS if older_than_days is None else older_than_days
    if days < 1:
        raise RetentionError(f"Keep judge calls for at least one day, not {days}.")
    cutoff = timezone.now() - timedelta(days=days)
    old = JudgeCall.objects.filter(created_at__lt=cutoff)
    if dry_run:
        calls = old.count()
        # Prompts that only these calls use would go too.
        kept = JudgeCall.objects.filter(created_at__gte=cutoff)
        used_by_kept = kept.filter(Q(user_prompt=OuterRef("pk")) | Q(system_prompt=OuterRef("pk")))
        prompts = _orphan_prompts().count() + (
            PromptText.objects.filter(
                Q(Exists(old.filter(user_prompt=OuterRef("pk")))) | Q(Exists(old.filter(system_prompt=OuterRef("pk"))))
            )
            .filter(~Exists(used_by_kept))
            .count()
        )
        return PurgeResult(cutoff=cutoff, calls=calls, prompts=prompts, dry_run=True)

    calls = prompts = 0
    while True:
        with transaction.atomic():
            ids = list(old.order_by("id").values_list("id", flat=True)[:batch_size])
            if not ids:
                break
            # Verdicts that cite these calls keep everything but the link (SET_NULL).
            JudgeCall.objects.filter(id__in=ids).delete()
            calls += len(ids)
    while True:
        with transaction.atomic():
            ids = list(_orphan_prompts().order_by("id").values_list("id", flat=True)[:batch_size])
            if not ids:
                break
            # Re-checked in the delete: a sweep may have just reused one of these prompts.
            _orphan_prompts().filter(id__in=ids).delete()
            prompts += len(ids)
    log.info("purged %d judge call(s) older than %s and %d unused prompt text(s)", calls, cutoff, prompts)
    return PurgeResult(cutoff=cutoff, calls=calls, prompts=prompts, dry_run=False)

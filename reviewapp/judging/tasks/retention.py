"""The periodic purge of old judge-call archives (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from reviewapp.judging.services.retention import judge_calls_purge


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=3600, time_limit=3700)
def judge_calls_purge_old() -> dict:
    """Delete JudgeCall archives older than JUDGE_CALL_RETENTION_DAYS; verdicts, labels and snapshots stay."""
    return judge_calls_purge().as_dict()

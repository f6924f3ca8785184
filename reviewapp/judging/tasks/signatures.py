"""The periodic recheck of tier-1 signatures on gold (scheduled in settings.CELERY_BEAT_SCHEDULE).

Gold keeps arriving (adjudications, unanimous reviews, imports); a signature that agreed with the
gold of its day can contradict tomorrow's. This task suspends it so sweeps stop using it.
"""

from __future__ import annotations

from celery import shared_task

from reviewapp.judging.services.signature_checks import signatures_recheck


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=600, time_limit=660)
def signatures_recheck_all(judge_id: int | None = None) -> dict:
    """Every signature on beat; one judge's right after new gold for it (signatures_after_gold)."""
    return signatures_recheck(judge_id=judge_id).as_dict()


def signatures_recheck_queue(judge_id: int) -> None:
    """The dispatch a view hands review_submit / adjudication_decide: recheck one judge's signatures on a worker."""
    signatures_recheck_all.delay(judge_id=judge_id)

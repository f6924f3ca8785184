"""Replays of archived judge calls on a worker (a call can take a minute; the page polls)."""

from celery import shared_task

from reviewapp.judging.services.replays import call_replay_run


def call_replay_queue(replay_id: int) -> None:
    """Queue a recorded replay: what callers hand to call_replay_request."""
    call_replay.delay(replay_id)


@shared_task(acks_late=True)
def call_replay(replay_id: int) -> dict:
    """Safe to run twice: a finished replay is left as it is."""
    replay = call_replay_run(replay_id=replay_id)
    return {"replay": replay.pk, "status": replay.status}

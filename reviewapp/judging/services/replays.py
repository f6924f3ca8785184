"""Replays of archived judge calls, asked for from the browser by a lead and run on a worker.

`call_replay_request` records the request and queues it (with the dispatch its caller hands in); `call_replay_run` sends the archived call
again through the same client (services.calls.call_replay: same prompts, model, parameters and, for a
listening judge, the same audio segment) and keeps the new answer beside the old one. A replay never
writes a verdict: it checks whether the endpoint still answers the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from reviewapp.judging.services import calls as calls_service
from reviewapp.judging.services.judge_audio import NoAudio
from reviewapp.models import CallReplay, JudgeCall
from scoring.errors import TribunalError


class ReplayError(TribunalError, ValueError):
    """A replay that cannot be asked for as it stands."""


def call_replay_request(*, call: JudgeCall, user, dispatch: Callable[[int], None] | None = None) -> CallReplay:
    """Record a replay of `call`; `dispatch(replay_id)` queues it once this transaction commits.

    The caller hands in the dispatch (tasks.replays.call_replay_queue), so this service never imports a task."""
    with transaction.atomic():
        if CallReplay.objects.filter(call=call, status=CallReplay.Status.PENDING).exists():
            raise ReplayError(f"A replay of call {call.pk} is already waiting for a worker.")
        replay = CallReplay.objects.create(call=call, model=call.model, requested_by=user)
        if dispatch:
            replay_id = replay.pk
            transaction.on_commit(lambda: dispatch(replay_id))
    return replay


def call_replay_run(*, replay_id: int, client=None) -> CallReplay:
    """Send the call again and store the answer; a replay already finished is returned as it is."""
    replay = CallReplay.objects.select_related("call").get(pk=replay_id)
    if replay.status != CallReplay.Status.PENDING:
        return replay
    if client is None:
        client = calls_service.llm_client_from_settings()
    fields: dict = {"finished_at": timezone.now()}
    if client is None:
        fields.update(status=CallReplay.Status.FAILED, error=calls_service.llm_tier_off_reason())
    else:
        try:
            _, reply = calls_service.call_replay(call=replay.call, client=client)
        except NoAudio as exc:
            fields.update(status=CallReplay.Status.FAILED, error=f"Cannot send the same audio again: {exc}")
        else:
            fields.update(
                status=CallReplay.Status.DONE if reply.ok else CallReplay.Status.FAILED,
                raw_response=reply.text,
                **calls_service.reply_usage_fields(reply),
            )
    with transaction.atomic():
        # Written only while still pending, so a redelivered task cannot overwrite a finished replay.
        CallReplay.objects.filter(pk=replay.pk, status=CallReplay.Status.PENDING).update(**fields)
    replay.refresh_from_db()
    return replay

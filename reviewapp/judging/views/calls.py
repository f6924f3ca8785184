"""The call archive in the open: an archived judge call (prompt, raw answer, latency, attempts, audio sent)
and replays of it, for leads."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from reviewapp import access
from reviewapp.judging.selectors import calls as call_selectors
from reviewapp.judging.services import replays as replays_service
from reviewapp.models import CallReplay, JudgeCall
from reviewapp.rendering import found_or_404, render_page


def _check_lead(user) -> None:
    access.check_lead(user, "Only leads and admins open the call archive.")


def _call_or_404(call_id: int) -> JudgeCall:
    return found_or_404(call_selectors.call_archive, "No such archived call.", call_id=call_id)


@require_GET
@login_required
def call_detail(request, call_id: int):
    _check_lead(request.user)
    context = call_selectors.call_page(call=_call_or_404(call_id))
    return render_page(request, "calls/detail.html", "archive", context)


@require_POST
@login_required
def call_replay(request, call_id: int):
    _check_lead(request.user)
    # The task (and Celery) load when one is first queued, not with the URLconf.
    from reviewapp.judging.tasks.replays import call_replay_queue

    call = _call_or_404(call_id)
    error = ""
    try:
        replay = replays_service.call_replay_request(call=call, user=request.user, dispatch=call_replay_queue)
    except replays_service.ReplayError as exc:
        error, replay = str(exc), None
    if not request.htmx:
        return redirect("call_detail", call_id=call.pk)
    context = {"call": call, "error": error}
    if replay is not None:
        context["r"] = call_selectors.replay_view(call=call, replay=replay)
    return render_page(request, "calls/detail.html", "replay", context, status=409 if error else 200)


@require_GET
@login_required
def replay_status(request, replay_id: int):
    _check_lead(request.user)
    replay = get_object_or_404(CallReplay.objects.select_related("requested_by"), pk=replay_id)
    call = _call_or_404(replay.call_id)
    if not request.htmx:
        return redirect("call_detail", call_id=call.pk)
    context = {"call": call, "r": call_selectors.replay_view(call=call, replay=replay)}
    return render_page(request, "calls/detail.html", "replay", context)

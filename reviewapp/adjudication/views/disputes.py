"""Disputes for leads: items awaiting adjudication, and one item to decide or send back to reviewers."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp import access, listings
from reviewapp.adjudication.forms.disputes import DecisionForm, SendBackForm, decision_initial
from reviewapp.adjudication.selectors import disputes as selectors
from reviewapp.adjudication.services import adjudication as service
from reviewapp.models import ReviewItem
from reviewapp.rendering import form_write, found_or_404, render_page
from reviewapp.triage.selectors import progress


def _item_or_404(item_id: int) -> ReviewItem:
    return found_or_404(selectors.item_for_dispute, "No such review item.", item_id=item_id)


@require_GET
@login_required
def dispute_list(request):
    access.check_lead(request.user)
    chosen = listings.query_filters(request, "language", "kind")
    if chosen["kind"] not in selectors.KIND_LABELS:
        chosen["kind"] = ""
    items, total = selectors.awaiting_items(**chosen)
    context = {
        "items": items,
        "total": total,
        "shown": selectors.DISPUTES_SHOWN,
        "kinds": selectors.KINDS,
        "languages": selectors.awaiting_languages(),
        **chosen,
    }
    return render_page(request, "disputes/list.html", "rows", context)


def _detail_context(item: ReviewItem, decision: DecisionForm | None = None, send_back: SendBackForm | None = None):
    detail = selectors.dispute_detail(item=item)
    if decision is None:
        decision = DecisionForm(
            judge=item.judge,
            categories=detail.categories,
            initial=decision_initial(detail.adjudication, judge=item.judge),
        )
    return {
        "d": detail,
        "item": item,
        "decision": decision,
        "send_back": send_back or SendBackForm(),
        "can_decide": item.status == ReviewItem.Status.AWAITING_ADJUDICATION
        or (item.status == ReviewItem.Status.CLOSED and detail.adjudication is not None),
        "can_send_back": item.status == ReviewItem.Status.AWAITING_ADJUDICATION,
        "takers": progress.item_takers(items=[item])[item.pk],
    }


@require_GET
@login_required
def dispute_detail(request, item_id: int):
    access.check_lead(request.user)
    item = _item_or_404(item_id)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item))


@require_POST
@login_required
def dispute_decide(request, item_id: int):
    access.check_lead(request.user)
    item = _item_or_404(item_id)
    form = DecisionForm(request.POST, judge=item.judge)
    if form.is_valid():
        # The task (and Celery) load when one is first queued, not with the URLconf.
        from reviewapp.judging.tasks.signatures import signatures_recheck_queue

        decided = form_write(
            form,
            service.adjudication_decide,
            item=item,
            lead=request.user,
            rationale=form.cleaned_data["rationale"],
            categories=form.cleaned_data["categories"],
            failure_modes=form.cleaned_data.get("judge_modes") or (),
            **form.decision(),
            after_gold=signatures_recheck_queue,
        )
        if decided is not None:
            return redirect("dispute_detail", item_id=item.pk)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item, decision=form), status=400)


@require_http_methods(["POST"])
@login_required
def dispute_send_back(request, item_id: int):
    access.check_lead(request.user)
    item = _item_or_404(item_id)
    form = SendBackForm(request.POST)
    if form.is_valid():
        note, to = form.cleaned_data["note"], form.cleaned_data["to"] or "original"
        sent = form_write(form, service.item_send_back, item=item, lead=request.user, note=note, to=to)
        if sent is not None:
            return redirect("dispute_detail", item_id=item.pk)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item, send_back=form), status=400)

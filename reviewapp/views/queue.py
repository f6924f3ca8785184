from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from .. import access
from ..selectors import queue as queue_selectors
from ..services import reviews
from .datasets import render_page

SESSION_FILTERS = "queue_filters"


def remembered_filters(request) -> queue_selectors.QueueFilters:
    """The filters the reviewer last started reviewing with, so "next" keeps to the same slice."""
    return queue_selectors.QueueFilters.from_query(request.session.get(SESSION_FILTERS, {}))


def next_item_redirect(request, filters: queue_selectors.QueueFilters):
    """Claim the next item for the reviewer and open it; back to the queue when nothing is left."""
    item = reviews.item_claim(user=request.user, filters=filters)
    if item is None:
        query = {**filters.as_query(), "empty": "1"}
        return redirect(reverse("queue_index") + "?" + urlencode(query))
    return redirect("review_item", item_id=item.pk)


@require_GET
@login_required
def queue_index(request):
    filters = queue_selectors.QueueFilters.from_query(request.GET)
    context = {
        "queue": queue_selectors.queue_page(user=request.user, filters=filters),
        "filters": filters,
        "query": urlencode(filters.as_query()),
        "empty": request.GET.get("empty") == "1",
    }
    return render_page(request, "queue/index.html", "results", context)


@require_POST
@login_required
def queue_next(request):
    """ "Start reviewing": claim the highest-priority item for this reviewer under a lease."""
    filters = queue_selectors.QueueFilters.from_query(request.POST)
    if request.session.get(SESSION_FILTERS) != filters.as_query():
        # Written only when they change: an unchanged session costs no UPDATE and no commit.
        request.session[SESSION_FILTERS] = filters.as_query()
    return next_item_redirect(request, filters)


@require_GET
@login_required
def queue_progress(request):
    if not access.is_lead(request.user):
        raise PermissionDenied("Only leads and admins see everyone's progress.")
    reviewers, languages = queue_selectors.progress_tables(user=request.user)
    return render_page(request, "queue/progress.html", "tables", {"reviewers": reviewers, "languages": languages})

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from reviewapp import access
from reviewapp.rendering import form_success, render_page
from reviewapp.triage.forms.queue import QueueFilterForm
from reviewapp.triage.selectors import progress as progress_selectors
from reviewapp.triage.selectors import queue as queue_selectors
from reviewapp.triage.selectors import queue_filters as queue_filters_selectors
from reviewapp.triage.services import claims
from reviewapp.triage.services import queue_bulk as bulk_service

SESSION_FILTERS = "queue_filters"


def remembered_filters(request) -> queue_filters_selectors.QueueFilters:
    """The filters the reviewer last started reviewing with, so "next" keeps to the same slice."""
    return queue_filters_selectors.QueueFilters.from_query(request.session.get(SESSION_FILTERS, {}))


def next_item_redirect(request, filters: queue_filters_selectors.QueueFilters):
    """Claim the next item for the reviewer and open it; back to the queue when nothing is left."""
    item = claims.item_claim(user=request.user, filters=filters)
    if item is None:
        query = {**filters.as_query(), "empty": "1"}
        return redirect(reverse("queue_index") + "?" + urlencode(query))
    return redirect("review_item", item_id=item.pk)


DONE = {
    "close": "Closed",
    "reprioritise": "Re-prioritised",
    "reassign_language": "Reassigned",
    "send_back": "Sent back",
}


def done_message(done: str) -> str:
    """What the last bulk action did, from the redirect's `done=action:count`."""
    action, _, count = done.partition(":")
    if action not in DONE or not count.isdigit() or len(count) > 6:
        return ""
    return f"{DONE[action]} {count} item{'s' if count != '1' else ''}."


def queue_context(request, form: QueueFilterForm, **extra) -> dict:
    filters = queue_filters_selectors.QueueFilters.from_form(form)
    page = queue_selectors.queue_page(user=request.user, filters=filters, after=form.cursor())
    query = filters.as_query()
    encoded = urlencode(query)
    return {
        "queue": page,
        "filters": filters,
        "query": encoded,
        # Each reason count's link: the page's query with `reason=<code>` after it (the last one counts).
        "reason_query": f"{encoded}&reason=" if encoded else "reason=",
        "queue_url": reverse("queue_index"),
        "next_query": urlencode({**query, "after": page.next_after}) if page.next_after else "",
        "ignored": form.ignored(),
        "empty": request.GET.get("empty") == "1",
        "done": done_message(request.GET.get("done", "")),
        "can_bulk": access.is_lead(request.user),
        "bulk_actions": BulkForm.base_fields["action"].choices,
        **extra,
    }


@require_GET
@login_required
def queue_index(request):
    context = queue_context(request, QueueFilterForm.from_params(request.GET))
    return render_page(request, "queue/index.html", "results", context)


class BulkForm(forms.Form):
    action = forms.ChoiceField(
        choices=[
            ("close", "Close"),
            ("reprioritise", "Set priority"),
            ("reassign_language", "Reassign language"),
            ("send_back", "Send back"),
        ]
    )
    items = forms.TypedMultipleChoiceField(coerce=int, choices=[], required=True)
    priority = forms.IntegerField(required=False, min_value=-1_000_000, max_value=1_000_000)
    language = forms.CharField(required=False, max_length=35)
    note = forms.CharField(required=False, max_length=2000)
    to = forms.ChoiceField(choices=[("original", "its reviewers"), ("any", "any reviewer")], required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Any id parses here; the service says which items exist and may take the action.
        self.fields["items"].choices = [(v, v) for v in self.data.getlist("items") if v.isdigit() and len(v) < 11]


@require_POST
@login_required
def queue_bulk(request):
    """A lead's bulk action on the checked items; errors come back in place, success reloads the queue."""
    access.check_lead(request.user, "Only leads and admins act on many items at once.")
    filters = QueueFilterForm.from_params(request.POST)
    kept = queue_filters_selectors.QueueFilters.from_form(filters).as_query()
    form = BulkForm(request.POST)
    errors: list[str] = []
    if form.is_valid():
        data = form.cleaned_data
        try:
            result = bulk_service.items_bulk_update(
                actor=request.user,
                item_ids=data["items"],
                action=data["action"],
                priority=data["priority"],
                language=data["language"],
                note=data["note"],
                to=data["to"] or "original",
            )
        except bulk_service.BulkError as exc:
            errors = [str(exc), *exc.refusals]
        else:
            done = urlencode({**kept, "done": f"{result.action}:{result.changed}"})
            return form_success(request, reverse("queue_index") + "?" + done)
    else:
        errors = [f"{name}: {' '.join(messages)}" for name, messages in form.errors.items()]
    context = queue_context(request, filters, bulk_errors=errors)
    return render_page(request, "queue/index.html", "results", context, status=400)


@require_POST
@login_required
def queue_next(request):
    """ "Start reviewing": claim the highest-priority item for this reviewer under a lease."""
    filters = queue_filters_selectors.QueueFilters.from_query(request.POST)
    if request.session.get(SESSION_FILTERS) != filters.as_query():
        # Written only when they change: an unchanged session costs no UPDATE and no commit.
        request.session[SESSION_FILTERS] = filters.as_query()
    return next_item_redirect(request, filters)


@require_GET
@login_required
def queue_progress(request):
    access.check_lead(request.user, "Only leads and admins see everyone's progress.")
    reviewers, languages = progress_selectors.progress_tables(user=request.user)
    return render_page(request, "queue/progress.html", "tables", {"reviewers": reviewers, "languages": languages})

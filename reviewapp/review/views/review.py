from django import forms
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp import access
from reviewapp.models import Category, ReviewItem
from reviewapp.rendering import found_or_404, render_page
from reviewapp.review.selectors import review_screen as review_screen_selectors
from reviewapp.review.selectors import verdict_shapes
from reviewapp.review.services import review_grain, reviews
from reviewapp.triage.selectors import queue_filters
from reviewapp.triage.services import claims
from reviewapp.triage.views.queue import next_item_redirect, remembered_filters
from scoring.errors import TribunalError

TEMPLATE = "review/item.html"


def item_or_404(request, item_id: int, *, screen: bool = True, lock: bool = False) -> ReviewItem:
    """The item in the address, if its language is the reviewer's; with what the screen shows of it
    (`item_for_review`, its row locked with `lock`), or only its row for an action that renders no screen."""
    if screen:
        item = found_or_404(
            review_screen_selectors.item_for_review,
            "No such review item.",
            item_id=item_id,
            user=request.user,
            lock=lock,
        )
    else:
        item = found_or_404(review_screen_selectors.item_alone, "No such review item.", item_id=item_id)
    return access.item_for_reviewer(request.user, item)


class Refused(TribunalError):
    """A label the screen shows again with an error and a status, its transaction rolled back."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class ReviewForm(forms.Form):
    """A reviewer's label. Verdict agreement arrives as verdict_<id> = agree | disagree."""

    rating = forms.FloatField(required=False)
    label = forms.CharField(required=False, max_length=100)
    categories = forms.ModelMultipleChoiceField(queryset=Category.objects.filter(active=True), required=False)
    comment = forms.CharField(required=False, widget=forms.Textarea, max_length=10_000)
    quoted_span = forms.CharField(required=False, max_length=2_000)
    seconds_spent = forms.IntegerField(required=False, min_value=0, max_value=86_400)

    def agreement(self) -> dict[int, str]:
        return {
            int(key.removeprefix("verdict_")): value
            for key, value in self.data.items()
            if key.startswith("verdict_") and key.removeprefix("verdict_").isdigit() and value
        }


def render_screen(request, item: ReviewItem, *, form=None, error: str = "", fragment: str = "", status: int = 200):
    screen = review_screen_selectors.review_screen(item=item, user=request.user)
    context = {
        "screen": screen,
        "item": item,
        "form": form,
        "error": error,
        # A reviewer labels once, or again when a lead sent the item back to them to revise.
        "can_label": screen.held_by_me
        and (screen.my_review is None or screen.my_review.revision_requested)
        and item.status in queue_filters.ACTIVE,
        "grain": verdict_shapes.annotated_grain(item),
    }
    return render_page(request, TEMPLATE, fragment, context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def review_item(request, item_id: int):
    """The turn review screen (GET); POST submits the label and moves on to the next item. The label is
    written in the transaction that read the item under its row lock, so it is read once."""
    if request.method == "GET":
        return render_screen(request, item_or_404(request, item_id))
    # The task (and Celery) load when one is first queued, not with the URLconf.
    from reviewapp.judging.tasks.signatures import signatures_recheck_queue

    form = ReviewForm(request.POST)
    try:
        with transaction.atomic():
            item = item_or_404(request, item_id, lock=True)
            if not form.is_valid():
                raise Refused("Check the form: some values are not valid.", 400)
            data = form.cleaned_data
            try:
                grain = review_grain.grain_from_form(grain=verdict_shapes.annotated_grain(item), data=request.POST)
            except review_grain.GrainError as exc:
                raise Refused(f"Check the form: {exc}", 400) from None
            try:
                reviews.review_submit(
                    item=item,
                    user=request.user,
                    rating=data["rating"],
                    label=data["label"],
                    categories=list(data["categories"]),
                    verdict_agreement=form.agreement(),
                    comment=data["comment"],
                    quoted_span=data["quoted_span"],
                    seconds_spent=data["seconds_spent"],
                    grain=grain,
                    after_gold=signatures_recheck_queue,
                    locked=True,
                )
            except claims.ReviewError as exc:
                raise Refused(str(exc), 409) from None
    except Refused as refused:
        return render_screen(request, item, form=form, error=str(refused), status=refused.status)
    if access.item_is_blind(item):
        # Blind review: now that the label is in, show what the judges and the other reviewers said.
        return redirect("review_item", item_id=item.pk)
    return next_item_redirect(request, remembered_filters(request))


@require_POST
@login_required
def review_claim(request, item_id: int):
    """Claim this very item (from the queue list); when it is taken, the next one instead."""
    item = item_or_404(request, item_id, screen=False)
    claimed = claims.item_claim(user=request.user, item=item)
    if claimed is None:
        return next_item_redirect(request, remembered_filters(request))
    return redirect("review_item", item_id=claimed.pk)


@require_POST
@login_required
def review_next(request):
    return next_item_redirect(request, remembered_filters(request))


@require_POST
@login_required
def review_skip(request, item_id: int):
    item = item_or_404(request, item_id)
    try:
        reviews.item_skip(item=item, user=request.user, reason=request.POST.get("reason", ""))
    except claims.ReviewError as exc:
        return render_screen(request, item, error=str(exc), status=409)
    return next_item_redirect(request, remembered_filters(request))


@require_POST
@login_required
def review_heartbeat(request, item_id: int):
    """htmx heartbeat from the open review screen: renew the lease and say how long it runs."""
    item = item_or_404(request, item_id, screen=False)
    lost = False
    try:
        claims.lease_renew(item=item, user=request.user)
    except claims.ReviewError:
        lost = True
    context = {"item": item, "lost": lost, "now": timezone.now()}
    return render(request, f"{TEMPLATE}#lease", context)


@require_GET
@login_required
def review_verdicts(request, item_id: int):
    """The verdicts panel alone (htmx); hidden in blind mode until this reviewer has submitted."""
    item = item_or_404(request, item_id)
    return render_screen(request, item, fragment="verdicts")

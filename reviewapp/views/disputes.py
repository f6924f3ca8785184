"""Disputes for leads: items awaiting adjudication, and one item to decide or send back to reviewers."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import access
from ..models import Category, Judge, ReviewItem
from ..selectors import disputes as selectors
from ..selectors import queue as queue_selectors
from ..selectors import verdict_shapes
from ..selectors.quality_slice import scale_labels
from ..services import adjudication as service
from .rendering import render_page

# Leads and admins only: these pages decide gold and show every reviewer's work.
check_lead = access.check_lead


class DecisionForm(forms.Form):
    outcome = forms.ChoiceField(label="Final label", widget=forms.RadioSelect, required=False)
    rating = forms.FloatField(label="Rating", required=False)
    label = forms.CharField(label="Label", max_length=100, required=False)
    categories = forms.ModelMultipleChoiceField(
        label="Failure categories",
        queryset=Category.objects.filter(active=True).order_by("name"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        to_field_name="slug",
    )
    judge_modes = forms.MultipleChoiceField(
        label="This judge's failure modes", widget=forms.CheckboxSelectMultiple, required=False, choices=()
    )
    rationale = forms.CharField(label="Rationale", widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, judge: Judge, categories: list[Category] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.judge = judge
        # The judge's own failure modes beside the shared taxonomy, as on the review form.
        modes = verdict_shapes.review_grain(judge=judge).failure_modes
        if modes:
            self.fields["judge_modes"].choices = [(m, m) for m in modes]
        else:
            del self.fields["judge_modes"]
        self.scale = scale_labels(judge)
        if categories is not None:
            self.fields["categories"].queryset = Category.objects.filter(pk__in=[c.pk for c in categories])
        if self.scale:
            self.fields["outcome"].choices = [(v, v) for v in self.scale]
            self.fields["outcome"].required = True
            del self.fields["rating"], self.fields["label"]
        else:
            del self.fields["outcome"]

    def decision(self) -> dict:
        """The label fields for adjudication_decide, from whichever inputs this judge's scale uses."""
        data = self.cleaned_data
        if not self.scale:
            return {"rating": data.get("rating"), "label": data.get("label", ""), "passed": None}
        value = data["outcome"]
        if value in ("pass", "fail"):
            return {"rating": None, "label": "", "passed": value == "pass"}
        return {"rating": float(value), "label": "", "passed": None}


class SendBackForm(forms.Form):
    note = forms.CharField(label="Note to reviewers", widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)
    to = forms.ChoiceField(
        label="Send to",
        choices=[("original", "Its reviewers, to revise their labels"), ("any", "Any reviewer of the language")],
        initial="original",
        required=False,
        widget=forms.RadioSelect,
    )


def _item_or_404(item_id: int) -> ReviewItem:
    try:
        return selectors.item_for_dispute(item_id=item_id)
    except ReviewItem.DoesNotExist:
        raise Http404("No such review item.") from None


@require_GET
@login_required
def dispute_list(request):
    check_lead(request.user)
    language = request.GET.get("language", "").strip()
    kind = request.GET.get("kind", "").strip()
    if kind not in selectors.KIND_LABELS:
        kind = ""
    items, total = selectors.awaiting_items(language=language, kind=kind)
    context = {
        "items": items,
        "total": total,
        "shown": selectors.DISPUTES_SHOWN,
        "language": language,
        "kind": kind,
        "kinds": selectors.KINDS,
        "languages": sorted(
            set(
                ReviewItem.objects.filter(status=ReviewItem.Status.AWAITING_ADJUDICATION)
                .values_list("language", flat=True)
                .distinct()
            )
        ),
    }
    return render_page(request, "disputes/list.html", "rows", context)


def _detail_context(item: ReviewItem, decision: DecisionForm | None = None, send_back: SendBackForm | None = None):
    detail = selectors.dispute_detail(item=item)
    if decision is None:
        initial = {}
        if detail.adjudication:
            adj = detail.adjudication
            initial = {
                "rationale": adj.rationale,
                "categories": [c.slug for c in adj.categories.all()],
                "rating": adj.rating,
                "label": adj.label,
            }
            value = "pass" if adj.passed else "fail" if adj.passed is False else None
            initial["outcome"] = value or (f"{adj.rating:g}" if adj.rating is not None else None)
        decision = DecisionForm(judge=item.judge, categories=detail.categories, initial=initial)
    return {
        "d": detail,
        "item": item,
        "decision": decision,
        "send_back": send_back or SendBackForm(),
        "can_decide": item.status == ReviewItem.Status.AWAITING_ADJUDICATION
        or (item.status == ReviewItem.Status.CLOSED and detail.adjudication is not None),
        "can_send_back": item.status == ReviewItem.Status.AWAITING_ADJUDICATION,
        "takers": queue_selectors.item_takers(items=[item])[item.pk],
    }


@require_GET
@login_required
def dispute_detail(request, item_id: int):
    check_lead(request.user)
    item = _item_or_404(item_id)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item))


@require_POST
@login_required
def dispute_decide(request, item_id: int):
    check_lead(request.user)
    item = _item_or_404(item_id)
    form = DecisionForm(request.POST, judge=item.judge)
    if form.is_valid():
        try:
            service.adjudication_decide(
                item=item,
                lead=request.user,
                rationale=form.cleaned_data["rationale"],
                categories=form.cleaned_data["categories"],
                failure_modes=form.cleaned_data.get("judge_modes") or (),
                **form.decision(),
            )
        except service.AdjudicationError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("dispute_detail", item_id=item.pk)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item, decision=form), status=400)


@require_http_methods(["POST"])
@login_required
def dispute_send_back(request, item_id: int):
    check_lead(request.user)
    item = _item_or_404(item_id)
    form = SendBackForm(request.POST)
    if form.is_valid():
        try:
            service.item_send_back(
                item=item, lead=request.user, note=form.cleaned_data["note"], to=form.cleaned_data["to"] or "original"
            )
        except service.AdjudicationError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("dispute_detail", item_id=item.pk)
    return render_page(request, "disputes/detail.html", "dispute", _detail_context(item, send_back=form), status=400)

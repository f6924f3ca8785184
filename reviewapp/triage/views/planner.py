"""The label planner for leads: where labels are needed next, and the queue priority that follows it."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from reviewapp.quality.selectors.quality import judge_versions
from reviewapp.quality.selectors.versions import pick_version
from reviewapp.quality.views.judges import judge_for_lead
from reviewapp.rendering import render_page
from reviewapp.triage.selectors.planner import DEFAULT_BUDGET, plan_cells
from reviewapp.triage.services.label_plan import label_plan_apply, plan_terms
from scoring.planner import EVIDENCE_FLOOR


class BudgetForm(forms.Form):
    budget = forms.IntegerField(
        label="Review budget (labels)", min_value=1, max_value=1_000_000, initial=DEFAULT_BUDGET
    )


@require_GET
@login_required
def plan_page(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    versions = judge_versions(judge=judge)
    version = pick_version(versions, request.GET.get("version", "").strip())
    form = BudgetForm(request.GET or None)
    budget = form.cleaned_data["budget"] if form.is_valid() else DEFAULT_BUDGET
    plan = plan_cells(version=version, budget=budget) if version else None
    context = {
        "judge": judge,
        "versions": versions,
        "version": version,
        "form": form,
        "plan": plan,
        "terms": plan_terms(plan) if plan else {},
        "applied": request.GET.get("applied") == "1",
        "floor": EVIDENCE_FLOOR,
    }
    return render_page(request, "planner/index.html", "plan", context)


@require_POST
@login_required
def plan_apply(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    version = pick_version(judge_versions(judge=judge), request.POST.get("version", "").strip())
    form = BudgetForm(request.POST)
    budget = form.cleaned_data["budget"] if form.is_valid() else DEFAULT_BUDGET
    if version is not None:
        label_plan_apply(version=version, budget=budget)
    query = f"?version={version.pk if version else ''}&budget={budget}&applied=1"
    return redirect(reverse("plan_page", args=[judge.slug]) + query)

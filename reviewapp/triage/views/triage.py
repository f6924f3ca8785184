"""Leads queue a dataset's verdicts that need people from the dataset page (as `manage.py triage` does)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_POST

from reviewapp import access
from reviewapp.models import Dataset, Judge
from reviewapp.rendering import render_page
from reviewapp.triage.services.queue_items import DEFAULT_QA_RATE, TriageError, dataset_triage


class TriageForm(forms.Form):
    qa_rate = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_QA_RATE, label="QA sample rate")
    judge = forms.ModelChoiceField(
        queryset=Judge.objects.order_by("slug"), to_field_name="slug", required=False, empty_label="every judge"
    )


@require_POST
@login_required
def dataset_triage_run(request, dataset_id: int):
    access.check_lead(request.user)
    dataset = access.dataset_for_user(request.user, get_object_or_404(Dataset, pk=dataset_id))
    form = TriageForm(request.POST)
    summary, error, status = None, "", 200
    if form.is_valid():
        try:
            summary = dataset_triage(
                dataset=dataset, qa_rate=form.cleaned_data["qa_rate"], judge=form.cleaned_data["judge"]
            )
        except TriageError as failure:
            error, status = str(failure), 400
    else:
        status = 400
    context = {"dataset": dataset, "triage_form": form, "summary": summary, "error": error}
    return render_page(request, "datasets/triage.html", "triage", context, status=status)

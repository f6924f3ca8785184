"""Before/after for leads: two versions of one judge on the same turns, against rerun noise and gold."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..forms_quality import CompareFilterForm
from ..models import Dataset, Judge
from ..selectors import comparisons
from ..selectors import quality as selectors
from . import charts
from .disputes import check_lead
from .quality import _pick_version
from .rendering import render_page

PAGE_BOOTSTRAP = 1000


@require_GET
@login_required
def compare_versions(request, judge_slug: str):
    check_lead(request.user)
    judge = get_object_or_404(Judge, slug=judge_slug)
    versions = selectors.judge_versions(judge=judge)
    b = _pick_version(versions, request.GET.get("b", "").strip())
    a_value = request.GET.get("a", "").strip()
    if a_value:
        a = _pick_version(versions, a_value)
    else:
        earlier = [v for v in versions if b is not None and v.pk != b.pk and v.created_at <= b.created_at]
        a = earlier[-1] if earlier else None
    form = CompareFilterForm(request.GET, datasets=list(Dataset.objects.order_by("name")))
    comparison, status = None, 200
    if not form.is_valid():
        status = 400
    elif a is not None and b is not None and a.pk != b.pk:
        comparison = comparisons.version_comparison(a=a, b=b, n_boot=PAGE_BOOTSTRAP, slice=form.cleaned_data["slice"])
    language = form.cleaned_data.get("language", "") if form.is_valid() else ""
    context = {
        "form": form,
        "judge": judge,
        "versions": versions,
        "a": a,
        "b": b,
        "language": language,
        "c": comparison,
        "movement_chart": charts.heatmap(
            comparison.movement.matrix,
            comparison.movement.labels,
            row_title=f"{a.version}",
            column_title=f"{b.version}",
        )
        if comparison and comparison.compared
        else None,
        "noise_chart": charts.heatmap(
            comparison.noise_movement.matrix,
            comparison.noise_movement.labels,
            row_title=f"{a.version} run",
            column_title=f"{a.version} rerun",
        )
        if comparison and comparison.noise.n
        else None,
    }
    return render_page(request, "compare/index.html", "comparison", context, status=status)

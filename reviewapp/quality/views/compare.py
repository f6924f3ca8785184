"""Before/after for leads: two versions of one judge on the same turns, against rerun noise and gold."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_GET

from reviewapp.models import Dataset
from reviewapp.quality import charts
from reviewapp.quality.forms.quality import CompareFilterForm
from reviewapp.quality.selectors import comparisons
from reviewapp.quality.selectors import quality as selectors
from reviewapp.quality.selectors.versions import compare_pair
from reviewapp.quality.views.judges import judge_for_lead
from reviewapp.rendering import render_page

PAGE_BOOTSTRAP = 1000


@require_GET
@login_required
def compare_versions(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    versions = selectors.judge_versions(judge=judge)
    a, b = compare_pair(versions, a_value=request.GET.get("a", "").strip(), b_value=request.GET.get("b", "").strip())
    form = CompareFilterForm(request.GET, datasets=list(Dataset.objects.order_by("name")))
    comparison, status = None, 200
    if not form.is_valid():
        status = 400
    elif a is not None and b is not None and a.pk != b.pk:
        comparison = comparisons.version_comparison(a=a, b=b, n_boot=PAGE_BOOTSTRAP, slice=form.cleaned_data["slice"])
    context = {
        "form": form,
        "judge": judge,
        "versions": versions,
        "a": a,
        "b": b,
        "language": form.cleaned_data.get("language", "") if form.is_valid() else "",
        "c": comparison,
        **charts.comparison_charts(comparison, a=a, b=b),
    }
    return render_page(request, "compare/index.html", "comparison", context, status=status)

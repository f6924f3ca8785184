"""Judge quality for leads: every judge version against gold, per language, with intervals and trends."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_GET

from reviewapp import access
from reviewapp.models import Dataset, JudgeVersion
from reviewapp.quality import charts
from reviewapp.quality.forms.quality import QualityFilterForm
from reviewapp.quality.selectors import quality as selectors
from reviewapp.quality.selectors import quality_slice
from reviewapp.quality.selectors.versions import pick_version
from reviewapp.quality.views.judges import judge_for_lead
from reviewapp.rendering import render_page

PAGE_BOOTSTRAP = 1000


@require_GET
@login_required
def quality_index(request):
    """Each judge's versions with n, accuracy, macro-F1 and kappa against gold (no intervals: see the judge page)."""
    access.check_lead(request.user)
    rows = [{"judge": judge, "trend": trend} for judge, trend in selectors.quality_overview()]
    return render_page(request, "quality/index.html", "judges", {"rows": rows})


def _version_param(request, versions: list[JudgeVersion]) -> None:
    """An unknown version in the address is a missing page, not a form error."""
    pick_version(versions, request.GET.get("version", "").strip())


@require_GET
@login_required
def quality_judge(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    versions = selectors.judge_versions(judge=judge)
    _version_param(request, versions)
    form = QualityFilterForm(request.GET or None, versions=versions, datasets=list(Dataset.objects.order_by("name")))
    quality = selected = None
    if form.is_bound and not form.is_valid():
        status = 400
    else:
        status = 200
        data = form.cleaned_data if form.is_bound else {}
        version = data.get("version") or (versions[-1] if versions else None)
        slice = data.get("slice") or quality_slice.Slice()
        quality = selectors.judge_quality(
            judge=judge, version=version, n_boot=PAGE_BOOTSTRAP, versions=versions, slice=slice
        )
        selected = quality.selected
    context = {
        "judge": judge,
        "form": form,
        "quality": quality,
        "selected": selected,
        "versions": versions,
        "language": quality.slice.language if quality else "",
        "estimators": quality_slice.ESTIMATORS,
        **charts.quality_charts(quality, selected),
    }
    return render_page(request, "quality/judge.html", "report", context, status=status)

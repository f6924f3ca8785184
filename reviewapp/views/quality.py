"""Judge quality for leads: every judge version against gold, per language, with intervals and trends."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..models import Judge, JudgeVersion
from ..selectors import quality as selectors
from . import charts
from .disputes import check_lead
from .rendering import render_page

PAGE_BOOTSTRAP = 1000


def _pick_version(versions: list[JudgeVersion], value: str) -> JudgeVersion | None:
    if not value:
        return versions[-1] if versions else None
    for version in versions:
        if str(version.pk) == value or version.version == value:
            return version
    raise Http404("No such version of this judge.")


@require_GET
@login_required
def quality_index(request):
    """Each judge's versions with n, accuracy, macro-F1 and kappa against gold (no intervals: see the judge page)."""
    check_lead(request.user)
    rows = [{"judge": judge, "trend": trend} for judge, trend in selectors.quality_overview()]
    return render_page(request, "quality/index.html", "judges", {"rows": rows})


def trend_chart(quality: selectors.JudgeQuality) -> dict:
    return charts.line_chart(
        [v.version.version for v in quality.trend],
        [
            ("Accuracy", [v.overall.accuracy.value for v in quality.trend]),
            ("Macro-F1", [v.overall.macro_f1.value for v in quality.trend]),
            ("Cohen's kappa", [v.overall.kappa.value for v in quality.trend]),
        ],
    )


@require_GET
@login_required
def quality_judge(request, judge_slug: str):
    check_lead(request.user)
    judge = get_object_or_404(Judge, slug=judge_slug)
    versions = selectors.judge_versions(judge=judge)
    version = _pick_version(versions, request.GET.get("version", "").strip())
    language = request.GET.get("language", "").strip()
    quality = selectors.judge_quality(
        judge=judge, version=version, language=language, n_boot=PAGE_BOOTSTRAP, versions=versions
    )
    selected = quality.selected
    context = {
        "judge": judge,
        "quality": quality,
        "selected": selected,
        "versions": versions,
        "language": language,
        "languages": sorted(selected.by_language) if selected and not language else ([language] if language else []),
        "heatmap": charts.heatmap(
            selected.overall.confusion, selected.overall.labels, row_title="Gold", column_title="Judge"
        )
        if selected and selected.overall.n
        else None,
        "trend": trend_chart(quality) if len(quality.trend) > 1 else None,
        "per_class": [
            {"label": label, "f1": selected.overall.per_class_f1.get(label), "support": selected.overall.support[label]}
            for label in selected.overall.labels
        ]
        if selected and selected.overall.n
        else [],
    }
    return render_page(request, "quality/judge.html", "report", context)

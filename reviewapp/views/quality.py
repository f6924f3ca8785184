"""Judge quality for leads: every judge version against gold, per language, with intervals and trends."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from ..forms_quality import QualityFilterForm
from ..models import Dataset, Judge, JudgeVersion
from ..selectors import quality as selectors
from ..selectors import quality_slice
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


def _version_param(request, versions: list[JudgeVersion]) -> None:
    """An unknown version in the address is a missing page, not a form error."""
    _pick_version(versions, request.GET.get("version", "").strip())


@require_GET
@login_required
def quality_judge(request, judge_slug: str):
    check_lead(request.user)
    judge = get_object_or_404(Judge, slug=judge_slug)
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
        "heatmap": charts.heatmap(
            selected.overall.confusion, selected.overall.labels, row_title="Gold", column_title="Judge"
        )
        if selected and selected.overall.n
        else None,
        "trend": trend_chart(quality) if quality and len(quality.trend) > 1 else None,
        "intervals": interval_chart(selected) if selected else None,
        "per_class": [
            {"label": label, "f1": selected.overall.per_class_f1.get(label), "support": selected.overall.support[label]}
            for label in selected.overall.labels
        ]
        if selected and selected.overall.n
        else [],
    }
    return render_page(request, "quality/judge.html", "report", context, status=status)


def interval_chart(selected: selectors.VersionQuality) -> dict | None:
    """Accuracy estimates of the version side by side, each with its 95% interval."""
    rows = [
        (f"unresolved left out (n={n})" if c == "excluded" else f"unresolved wrong (n={n})", e)
        for c, (n, e) in selected.accuracy.items()
    ]
    if selected.qa is not None and selected.qa.accuracy.value is not None:
        rows.append((f"QA sample, Hajek (n={selected.qa.with_gold})", selected.qa.accuracy))
    for row in selected.pass_rates:
        if row.ppi is not None and row.human is not None:
            rows.append((f"{row.language} pass rate, judge (n={row.n_judged})", row.raw))
            rows.append((f"{row.language} pass rate, humans (n={row.n_labelled})", row.human))
            rows.append((f"{row.language} pass rate, PPI", row.ppi))
    rows = [(label, e) for label, e in rows if e.value is not None]
    return charts.interval_chart(rows) if rows else None

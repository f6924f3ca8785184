"""Export pages for leads and admins: snapshot list, new export, snapshot with datasheet and download."""

import re

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from ..models import Dataset, ExportSnapshot, GoldLabel, Judge
from ..selectors import exports as export_selectors
from ..services import exports as exports_service
from ..tasks.exports import snapshot_build_queue
from .rendering import render_page

SNAPSHOTS_SHOWN = 200
LANGUAGE_CODE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
FORMAT_CHOICES = [
    ("jsonl", "JSONL (one row a line)"),
    ("csv", "CSV"),
    ("parquet", "Parquet"),
    ("eva", "EVA validation set (the judge's shape)"),
]


class ExportForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=Judge.objects.order_by("slug"), to_field_name="slug")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="jsonl")
    name = forms.CharField(
        required=False, max_length=150, help_text="Empty: the judge's slug. The same name again makes a new version."
    )
    languages = forms.CharField(
        required=False, max_length=300, help_text="Comma-separated BCP 47 codes (fr covers fr-CA). Empty: every one."
    )
    datasets = forms.ModelMultipleChoiceField(
        queryset=Dataset.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every dataset.",
    )
    gold_sources = forms.MultipleChoiceField(
        choices=[(s.value, s.label) for s in export_selectors.SOURCE_PRIORITY],
        initial=list(export_selectors.SOURCE_PRIORITY),
        widget=forms.CheckboxSelectMultiple,
        help_text="Per target the best source wins: adjudicated, then unanimous, then imported.",
    )
    date_from = forms.DateField(required=False, label="Labelled from", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="Labelled until", widget=forms.DateInput(attrs={"type": "date"}))

    def clean_languages(self) -> list[str]:
        codes = [code.strip() for code in self.cleaned_data["languages"].split(",") if code.strip()]
        bad = [code for code in codes if not LANGUAGE_CODE.match(code)]
        if bad:
            raise forms.ValidationError(f"Not a language code: {', '.join(bad)}.")
        return codes


@require_GET
@login_required
def snapshot_list(request):
    snapshots = export_selectors.snapshots_visible(user=request.user)
    judge = request.GET.get("judge", "").strip()
    if judge:
        snapshots = snapshots.filter(judge__slug=judge)
    context = {
        "snapshots": list(snapshots[:SNAPSHOTS_SHOWN]),
        "judge": judge,
        "judges": list(Judge.objects.order_by("slug").values_list("slug", flat=True)),
    }
    return render_page(request, "exports/list.html", "rows", context)


@require_http_methods(["GET", "POST"])
@login_required
def snapshot_new(request):
    export_selectors.check_snapshot(request.user)
    form = ExportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            snapshot = exports_service.snapshot_create(
                judge=data["judge"],
                fmt=data["format"],
                name=data["name"],
                languages=data["languages"],
                dataset_ids=[dataset.pk for dataset in data["datasets"]],
                gold_sources=data["gold_sources"],
                date_from=data["date_from"],
                date_to=data["date_to"],
                user=request.user,
                build=snapshot_build_queue,
            )
        except exports_service.ExportError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("snapshot_detail", snapshot_id=snapshot.pk)
    return render(request, "exports/new.html", {"form": form, "sources": GoldLabel.Source})


@require_GET
@login_required
def snapshot_detail(request, snapshot_id: int):
    export_selectors.check_snapshot(request.user)
    snapshot = get_object_or_404(ExportSnapshot.objects.select_related("judge", "created_by"), pk=snapshot_id)
    sheet = snapshot.datasheet or {}
    counts = sheet.get("counts") or {}
    classes = sorted(counts.get("by_class") or {})
    language_rows = [
        (language, [per_class.get(name, 0) for name in classes], sum(per_class.values()))
        for language, per_class in sorted((counts.get("by_language_class") or {}).items())
    ]
    context = {
        "snapshot": snapshot,
        "running": snapshot.status in (ExportSnapshot.Status.PENDING, ExportSnapshot.Status.RUNNING),
        "sheet": sheet,
        "counts": counts,
        "classes": classes,
        "class_totals": [(counts.get("by_class") or {}).get(name, 0) for name in classes],
        "language_rows": language_rows,
        "file_name": exports_service.file_name(snapshot),
        "datasheet_name": exports_service.datasheet_name(snapshot),
    }
    return render_page(request, "exports/detail.html", "status", context)


@require_GET
@login_required
def snapshot_download(request, snapshot_id: int):
    export_selectors.check_snapshot(request.user)
    snapshot = get_object_or_404(ExportSnapshot, pk=snapshot_id)
    if snapshot.status != ExportSnapshot.Status.DONE:
        raise Http404("This snapshot is not written yet.")
    path = exports_service.snapshot_path(snapshot)
    if request.GET.get("file") == "datasheet":
        path = path.with_name(exports_service.datasheet_name(snapshot))
    if not path.is_file():
        raise Http404("The file is missing on the server.")
    return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)

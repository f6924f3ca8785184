"""Imports from the browser (leads): upload a file or name a path under the import folder; a worker
imports it and the page shows its progress, then what was written or the line-numbered errors."""

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from reviewapp import access
from reviewapp.corpus.importers import FORMATS
from reviewapp.corpus.services import import_progress
from reviewapp.corpus.services.import_jobs import import_job_start
from reviewapp.models import ImportJob
from reviewapp.rendering import form_write, render_page

FORMAT_LABELS = {
    "auto": "Detect from the file",
    "jsonl": "Tribunal JSONL",
    "csv": "Tribunal CSV",
    "eva-run": "EVA run folder (.zip when uploaded)",
    "eva-validation": "EVA validation set (JSONL)",
}


class ImportForm(forms.Form):
    upload = forms.FileField(required=False, help_text=".jsonl, .csv, or an EVA run folder as a .zip")
    server_path = forms.CharField(
        required=False, max_length=1000, help_text="A file or folder under the server's import folder."
    )
    fmt = forms.ChoiceField(label="Format", choices=[(f, FORMAT_LABELS.get(f, f)) for f in FORMATS], initial="auto")
    dataset_name = forms.CharField(required=False, max_length=200, help_text="Empty: named after the file.")
    language = forms.CharField(required=False, max_length=35, help_text="For records that name none.")
    skip_invalid = forms.BooleanField(
        required=False,
        label="Skip bad records",
        help_text="Import the good records and list the bad ones (default: refuse the whole input).",
    )


def _check_lead(user) -> None:
    access.check_lead(user, "Only leads and admins import data.")


@require_http_methods(["GET", "POST"])
@login_required
def import_new(request):
    _check_lead(request.user)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        # The task (and Celery) load when one is first queued, not with the URLconf.
        from reviewapp.corpus.tasks.import_jobs import import_job_queue

        job = form_write(form, import_job_start, user=request.user, dispatch=import_job_queue, **form.cleaned_data)
        if job is not None:
            return redirect("import_detail", job_id=job.pk)
    context = {
        "form": form,
        "import_root": settings.TRIBUNAL_IMPORT_ROOT,
        "max_bytes": settings.TRIBUNAL_IMPORT_MAX_BYTES,
        "recent": ImportJob.objects.select_related("created_by", "dataset")[:10],
    }
    return render_page(request, "imports/new.html", "", context, status=400 if form.errors else 200)


@require_GET
@login_required
def import_detail(request, job_id: int):
    _check_lead(request.user)
    job = get_object_or_404(ImportJob.objects.select_related("created_by", "dataset"), pk=job_id)
    return render_page(request, "imports/detail.html", "progress", {"job": import_progress.live(job)})

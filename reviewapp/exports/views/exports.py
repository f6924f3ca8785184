"""Export pages for leads and admins: snapshot list, new export, snapshot with datasheet and download."""

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from reviewapp import listings
from reviewapp.exports.forms.exports import ExportForm
from reviewapp.exports.selectors import datasheets
from reviewapp.exports.selectors import exports as export_selectors
from reviewapp.exports.services import exports as exports_service
from reviewapp.models import ExportSnapshot, GoldLabel
from reviewapp.rendering import form_write, render_page


@require_GET
@login_required
def snapshot_list(request):
    chosen = listings.query_filters(request, "judge")
    context = {
        "snapshots": listings.snapshots_listed(user=request.user, judge_slug=chosen["judge"]),
        "judges": listings.judge_slugs(),
        **chosen,
    }
    return render_page(request, "exports/list.html", "rows", context)


@require_http_methods(["GET", "POST"])
@login_required
def snapshot_new(request):
    export_selectors.check_snapshot(request.user)
    form = ExportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        # The task (and Celery) load when one is first queued, not with the URLconf.
        from reviewapp.exports.tasks.exports import snapshot_build_queue

        data = form.cleaned_data
        snapshot = form_write(
            form,
            exports_service.snapshot_create,
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
        if snapshot is not None:
            return redirect("snapshot_detail", snapshot_id=snapshot.pk)
    return render_page(request, "exports/new.html", "", {"form": form, "sources": GoldLabel.Source})


@require_GET
@login_required
def snapshot_detail(request, snapshot_id: int):
    export_selectors.check_snapshot(request.user)
    snapshot = get_object_or_404(ExportSnapshot.objects.select_related("judge", "created_by"), pk=snapshot_id)
    context = {
        "snapshot": snapshot,
        "running": snapshot.status in (ExportSnapshot.Status.PENDING, ExportSnapshot.Status.RUNNING),
        **datasheets.datasheet_table(snapshot=snapshot),
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

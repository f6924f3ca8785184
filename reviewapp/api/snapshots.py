"""Export snapshots over the API: list them, download one (streamed from disk, never read whole)."""

from typing import Literal

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse

from reviewapp.api import schemas
from reviewapp.api.auth import TokenAuth
from reviewapp.api.errors import ApiError
from reviewapp.api.languages import snapshot_in_token_languages
from reviewapp.api.router import ApiRouter
from reviewapp.exports.selectors import exports as export_selectors
from reviewapp.exports.services import exports as exports_service
from reviewapp.models import ExportSnapshot
from reviewapp.people.services.api_tokens import READ_SNAPSHOTS

router = ApiRouter(tags=["snapshots"])

SNAPSHOTS_LISTED = 200
SnapshotStatus = Literal["pending", "running", "done", "failed"]
# FileResponse names the type from the file's extension: text/csv for CSV, octet-stream for the others.
FILE_CONTENT = {"schema": {"type": "string", "format": "binary"}}
DOWNLOAD_OPENAPI = {
    "responses": {
        200: {
            "description": "The file as an attachment.",
            "headers": {
                "X-Checksum-Sha256": {"schema": {"type": "string"}, "description": "sha256 of the file."},
            },
            "content": {"application/octet-stream": FILE_CONTENT, "text/csv": FILE_CONTENT},
        }
    }
}


def snapshot_json(request: HttpRequest, snapshot: ExportSnapshot) -> dict:
    return {
        "id": snapshot.pk,
        "name": snapshot.name,
        "version": snapshot.version,
        "judge": snapshot.judge.slug if snapshot.judge else None,
        "format": snapshot.format,
        "status": snapshot.status,
        "progress": snapshot.progress,
        "rows": snapshot.row_count,
        "sha256": snapshot.sha256 or None,
        "filters": snapshot.filters,
        "code_version": snapshot.code_version,
        "created_at": snapshot.created_at,
        "download_url": (
            request.build_absolute_uri(reverse("api_snapshot_download", args=[snapshot.pk]))
            if snapshot.status == ExportSnapshot.Status.DONE
            else None
        ),
    }


@router.get(
    "/snapshots",
    auth=TokenAuth(READ_SNAPSHOTS),
    response={200: schemas.SnapshotList},
    summary="Export snapshots, newest first (scope read-snapshots; leads and admins)",
)
def snapshot_list(request: HttpRequest, name: str = "", status: SnapshotStatus | None = None):
    snapshots = export_selectors.snapshots_visible(user=request.user)
    if name.strip():
        snapshots = snapshots.filter(name=name.strip())
    if status:
        snapshots = snapshots.filter(status=status)
    listed = [s for s in snapshots[:SNAPSHOTS_LISTED] if snapshot_in_token_languages(request, s)]
    return {"snapshots": [snapshot_json(request, s) for s in listed]}


@router.get(
    "/snapshots/{snapshot_id}/download",
    auth=TokenAuth(READ_SNAPSHOTS),
    response={409: schemas.Error},
    summary="The snapshot's file (scope read-snapshots; leads and admins)",
    openapi_extra=DOWNLOAD_OPENAPI,
)
def snapshot_download(request: HttpRequest, snapshot_id: int):
    export_selectors.check_snapshot(request.user)
    snapshot = export_selectors.check_snapshot(request.user, get_object_or_404(ExportSnapshot, pk=snapshot_id))
    if not snapshot_in_token_languages(request, snapshot):
        raise PermissionDenied(f"This token is limited to {', '.join(request.api_token.languages)}.")
    if snapshot.status != ExportSnapshot.Status.DONE:
        raise ApiError(409, f"Snapshot {snapshot.pk} is {snapshot.status}, not done yet.")
    path = exports_service.snapshot_path(snapshot)
    if not path.is_file():
        raise ApiError(404, f"The file of snapshot {snapshot.pk} is missing on the server.")
    response = FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
    response["X-Checksum-Sha256"] = snapshot.sha256
    return response

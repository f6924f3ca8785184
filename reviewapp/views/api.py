"""The JSON API for CI and scripts (docs/api/openapi.yaml): sweeps, their gate, export snapshots.

Every view authenticates with `Authorization: Bearer <token>` against ApiToken and then acts as the
token's user: same role, same languages, the same access helpers as the pages, and no more than the
token's scopes (read-sweeps, run-sweeps, read-snapshots) and languages allow. These views are
exempt from CSRF because they never read the session cookie: a browser cannot make a request carry
the token on its own. Every answer under /api/ is JSON, errors included: {"error": "...", "status": N}
for 400, 401, 403, 404 (an unknown URL too), 405, 409 and 500.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from scoring.specs import SpecError
from scoring.strictjson import strict_loads

from .. import access
from ..models import Dataset, ExportSnapshot, Sweep
from ..selectors import exports as export_selectors
from ..selectors import sweeps as sweep_selectors
from ..services import exports as exports_service
from ..services import judges as judges_service
from ..services import sweep_scope
from ..services import sweeps as sweeps_service
from ..services.api_tokens import (
    READ_SNAPSHOTS,
    READ_SWEEPS,
    RUN_SWEEPS,
    api_token_authenticate,
    token_has_scope,
    token_language_allowed,
)
from ..tasks.sweeps import sweep_queue

log = logging.getLogger(__name__)

SNAPSHOTS_LISTED = 200


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def error(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"error": message, "status": status}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="tribunal"'
    return response


def _bearer(request: HttpRequest) -> str:
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def token_api(*methods: str, scope: str) -> Callable:
    """Token auth, scope and method checks and JSON errors (every one, 500 included) around an API view."""

    def decorate(view: Callable) -> Callable:
        @csrf_exempt
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            try:
                token = api_token_authenticate(raw=_bearer(request))
                if token is None:
                    return error(401, "Send a live API token: Authorization: Bearer <token>.")
                if request.method not in methods:
                    response = error(405, f"{request.method} is not allowed here; use {', '.join(methods)}.")
                    response["Allow"] = ", ".join(methods)
                    return response
                if not token_has_scope(token, scope):
                    held = ", ".join(token.scopes or ()) or "none"
                    return error(403, f"This token lacks the {scope} scope (it has: {held}).")
                request.user = token.user
                request.api_token = token
                return view(request, *args, **kwargs)
            except ApiError as exc:
                return error(exc.status, exc.message)
            except PermissionDenied as exc:
                return error(403, str(exc) or "Not allowed.")
            except Http404 as exc:
                return error(404, str(exc) or "Not found.")
            except Exception:
                log.exception("API %s %s failed", request.method, request.path)
                return error(500, "The server failed on this request; it is logged. Try again or report it.")

        return wrapped

    return decorate


@csrf_exempt
def not_found(request: HttpRequest, path: str = ""):
    """Any other URL under /api/: a JSON 404, never the HTML page."""
    return error(404, f"No API endpoint at {request.path}; see docs/api/openapi.yaml.")


def _check_token_languages(request, *languages: str) -> None:
    token = request.api_token
    outside = sorted({code for code in languages if not token_language_allowed(token, code)})
    if outside:
        raise PermissionDenied(
            f"This token is limited to {', '.join(token.languages)}; this covers {', '.join(outside)}."
        )


def _json_body(request: HttpRequest) -> dict:
    try:
        body = strict_loads(request.body or b"{}")  # no NaN/Infinity, no duplicate keys
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"The body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ApiError(400, "The body must be a JSON object.")
    return body


def _number(body: dict, key: str, default, kind=float):
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ApiError(400, f"`{key}` must be a number, not {value!r}.")
    if kind is int and not float(value).is_integer():
        raise ApiError(400, f"`{key}` must be a whole number, not {value!r}.")
    return kind(value)


# --- sweeps -------------------------------------------------------------------------------------------


def sweep_json(request, sweep: Sweep) -> dict:
    return {
        "id": sweep.pk,
        "name": sweep.name,
        "kind": sweep.kind,
        "status": sweep.status,
        "dataset": sweep.dataset.name if sweep.dataset else None,
        "language": sweep.language or None,
        "judge_versions": [f"{jv.judge.slug}@{jv.version}" for jv in sweep.judge_versions.all()],
        "repeats": sweep.repeats,
        "counts": {
            "targets": sweep.total_targets,
            "verdicts_written": sweep.verdicts_written,
            "expected_verdicts": int(sweep.params.get("expected_verdicts") or sweep.total_targets),
            "tier1_resolved": sweep.tier1_resolved,
            "escalated": sweep.escalated,
            "unresolved": sweep.unresolved,
            "failed": sweep.failed,
        },
        "code_version": sweep.code_version,
        "signature_versions": [
            {"signature": v.signature_id, "version": v.version} for v in sweep.signature_versions.all()
        ],
        "error": sweep.error or None,
        "created_at": sweep.created_at.isoformat(),
        "started_at": sweep.started_at.isoformat() if sweep.started_at else None,
        "finished_at": sweep.finished_at.isoformat() if sweep.finished_at else None,
        "url": request.build_absolute_uri(reverse("sweep_detail", args=[sweep.pk])),
        "gate_url": request.build_absolute_uri(reverse("api_sweep_gate", args=[sweep.pk])),
    }


def _sweep_for(request, sweep_id: int) -> Sweep:
    sweep = get_object_or_404(
        Sweep.objects.select_related("dataset").prefetch_related("judge_versions__judge", "signature_versions"),
        pk=sweep_id,
    )
    sweep = sweep_selectors.check_sweep(request.user, sweep)
    if request.api_token.languages:
        if sweep.language:
            _check_token_languages(request, sweep.language)
        elif sweep.dataset_id:
            languages = sweep.dataset.conversations.values_list("language", flat=True).distinct()
            _check_token_languages(request, *languages)
    return sweep


@token_api("POST", scope=RUN_SWEEPS)
def sweep_create(request):
    """Start a sweep: {"dataset": NAME or id, "judges": ["slug" or "slug@version", ...], "repeats": 1, ...}."""
    if not access.is_lead(request.user):
        raise PermissionDenied("Only leads and admins start sweeps.")
    body = _json_body(request)
    dataset_ref = body.get("dataset")
    if isinstance(dataset_ref, int) and not isinstance(dataset_ref, bool):
        dataset = Dataset.objects.filter(pk=dataset_ref).first()
    elif isinstance(dataset_ref, str) and dataset_ref:
        dataset = Dataset.objects.filter(name=dataset_ref).first()
    else:
        raise ApiError(400, "`dataset` (a dataset name or id) is required.")
    if dataset is None:
        raise ApiError(404, f"No dataset {dataset_ref!r}.")
    judges = body.get("judges")
    if not isinstance(judges, list) or not judges or not all(isinstance(j, str) for j in judges):
        raise ApiError(400, '`judges` is a list of "slug" or "slug@version".')
    try:
        judge_versions = [judges_service.judge_version_for(ref) for ref in judges]
    except judges_service.JudgeLookupError as exc:
        raise ApiError(400, str(exc)) from exc
    language = body.get("language") or ""
    if not isinstance(language, str):
        raise ApiError(400, "`language` is a BCP 47 code such as fr or fr-CA.")
    if request.api_token.languages:
        if not language:
            raise PermissionDenied(
                f"This token is limited to {', '.join(request.api_token.languages)}: give a `language` among them."
            )
        _check_token_languages(request, language)
    scope_text, category = body.get("scope") or "", body.get("category") or ""
    if not isinstance(scope_text, str) or not isinstance(category, str):
        raise ApiError(400, '`scope` is "commented", "gold" or "moved:A,B"; `category` a category slug.')
    try:
        scope = sweep_scope.scope_parse(scope_text, category=category)
    except sweep_scope.ScopeError as exc:
        raise ApiError(400, str(exc)) from exc
    try:
        sweep = sweeps_service.sweep_start(
            dataset=dataset,
            judge_versions=judge_versions,
            repeats=_number(body, "repeats", 1, int),
            variance_sample=_number(body, "variance_sample", 0.1),
            qa_sample=_number(body, "qa_sample", 0.05),
            language=language,
            user=request.user,
            name=str(body.get("name") or "")[:200],
            scope=scope,
            dispatch=sweep_queue,
        )
    except sweeps_service.SweepError as exc:
        raise ApiError(400, str(exc)) from exc
    sweep = _sweep_for(request, sweep.pk)
    response = JsonResponse(sweep_json(request, sweep), status=201)
    response["Location"] = reverse("api_sweep_detail", args=[sweep.pk])
    return response


@token_api("GET", scope=READ_SWEEPS)
def sweep_detail(request, sweep_id: int):
    return JsonResponse(sweep_json(request, _sweep_for(request, sweep_id)))


@token_api("GET", scope=READ_SWEEPS)
def sweep_gate(request, sweep_id: int):
    """The gate report of `manage.py gate`; `?threshold=CRITERION=RATE` (repeatable) overrides the spec."""
    sweep = _sweep_for(request, sweep_id)
    try:
        overrides = dict(sweep_selectors.parse_threshold(text) for text in request.GET.getlist("threshold"))
    except ValueError as exc:
        raise ApiError(400, str(exc)) from exc
    try:
        report = sweep_selectors.gate_report(sweep=sweep, overrides=overrides)
    except (SpecError, ValueError, KeyError, TypeError) as exc:
        # An import of verdicts carries judge versions without a runnable spec: nothing to gate against.
        kind = "an import of verdicts" if sweep.kind == Sweep.Kind.IMPORT else "a sweep"
        raise ApiError(
            409, f"Sweep {sweep.pk} is {kind} whose judge versions have no spec to gate against: {exc}"
        ) from exc
    return JsonResponse(report.as_dict())


# --- snapshots ----------------------------------------------------------------------------------------


def snapshot_json(request, snapshot: ExportSnapshot) -> dict:
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
        "created_at": snapshot.created_at.isoformat(),
        "download_url": (
            request.build_absolute_uri(reverse("api_snapshot_download", args=[snapshot.pk]))
            if snapshot.status == ExportSnapshot.Status.DONE
            else None
        ),
    }


@token_api("GET", scope=READ_SNAPSHOTS)
def snapshot_list(request):
    snapshots = export_selectors.snapshots_visible(user=request.user)
    name = request.GET.get("name", "").strip()
    if name:
        snapshots = snapshots.filter(name=name)
    status = request.GET.get("status", "").strip()
    if status:
        if status not in ExportSnapshot.Status.values:
            raise ApiError(400, f"`status` is one of {', '.join(ExportSnapshot.Status.values)}.")
        snapshots = snapshots.filter(status=status)
    listed = [s for s in snapshots[:SNAPSHOTS_LISTED] if _snapshot_in_token_languages(request, s)]
    return JsonResponse({"snapshots": [snapshot_json(request, s) for s in listed]})


def _snapshot_languages(snapshot: ExportSnapshot) -> list[str]:
    languages = (snapshot.filters or {}).get("languages") or []
    return [languages] if isinstance(languages, str) else list(languages)


def _snapshot_in_token_languages(request, snapshot: ExportSnapshot) -> bool:
    """A token limited to languages sees a snapshot only when the snapshot is limited to them too."""
    if not request.api_token.languages:
        return True
    languages = _snapshot_languages(snapshot)
    return bool(languages) and all(token_language_allowed(request.api_token, code) for code in languages)


@token_api("GET", scope=READ_SNAPSHOTS)
def snapshot_download(request, snapshot_id: int):
    export_selectors.check_snapshot(request.user)
    snapshot = export_selectors.check_snapshot(request.user, get_object_or_404(ExportSnapshot, pk=snapshot_id))
    if not _snapshot_in_token_languages(request, snapshot):
        raise PermissionDenied(f"This token is limited to {', '.join(request.api_token.languages)}.")
    if snapshot.status != ExportSnapshot.Status.DONE:
        raise ApiError(409, f"Snapshot {snapshot.pk} is {snapshot.status}, not done yet.")
    path = exports_service.snapshot_path(snapshot)
    if not path.is_file():
        raise ApiError(404, f"The file of snapshot {snapshot.pk} is missing on the server.")
    response = FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
    response["X-Checksum-Sha256"] = snapshot.sha256
    return response

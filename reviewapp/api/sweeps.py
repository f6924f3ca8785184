"""Sweeps over the API: start one, follow it, gate CI on it."""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Query, Status

from reviewapp import access
from reviewapp.api import schemas
from reviewapp.api.auth import TokenAuth
from reviewapp.api.errors import ApiError, answer_errors
from reviewapp.api.languages import check_token_languages
from reviewapp.api.router import ApiRouter
from reviewapp.judging.selectors import sweeps as sweep_selectors
from reviewapp.judging.services import judges as judges_service
from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Dataset, JudgeVersion
from reviewapp.models import Sweep as SweepRow
from reviewapp.people.services.api_tokens import READ_SWEEPS, RUN_SWEEPS
from scoring.specs import SpecError

router = ApiRouter(tags=["sweeps"])


def sweep_json(request: HttpRequest, sweep: SweepRow) -> dict:
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
        "created_at": sweep.created_at,
        "started_at": sweep.started_at,
        "finished_at": sweep.finished_at,
        "url": request.build_absolute_uri(reverse("sweep_detail", args=[sweep.pk])),
        "gate_url": request.build_absolute_uri(reverse("api_sweep_gate", args=[sweep.pk])),
    }


def _sweep_for(request: HttpRequest, sweep_id: int) -> SweepRow:
    sweep = get_object_or_404(
        SweepRow.objects.select_related("dataset").prefetch_related("judge_versions__judge", "signature_versions"),
        pk=sweep_id,
    )
    sweep = sweep_selectors.check_sweep(request.user, sweep)
    if request.api_token.languages:
        if sweep.language:
            check_token_languages(request, sweep.language)
        elif sweep.dataset_id:
            languages = sweep.dataset.conversations.values_list("language", flat=True).distinct()
            check_token_languages(request, *languages)
    return sweep


def _dataset(ref: str | int) -> Dataset:
    dataset = Dataset.objects.filter(**({"pk": ref} if isinstance(ref, int) else {"name": ref})).first()
    if dataset is None:
        raise ApiError(404, f"No dataset {ref!r}.")
    return dataset


def _judge_versions(refs: list[str]) -> list[JudgeVersion]:
    with answer_errors(400, judges_service.JudgeLookupError):
        return [judges_service.judge_version_for(ref) for ref in refs]


def _check_start_language(request: HttpRequest, language: str) -> None:
    if request.api_token.languages:
        if not language:
            raise PermissionDenied(
                f"This token is limited to {', '.join(request.api_token.languages)}: give a `language` among them."
            )
        check_token_languages(request, language)


def _scope(payload: schemas.SweepRequest):
    with answer_errors(400, sweep_scope.ScopeError):
        return sweep_scope.scope_parse(payload.scope or "", category=payload.category or "")


@router.post(
    "/sweeps",
    auth=TokenAuth(RUN_SWEEPS),
    response={201: schemas.Sweep},
    summary="Start a sweep (scope run-sweeps; leads and admins)",
    openapi_extra={"responses": {201: {"headers": {"Location": {"schema": {"type": "string"}}}}}},
)
def sweep_create(request: HttpRequest, payload: schemas.SweepRequest, response: HttpResponse):
    """The sweep is planned and queued; `Location` is its API URL."""
    if not access.is_lead(request.user):
        raise PermissionDenied("Only leads and admins start sweeps.")
    dataset = _dataset(payload.dataset)
    judge_versions = _judge_versions(payload.judges)
    language = payload.language or ""
    _check_start_language(request, language)
    with answer_errors(400, sweeps_service.SweepError):
        sweep = sweeps_service.sweep_start(
            dataset=dataset,
            judge_versions=judge_versions,
            repeats=payload.repeats,
            variance_sample=float(payload.variance_sample),
            qa_sample=float(payload.qa_sample),
            language=language,
            user=request.user,
            name=payload.name or "",
            scope=_scope(payload),
            dispatch=sweep_queue,
        )
    response["Location"] = reverse("api_sweep_detail", args=[sweep.pk])
    return Status(201, sweep_json(request, _sweep_for(request, sweep.pk)))


@router.get(
    "/sweeps/{sweep_id}",
    auth=TokenAuth(READ_SWEEPS),
    response={200: schemas.Sweep},
    summary="A sweep's status and counts (scope read-sweeps or run-sweeps)",
)
def sweep_detail(request: HttpRequest, sweep_id: int):
    return sweep_json(request, _sweep_for(request, sweep_id))


@router.get(
    "/sweeps/{sweep_id}/gate",
    auth=TokenAuth(READ_SWEEPS),
    response={200: schemas.GateReport, 409: schemas.Error},
    summary="The gate report (the same as `manage.py gate --json`; scope read-sweeps or run-sweeps)",
)
def sweep_gate(
    request: HttpRequest,
    sweep_id: int,
    threshold: Query[list[str]] = None,  # type: ignore[assignment]
):
    """Pass rate per judge version and criterion on run 0 against its threshold; `passed` is false while
    the sweep is not done. `threshold` is CRITERION=RATE, SLUG:CRITERION=RATE or SLUG@VERSION:CRITERION=RATE,
    repeatable, and overrides the spec. A sweep whose judge versions have no spec (an import of verdicts) is a 409.
    """
    sweep = _sweep_for(request, sweep_id)
    with answer_errors(400, ValueError):
        overrides = dict(sweep_selectors.parse_threshold(text) for text in threshold or ())
    try:
        report = sweep_selectors.gate_report(sweep=sweep, overrides=overrides)
    except (SpecError, ValueError, KeyError, TypeError) as exc:
        # An import of verdicts carries judge versions without a runnable spec: nothing to gate against.
        kind = "an import of verdicts" if sweep.kind == SweepRow.Kind.IMPORT else "a sweep"
        raise ApiError(
            409, f"Sweep {sweep.pk} is {kind} whose judge versions have no spec to gate against: {exc}"
        ) from exc
    return report.as_dict()

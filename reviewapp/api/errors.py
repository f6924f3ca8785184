"""Every answer under /api/ is JSON, errors included: {"error": "...", "status": N}.

The handlers below replace django-ninja's own (`{"detail": ...}`, 422 for bad input, an HTML 405,
Django's HTML 500) so that clients see one error shape with the HTTP status repeated in the body,
and a bad field is a 400 whose message names the field. The shape itself, and the answers the URLconf
routes to without loading ninja (the 404 of an unknown URL, the JSON 405), are in responses.py.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator

from django.core.exceptions import PermissionDenied
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from reviewapp.api.responses import SCHEMA_HINT, error
from scoring.errors import TribunalError

log = logging.getLogger(__name__)


class ApiError(TribunalError, HttpError):
    """An answer other than 2xx, with a message for the person reading the CI log."""


@contextlib.contextmanager
def answer_errors(status: int, *errors: type[Exception]) -> Iterator[None]:
    """Any of `errors` raised in the block is answered as an ApiError with `status` and its message."""
    try:
        yield
    except errors as exc:
        raise ApiError(status, str(exc)) from exc


# pydantic names the branch of a union (`dataset: str | int`) in the error's location: not a field.
UNION_BRANCHES = frozenset(
    {"str", "int", "float", "bool", "none", "list", "dict", "constrained-str", "constrained-int"}
)


def _field(loc: Iterable) -> str:
    # ninja prefixes the source ("body", "query", "path") and, for a body, the view's parameter name.
    parts = [str(p) for p in loc]
    if parts[:1] == ["body"]:
        parts = parts[2:]
    elif parts[:1] in (["query"], ["path"]):
        parts = parts[1:]
    while parts and parts[-1] in UNION_BRANCHES:
        parts.pop()
    return ".".join(parts)


def _problem(name: str, item: dict) -> str:
    kind = item.get("type", "")
    if not name:
        return "The body must be a JSON object." if kind == "missing" or kind.endswith("type") else item.get("msg", "")
    if kind == "extra_forbidden":
        return f"`{name}` is not a field of this request ({SCHEMA_HINT})."
    if kind == "missing":
        return f"`{name}` is required."
    return ""


def validation_message(errors: list[dict]) -> str:
    """One sentence per refused field, naming it: "`repeats`: Input should be a valid integer."; the
    branches of a union are joined: "`dataset`: Input should be a valid string, or ... a valid integer."."""
    sentences: dict[str, str] = {}
    reasons: dict[str, list[str]] = {}
    for item in errors:
        name = _field(item.get("loc", ()))
        problem = _problem(name, item)
        if problem:
            sentences.setdefault(problem, problem)
        else:
            reasons.setdefault(name, []).append(item.get("msg", "is not valid"))
            sentences.setdefault(name, name)
    return " ".join(
        f"`{key}`: {', or '.join(dict.fromkeys(reasons[key]))}." if key in reasons else key for key in sentences
    )


def install_handlers(api: NinjaAPI) -> None:
    def on_validation(request, exc: ValidationError):
        return error(400, validation_message(exc.errors))

    def on_http_error(request, exc: HttpError):
        cause = exc.__cause__
        if not isinstance(exc, ApiError) and isinstance(cause, ValueError):
            # ninja's own 400 when the body parser (site.StrictParser) refused the JSON text: say why.
            return error(400, f"The body is not valid JSON: {cause}")
        return error(exc.status_code, exc.message)

    def on_unauthenticated(request, exc: AuthenticationError):
        return error(401, "Send a live API token: Authorization: Bearer <token>.")

    def on_permission_denied(request, exc: PermissionDenied):
        return error(403, str(exc) or "Not allowed.")

    def on_not_found(request, exc: Http404):
        return error(404, str(exc) or "Not found.")

    def on_failure(request, exc: Exception):
        log.exception("API %s %s failed", request.method, request.path)
        return error(500, "The server failed on this request; it is logged. Try again or report it.")

    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(AuthenticationError, on_unauthenticated)
    api.add_exception_handler(PermissionDenied, on_permission_denied)
    api.add_exception_handler(Http404, on_not_found)
    api.add_exception_handler(Exception, on_failure)

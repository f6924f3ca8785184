"""The one JSON error shape of /api/ ({"error": "...", "status": N}), in plain Django.

The site's URLconf routes to these without loading django-ninja, pydantic and the API schemas, which
errors.py and site.py build on; they are loaded on the first API request.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponseNotAllowed, JsonResponse

SCHEMA_HINT = "see docs/api/openapi.yaml"


def error(status: int, message: str) -> JsonResponse:
    response = JsonResponse({"error": message, "status": status}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="tribunal"'
    return response


def not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Any other URL under /api/: a JSON 404, never the HTML page."""
    return error(404, f"No API endpoint at {request.path}; {SCHEMA_HINT}.")


not_found.csrf_exempt = True  # type: ignore[attr-defined]  # it reads nothing and writes nothing


def json_method_not_allowed(view: Callable) -> Callable:
    """django-ninja answers a wrong method with a plain-text 405; keep its Allow header, answer JSON."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        response = view(request, *args, **kwargs)
        if isinstance(response, HttpResponseNotAllowed):
            allowed = response["Allow"]
            replaced = error(405, f"{request.method} is not allowed here; use {allowed}.")
            replaced["Allow"] = allowed
            return replaced
        return response

    return wrapped

"""The API's URLs, declared here so that loading the URLconf (every page, `manage.py check`) does not
build the API: django-ninja, pydantic and the schemas are loaded on the first request under /api/v1/.

OPERATIONS is ninja's own URL table (site.api.urls, without its root page), as tests/reviewapp/api
checks: each path answers through the ninja view of the same name, and a wrong method in JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import include, path, re_path

from reviewapp.api.responses import json_method_not_allowed, not_found

OPERATIONS = (
    ("sweeps", "api_sweep_create"),
    ("sweeps/<sweep_id>", "api_sweep_detail"),
    ("sweeps/<sweep_id>/gate", "api_sweep_gate"),
    ("snapshots", "api_snapshot_list"),
    ("snapshots/<snapshot_id>/download", "api_snapshot_download"),
)


@functools.cache
def ninja_views() -> dict[str, Callable]:
    """ninja's view of each operation by URL name, built with the API on first use."""
    from reviewapp.api.site import api

    return {pattern.name: pattern.callback for pattern in api.urls[0] if pattern.name != "api-root"}


def _operation(name: str) -> Callable:
    @json_method_not_allowed
    def view(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        return ninja_views()[name](request, *args, **kwargs)

    view.__name__ = view.__qualname__ = name
    # As ninja's own views: the token is read from a header, never a cookie (see auth.py).
    view.csrf_exempt = True  # type: ignore[attr-defined]
    return view


urlpatterns = [
    path("api/v1/", include([path(route, _operation(name), name=name) for route, name in OPERATIONS])),
    # Last: any other URL under /api/ answers a JSON 404 (/api/v1/ too: ninja's root page is left out).
    re_path(r"^api(?:/(?P<path>.*))?$", not_found, name="api_not_found"),
]

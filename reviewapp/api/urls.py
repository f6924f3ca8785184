from django.urls import include, path, re_path

from reviewapp.api.errors import json_method_not_allowed, not_found
from reviewapp.api.site import api


def _operations() -> list:
    """ninja's URL patterns (named api_sweep_create ... with no namespace), each answering a wrong method in
    JSON; ninja's own root page is left out, so /api/v1/ is the JSON 404 below like any other unknown URL."""
    patterns = [pattern for pattern in api.urls[0] if pattern.name != "api-root"]
    for pattern in patterns:
        pattern.callback = json_method_not_allowed(pattern.callback)
    return patterns


urlpatterns = [
    path("api/v1/", include(_operations())),
    # Last: any other URL under /api/ answers a JSON 404.
    re_path(r"^api(?:/(?P<path>.*))?$", not_found, name="api_not_found"),
]

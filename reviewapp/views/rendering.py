"""How every view answers: the full page, or the named Django 6 partial when htmx swaps a fragment."""

from django.shortcuts import render
from django.utils.cache import patch_vary_headers


def wants_fragment(request) -> bool:
    """An htmx swap gets the partial; a history restore (back button after a cache miss) needs the full page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(request, template: str, fragment: str, context: dict, *, status: int = 200):
    """Render `template`, or `template#fragment` for an htmx swap; caches keep the two apart (Vary)."""
    name = f"{template}#{fragment}" if wants_fragment(request) else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response

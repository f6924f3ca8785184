"""How every view answers: the full page, or the named Django 6 partial when htmx swaps a fragment."""

from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRedirect


def wants_fragment(request) -> bool:
    """An htmx swap gets the partial; a history restore (back button after a cache miss) needs the full page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(request, template: str, fragment: str, context: dict, *, status: int = 200):
    """Render `template`, or `template#fragment` for an htmx swap; caches keep the two apart (Vary).

    Every view answers through here. A page with no fragment passes fragment="" and is always whole."""
    name = f"{template}#{fragment}" if fragment and wants_fragment(request) else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def form_success(request, url: str):
    """After a form's write: a plain redirect, or for htmx a client-side one (HX-Redirect on a 200), so
    the browser goes to `url` and its address bar says so, instead of swapping that page into the form.

    A form that fails answers its partial with 400 (or 409/422), which base.html's htmx config swaps in
    place, so the errors show where the form was."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)

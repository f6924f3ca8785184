"""How every view answers: the full page, or the named Django 6 partial when htmx swaps a fragment; a
form's write, its refusal shown on the form; a 404 when the address names nothing."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRedirect

from scoring.errors import TribunalError


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


def form_write[T](form, write: Callable[..., T], /, **arguments) -> T | None:
    """`write(**arguments)`: the service a valid form calls. When the service refuses (a TribunalError),
    its reason becomes the form's error and the answer is None, so the view shows the form again. The
    service must therefore return a value (not None) when it succeeds: None is read as a refusal."""
    try:
        return write(**arguments)
    except TribunalError as exc:
        form.add_error(None, str(exc))
        return None


def found_or_404[T](find: Callable[..., T], missing: str, /, **lookup) -> T:
    """`find(**lookup)`, a selector that gets the one object an address names, or a 404 saying `missing`."""
    try:
        return find(**lookup)
    except ObjectDoesNotExist:
        raise Http404(missing) from None

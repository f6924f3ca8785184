"""The screens of this stage that show on GET and take a form on POST: the review screen and a turn's
comment thread."""

from collections.abc import Callable

from django import forms
from django.http import HttpResponse


def posted_form(
    request, form_class: type[forms.Form], show: Callable[..., HttpResponse], *, invalid: str
) -> tuple[forms.Form | None, HttpResponse | None]:
    """(the valid form, None) for a POST to act on; else (None, the screen to answer): `show()` for a GET,
    and for an invalid form `show(form=..., error=invalid, status=400)`."""
    if request.method == "GET":
        return None, show()
    form = form_class(request.POST)
    if not form.is_valid():
        return None, show(form=form, error=invalid, status=400)
    return form, None

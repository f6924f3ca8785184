"""URLs reversed once and remembered: `{% url %}` (templatetags.remembered_urls) and the navigation.

Django reverses a URL afresh on every call: its patterns for the name tried in turn, the arguments
checked and quoted, about 33 us a call on the 2-core machines of docs/performance.md, where the queue
page and the review screen reverse 13 and 14 URLs each (the navigation, the item's forms and links). A
URL is a function of its name, its arguments, the current application, the script prefix and the URL
configuration, so one built from the same five is kept (the last KEPT_URLS of them) and given again.
Only URLs whose name and arguments are all strings and integers are kept: any other argument (a model
instance, a lazy string) is turned into text by the reversing itself, and its text may change. A name
that does not reverse raises NoReverseMatch as `reverse` does, every time (nothing is kept for it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from django.urls import get_resolver, get_script_prefix, get_urlconf, reverse

KEPT_URLS = 4096


@functools.lru_cache(maxsize=KEPT_URLS)
def _reversed(view_name, args, kwargs, current_app, prefix, resolver) -> str:
    # `prefix` and `resolver` (the URL configuration's: a new one after the configuration changes) are
    # only part of the key; reverse reads both for itself.
    return reverse(view_name, args=args, kwargs=dict(kwargs), current_app=current_app)


def _plain(value) -> bool:
    return isinstance(value, str) or type(value) is int


def remembered_reverse(
    view_name, args: Sequence = (), kwargs: Mapping | None = None, current_app: str | None = None
) -> str:
    """`reverse(view_name, args=args, kwargs=kwargs, current_app=current_app)`, remembered where it can be."""
    kwargs = kwargs or {}
    if _plain(view_name) and all(map(_plain, args)) and all(map(_plain, kwargs.values())):
        return _reversed(
            view_name, tuple(args), tuple(kwargs.items()), current_app, get_script_prefix(), get_resolver(get_urlconf())
        )
    return reverse(view_name, args=args, kwargs=kwargs, current_app=current_app)

"""Views routed by module and name, imported on their first request instead of with the URLconf.

The URLconf is loaded by every command's system checks and by a server before its first answer; importing each view
there imports every selector, service and form behind them. Routed through `views_in(module)`, a view's
module is imported when a request reaches it (or when its attributes are read, as CsrfViewMiddleware
reads `csrf_exempt`), and `reverse()` and `{% url %}` need only the URL names. Function views only: a
class-based view's `as_view()` is routed as it is. tests/reviewapp/site/test_lazy_views.py loads every one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cached_property
from importlib import import_module

from django.core.exceptions import ImproperlyConfigured


class LazyView:
    """The view function `name` of `module`, which stands in for it in a URL pattern."""

    def __init__(self, module: str, name: str):
        # The URL resolver and ResolverMatch name a view by these two (resolve(path)._func_path).
        self.__module__ = module
        self.__name__ = self.__qualname__ = name

    def __repr__(self) -> str:
        return f"<lazy view {self.__module__}.{self.__name__}>"

    @cached_property
    def view(self) -> Callable:
        """The view itself, its module imported on first use."""
        try:
            view = getattr(import_module(self.__module__), self.__name__)
        except (ImportError, AttributeError) as exc:
            # Not an AttributeError: getattr(view, "csrf_exempt", False) would take it for a missing attribute.
            raise ImproperlyConfigured(f"The URLconf routes to {self.__module__}.{self.__name__}: {exc}") from exc
        if not inspect.isfunction(view) or hasattr(view, "view_class") or inspect.iscoroutinefunction(view):
            raise ImproperlyConfigured(
                f"{self.__module__}.{self.__name__} is not a function view (route as_view() as it is)."
            )
        return view

    def __call__(self, request, *args, **kwargs):
        return self.view(request, *args, **kwargs)

    def __getattr__(self, name: str):
        # What Django and middleware read off a view (csrf_exempt, _non_atomic_requests ...) is the view's.
        # view_class, which the URL resolver looks for while it builds its reverse() table, is never one:
        # answering without the import keeps {% url %} from importing every view.
        if name == "view_class" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.view, name)


class ViewsIn:
    """`views_in("reviewapp.triage.views.queue").queue_index` is the LazyView of that function."""

    def __init__(self, module: str):
        self._module = module

    def __getattr__(self, name: str) -> LazyView:
        if name.startswith("_"):
            raise AttributeError(name)
        return LazyView(self._module, name)


def views_in(module: str) -> ViewsIn:
    return ViewsIn(module)


def lazy_views_routed(resolver=None) -> list[LazyView]:
    """Every LazyView the URLconf routes to."""
    from django.urls import get_resolver

    found: list[LazyView] = []
    for entry in (resolver or get_resolver()).url_patterns:
        if hasattr(entry, "url_patterns"):
            found.extend(lazy_views_routed(entry))
        elif isinstance(entry.callback, LazyView):
            found.append(entry.callback)
    return found


def load_site() -> None:
    """What a server loads before its first request: every view, the API and the task queue's app.

    wsgi.py and asgi.py call this, commands do not. With gunicorn's preload_app the master imports all of
    it once and its workers share that code, so no reviewer's first request to a page (or a worker's
    after a restart) pays for importing it, and a view that cannot be imported stops the server at start.
    """
    for view in lazy_views_routed():
        view.view  # noqa: B018 - the import is the point
    from reviewapp import celery  # noqa: F401
    from reviewapp.api.urls import ninja_views

    ninja_views()

"""The URLconf routes to views by module and name (reviewapp/lazy_views.py): each is the function it names,
is imported by the first request that reaches it, and answers exactly as the function does."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import get_resolver, resolve, reverse

from reviewapp.lazy_views import LazyView, views_in
from reviewapp.triage.views import queue

ROOT = Path(__file__).resolve().parents[3]


def lazy_views(resolver=None) -> list[LazyView]:
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        if hasattr(entry, "url_patterns"):
            found += lazy_views(entry)
        elif isinstance(entry.callback, LazyView):
            found.append(entry.callback)
    return found


def test_every_view_the_urlconf_names_is_that_function_of_that_module():
    views = lazy_views()
    assert len(views) >= 60  # the whole site, not a part of it
    for lazy in views:
        loaded = lazy.view
        assert loaded.__name__ == lazy.__name__
        assert sys.modules[lazy.__module__].__dict__[lazy.__name__] is loaded


def test_a_resolved_url_names_the_view_function_as_before():
    match = resolve(reverse("queue_index"))
    assert match._func_path == "reviewapp.triage.views.queue.queue_index"
    assert match.func.view is queue.queue_index
    assert match.url_name == "queue_index"


def test_attributes_read_off_a_view_are_the_functions_own():
    assert views_in("reviewapp.api.responses").not_found.csrf_exempt is True
    assert getattr(views_in("reviewapp.triage.views.queue").queue_index, "csrf_exempt", False) is False


def test_a_wrong_name_is_a_configuration_error_and_never_a_missing_attribute():
    wrong = views_in("reviewapp.triage.views.queue").queue_indx
    with pytest.raises(ImproperlyConfigured, match="queue_indx"):
        getattr(wrong, "csrf_exempt", False)
    with pytest.raises(ImproperlyConfigured, match="no_such_module"):
        views_in("reviewapp.triage.views.no_such_module").queue_index(None)


def test_a_class_based_view_is_refused():
    with pytest.raises(ImproperlyConfigured, match="not a function view"):
        views_in("django.contrib.auth.views").LoginView(None)


PROBE = """
import json, sys
import django
django.setup()
from django.test import Client
from django.test.utils import setup_test_environment
from django.urls import reverse
setup_test_environment()
urls = [reverse(name) for name in ("queue_index", "review_next", "snapshot_list", "quality_index")]
status = Client().get(reverse("dispute_list")).status_code
print(json.dumps([urls, status, sorted(name for name in sys.modules if name.startswith("reviewapp.") and ".views." in name)]))
"""


def test_reverse_imports_no_view_and_a_request_imports_only_its_own():
    env = {"DJANGO_SETTINGS_MODULE": "reviewapp.settings", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, env=env
    )
    urls, status, views = json.loads(result.stdout.strip().splitlines()[-1])
    assert urls == ["/queue/", "/review/next/", "/exports/", "/quality/"]
    assert status == 302  # to the login page: the view's own login_required ran
    assert views == ["reviewapp.adjudication.views.disputes"]

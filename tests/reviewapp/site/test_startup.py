"""A process that serves pages or runs a command does not load the heavy libraries until it uses them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = (
    *("scipy", "sklearn", "pandas", "openai", "statsmodels", "ppi_py", "pyarrow", "krippendorff", "numpy"),
    # The API (django-ninja, pydantic and the schemas) loads on the first request under /api/v1/, Celery
    # when a task is first queued.
    *("ninja", "pydantic", "pydantic_core", "celery", "kombu"),
)
ENV = {"DJANGO_SETTINGS_MODULE": "reviewapp.settings", "PATH": "/usr/bin:/bin"}

PROBE = """
import json, sys
import django
from django.core.management import call_command
django.setup()
from django.urls import URLPattern, get_resolver
from reviewapp.lazy_views import LazyView

def patterns(resolver):
    for entry in resolver.url_patterns:
        yield from patterns(entry) if hasattr(entry, "url_patterns") else [entry]

for pattern in patterns(get_resolver()):
    if isinstance(pattern.callback, LazyView):
        pattern.callback.view  # imports every view, selector and service the site routes to
call_command("check", verbosity=0)
# A module imported lazily (scoring.lazy) is in sys.modules before it has run: that one is not loaded.
print(json.dumps(sorted(
    name for name, module in sys.modules.items()
    if name.split(".")[0] in HEAVY and type(module).__name__ != "_LazyModule"
)))
"""


def test_loading_the_site_and_running_check_imports_no_heavy_library():
    env_code = f"HEAVY = {HEAVY!r}\n" + PROBE
    result = subprocess.run(
        [sys.executable, "-c", env_code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == []


# `manage.py COMMAND` as a user runs it, then the names of the modules it left imported.
COMMAND = """
import json, runpy, sys
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
print(json.dumps(sorted(sys.modules)))
"""


def imported_by(*command: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", COMMAND, *command], cwd=ROOT, capture_output=True, text=True, check=True, env=ENV
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_manage_py_check_imports_no_view_api_schema_celery_or_heavy_library():
    modules = imported_by("check")
    assert {"reviewapp.urls", "reviewapp.models", "reviewapp.admin"} <= set(modules)  # the site was loaded
    assert [name for name in modules if name.split(".")[0] in HEAVY] == []
    app = [name for name in modules if name.startswith("reviewapp.")]
    assert [name for name in app if ".views." in name] == []
    assert [name for name in app if name.startswith("reviewapp.api.")] == [
        "reviewapp.api.responses",
        "reviewapp.api.urls",
    ]
    assert [name for name in app if ".tasks" in name or name == "reviewapp.celery"] == []
    assert [name for name in app if name.startswith("reviewapp.corpus.importers")] == []


TASKS_PROBE = """
import json, sys, threading
from importlib import import_module
import django
django.setup()
task = getattr(import_module(sys.argv[1]), sys.argv[2])
seen = []
# In another thread, as a server's request threads send them.
thread = threading.Thread(target=lambda: seen.extend([task.app.main, task.app.conf.broker_url]))
thread.start()
thread.join()
print(json.dumps(seen))
"""


@pytest.mark.parametrize(
    "module, task",
    [
        ("reviewapp.corpus.tasks.import_jobs", "import_job_task"),
        ("reviewapp.exports.tasks.exports", "snapshot_build"),
        ("reviewapp.judging.tasks.retention", "judge_calls_purge_old"),
    ],
)
def test_a_task_is_sent_with_the_sites_celery_app_though_nothing_loaded_it_first(module, task):
    result = subprocess.run(
        [sys.executable, "-c", TASKS_PROBE, module, task], cwd=ROOT, capture_output=True, text=True, check=True, env=ENV
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["tribunal", "filesystem://"]


SERVER = """
import json, sys
import reviewapp.wsgi
from reviewapp.lazy_views import lazy_views_routed
views = lazy_views_routed()
print(json.dumps({
    "views": len(views),
    "loaded": sum("view" in vars(view) for view in views),
    "api": "reviewapp.api.site" in sys.modules,
    "celery": "reviewapp.celery" in sys.modules,
}))
"""


@pytest.mark.parametrize("module", ["wsgi", "asgi"])
def test_a_server_loads_every_view_the_api_and_celery_before_its_first_request(module):
    result = subprocess.run(
        [sys.executable, "-c", SERVER.replace("reviewapp.wsgi", f"reviewapp.{module}")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["views"] > 50
    assert loaded == {"views": loaded["views"], "loaded": loaded["views"], "api": True, "celery": True}


WORKER_START = """
import gc, json, sys
import django
django.setup()
from celery.signals import worker_init
from reviewapp.celery import WORKER_PRELOAD, app
before = [name for name in WORKER_PRELOAD if name in sys.modules]
worker_init.send(sender=None)  # what `celery worker` sends in its main process, before it forks its pool
print(json.dumps({"before": before, "after": [name for name in WORKER_PRELOAD if name in sys.modules],
                  "frozen": gc.get_freeze_count()}))
"""


def test_a_worker_loads_what_its_tasks_import_before_its_pool_forks_and_freezes_it_out_of_the_collector():
    """Loading the site's Celery app loads neither pyarrow nor openai; a worker's start does, once, and
    leaves every object loaded by then out of the garbage collector's walks (tests/integration's
    test_export_worker checks a real worker's pool processes start with pyarrow mapped)."""
    result = subprocess.run([sys.executable, "-c", WORKER_START], cwd=ROOT, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["before"] == []
    assert set(loaded["after"]) >= {"pyarrow", "pyarrow.parquet", "pyarrow.csv", "openai"}
    assert loaded["frozen"] > 10_000

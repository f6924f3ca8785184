"""The production server setup: gunicorn sized from the machine, PostgreSQL connections kept per thread.

Both run in a subprocess with a controlled environment: settings and gunicorn.conf.py are read once at
start-up, from the environment and the CPUs the process may use.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[3]

PRINT_DATABASE = """
import json
import django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({"max_age": db["CONN_MAX_AGE"], "health": db.get("CONN_HEALTH_CHECKS", False)}))
"""

PRINT_GUNICORN = """
import json, runpy
conf = runpy.run_path("gunicorn.conf.py")
print(json.dumps({k: conf[k] for k in ("workers", "threads", "worker_class", "bind", "wsgi_app", "preload_app")}))
"""


def run(code: str, *, one_cpu: bool = False, **env: str) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "GUNICORN_"))}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=(lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_cpu else None,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "reviewapp.production",
    "DJANGO_SECRET_KEY": "a-test-secret-key-that-is-long-enough-for-the-deploy-checks-0123456789",
    "DJANGO_ALLOWED_HOSTS": "tribunal.example.org",
    "DATABASE_URL": "postgres://tribunal:secret@db.internal:5432/tribunal_prod",
}


def test_production_keeps_each_postgresql_connection_and_checks_it_before_reuse(tmp_path):
    values = run(PRINT_DATABASE, TRIBUNAL_VAR_DIR=str(tmp_path), **PRODUCTION)
    assert values == {"max_age": 600, "health": True}


def test_the_connection_lifetime_comes_from_the_environment(tmp_path):
    values = run(PRINT_DATABASE, TRIBUNAL_VAR_DIR=str(tmp_path), DATABASE_CONN_MAX_AGE="30", **PRODUCTION)
    assert values == {"max_age": 30, "health": True}


def test_gunicorn_runs_one_threaded_worker_per_core_plus_one():
    values = run(PRINT_GUNICORN, one_cpu=True)
    assert values == {
        "workers": 2,
        "threads": 4,
        "worker_class": "gthread",
        "bind": "127.0.0.1:8000",
        "wsgi_app": "reviewapp.wsgi:application",
        "preload_app": True,
    }


def test_gunicorn_sizing_is_overridden_from_the_environment():
    values = run(PRINT_GUNICORN, GUNICORN_WORKERS="7", GUNICORN_THREADS="2", GUNICORN_BIND="0.0.0.0:9000")
    assert (values["workers"], values["threads"], values["bind"]) == (7, 2, "0.0.0.0:9000")

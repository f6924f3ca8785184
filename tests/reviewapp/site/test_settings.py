"""Settings come from the environment: a fresh clone runs on SQLite and a serverless broker,
DATABASE_URL switches to PostgreSQL, and the production settings pass Django's deploy checks.

Each case runs in a subprocess with a controlled environment, because settings are read once at
start-up and this test process may itself run on PostgreSQL (`make test-postgres`).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[3]
SETTINGS_VARIABLES = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "TRIBUNAL_VAR_DIR",
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_SECRET_KEY",
    "DJANGO_ALLOWED_HOSTS",
    "DJANGO_DEBUG",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)
PRINT_SETTINGS = """
import json
import django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST", ""), "port": str(db.get("PORT", "")),
    "user": db.get("USER", ""), "broker": settings.CELERY_BROKER_URL,
    "broker_options": {k: str(v) for k, v in settings.CELERY_BROKER_TRANSPORT_OPTIONS.items()},
    "var_dir": str(settings.VAR_DIR), "debug": settings.DEBUG, "llm": settings.LLM_TIER_ENABLED,
}))
"""


def clean_env(**overrides: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARIABLES}
    env["DJANGO_SETTINGS_MODULE"] = "reviewapp.settings"
    env.update(overrides)
    return env


def settings_in_subprocess(**overrides: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        cwd=PROJECT_DIR,
        env=clean_env(**overrides),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_production_settings_pass_the_deploy_checks():
    env = clean_env(
        DJANGO_SETTINGS_MODULE="reviewapp.production",
        DJANGO_SECRET_KEY="test-only-" + "k7#Qm2@vX9!pL4$wR8^zT1&nB6*yH3(eJ5)" * 2,
        DJANGO_ALLOWED_HOSTS="tribunal.example.org",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (0 silenced)." in result.stdout
    assert "WARNINGS" not in result.stderr + result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = clean_env(DJANGO_SETTINGS_MODULE="reviewapp.production", DJANGO_ALLOWED_HOSTS="tribunal.example.org")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_default_settings_use_sqlite_under_var_and_the_filesystem_broker():
    values = settings_in_subprocess()
    var_dir = PROJECT_DIR / "var"
    assert values["engine"] == "django.db.backends.sqlite3"
    assert Path(values["name"]) == var_dir / "tribunal.sqlite3"
    assert Path(values["var_dir"]) == var_dir
    assert values["broker"] == "filesystem://"
    assert Path(values["broker_options"]["data_folder_in"]) == var_dir / "broker" / "in"
    assert values["llm"] is False


def test_database_url_switches_to_postgresql(tmp_path):
    values = settings_in_subprocess(
        DATABASE_URL="postgres://tribunal:secret@db.internal:6543/tribunal_prod",
        CELERY_BROKER_URL="redis://cache.internal:6379/2",
        TRIBUNAL_VAR_DIR=str(tmp_path),
    )
    assert values["engine"] == "reviewapp.postgresql"  # Django's, with a health check that asks the socket first
    assert values["name"] == "tribunal_prod"
    assert (values["host"], values["port"], values["user"]) == ("db.internal", "6543", "tribunal")
    assert values["broker"] == "redis://cache.internal:6379/2"
    assert "data_folder_in" not in values["broker_options"]
    # Sized to the longest sweep chunk (300 s soft + 60 s hard limit) plus a minute, not an hour.
    assert values["broker_options"]["visibility_timeout"] == "420"


def test_a_task_queued_by_a_test_lands_in_the_sessions_broker_folder_not_in_var(broker_outside_var, settings):
    """The worker `make run` starts reads var/broker: a test's task left there would run against the
    demo database (a sweep dispatched by id, say). Tests queue into a folder of their own."""
    if broker_outside_var is None:
        pytest.skip("the broker comes from the environment (no folder to keep apart)")
    from reviewapp.celery import app
    from reviewapp.judging.tasks.sweeps import sweep_dispatch

    var_in = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    before = set(var_in.iterdir()) if var_in.exists() else set()
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False  # queued, as a worker would receive it
    try:
        sweep_dispatch.delay(987654)
    finally:
        app.conf.task_always_eager = previous
    assert [path.read_text().count("987654") for path in (broker_outside_var / "in").iterdir()] == [1]
    assert (set(var_in.iterdir()) if var_in.exists() else set()) == before

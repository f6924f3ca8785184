"""Integration tests run against real PostgreSQL, real Redis and a real Celery worker process.

Run them with `make test` (or `make test-integration`), which points DATABASE_URL at PostgreSQL so
pytest-django creates `test_<name>` there. When a service is missing the tests here skip, naming it;
with TRIBUNAL_REQUIRE_SERVICES=1 or CI=true the whole run fails instead, because a CI run that
skipped its integration tests proved nothing.

Fixtures:
- `celery_worker_process`: a running worker (see harness.CeleryWorker: kill(), restart(), log());
  tests using it get `transactional_db`, because the worker only sees committed rows.
- `wait_until`: poll a predicate until it holds (harness.wait_until).
- `redis_broker_url`: the Redis database used as broker, flushed once per session.
- `start_llm_worker(env=..., **server_options)`: the worker restarted with its LLM tier pointing at a
  local tests/llm_server.py (run_llm_server's options) and any extra environment; gives (worker,
  server). After the test the worker is restarted without them.
- `llm_worker`: start_llm_worker's (worker, server) with the server answering well; a test marked
  `@pytest.mark.llm_server(latency_s=..., env={...})` passes those options.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.integration import harness

HERE = Path(__file__).resolve().parent


def _integration_items(items: list[pytest.Item]) -> list[pytest.Item]:
    return [item for item in items if HERE in Path(str(item.path)).resolve().parents]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ours = _integration_items(items)
    if not ours:
        return
    from django.conf import settings

    problems = [
        problem
        for problem in (
            harness.postgres_problem(settings.DATABASES["default"]),
            harness.redis_problem(harness.redis_url()),
        )
        if problem
    ]
    for item in ours:
        item.add_marker(pytest.mark.integration)
    if not problems:
        return
    if harness.services_required():
        pytest.exit(
            "Integration services are required (TRIBUNAL_REQUIRE_SERVICES=1 or CI=true) but missing:\n  "
            + "\n  ".join(problems),
            returncode=pytest.ExitCode.TESTS_FAILED,
        )
    skip = pytest.mark.skip(reason="; ".join(problems))
    for item in ours:
        item.add_marker(skip)


@pytest.fixture(name="wait_until")
def wait_until_fixture():
    return harness.wait_until


@pytest.fixture(scope="session")
def redis_broker_url() -> str:
    """The Redis broker for this session, emptied first so no message from an earlier run is delivered."""
    from reviewapp.celery import app

    url = harness.redis_url()
    harness.redis_flush(url)
    # The test process publishes tasks; the worker consumes them from the same Redis database.
    app.conf.broker_url = url
    app.conf.broker_transport_options = {"visibility_timeout": 3600}
    app.conf.task_always_eager = False
    return url


@pytest.fixture(scope="session")
def _celery_worker_session(django_db_setup, django_db_blocker, redis_broker_url):
    from django.db import connection

    with django_db_blocker.unblock():
        # After django_db_setup the connection's NAME is the test database (test_<name>).
        test_database = connection.settings_dict["NAME"]
    worker = harness.CeleryWorker(
        database_url=harness.database_url_for(harness.database_url(), test_database),
        broker_url=redis_broker_url,
    )
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def celery_worker_process(_celery_worker_session, transactional_db):
    """A real Celery worker on the test database; started once per session, restarted if a test killed it."""
    worker = _celery_worker_session
    if not worker.alive:
        worker.start()
    return worker


@pytest.fixture
def start_llm_worker(celery_worker_process, monkeypatch):
    """Restart the worker with its LLM tier on a local test server (and `env`); (worker, server)."""
    from tests.llm_server import run_llm_server

    servers = contextlib.ExitStack()
    names: list[str] = []

    def start(*, env: dict[str, object] | None = None, **server_options):
        server = servers.enter_context(run_llm_server(**server_options))
        values = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key", **(env or {})}
        for name, value in values.items():
            monkeypatch.setenv(name, str(value))
            names.append(name)
        celery_worker_process.restart()
        return celery_worker_process, server

    with servers:
        yield start
        if names:
            for name in names:
                monkeypatch.delenv(name, raising=False)
            celery_worker_process.restart()


@pytest.fixture
def llm_worker(start_llm_worker, request):
    """The worker restarted with its LLM tier on a local test server that answers well: (worker, server)."""
    marker = request.node.get_closest_marker("llm_server")
    return start_llm_worker(**(marker.kwargs if marker else {}))

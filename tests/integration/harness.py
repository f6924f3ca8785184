"""The real-services harness: PostgreSQL, Redis and a real Celery worker process.

tests/integration/conftest.py turns these into fixtures. Everything here talks to real servers; no
mocks. Addresses come from the environment:

- TEST_DATABASE_URL (else DATABASE_URL) - the PostgreSQL server; pytest-django creates `test_<name>`
  on it. `make test` sets DATABASE_URL for the integration run, since Django reads it at start-up.
- TEST_REDIS_URL (else CELERY_BROKER_URL when it is Redis) - a Redis database used as the broker and
  flushed at the start of the session, so use a database number nothing else uses (default 15).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tribunal"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"


def services_required() -> bool:
    """In CI (or with TRIBUNAL_REQUIRE_SERVICES=1) a missing service fails the run instead of skipping."""
    return os.environ.get("TRIBUNAL_REQUIRE_SERVICES", "") == "1" or os.environ.get("CI", "").lower() == "true"


def database_url() -> str:
    return os.environ.get("TEST_DATABASE_URL") or os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL


def redis_url() -> str:
    if os.environ.get("TEST_REDIS_URL"):
        return os.environ["TEST_REDIS_URL"]
    broker = os.environ.get("CELERY_BROKER_URL", "")
    return broker if broker.startswith("redis://") else DEFAULT_REDIS_URL


def postgres_problem(database_settings: dict) -> str | None:
    """Why the integration tests cannot use PostgreSQL, or None when they can."""
    if "postgresql" not in database_settings["ENGINE"]:
        return (
            f"PostgreSQL: this run uses {database_settings['ENGINE']}; Django reads DATABASE_URL at start-up, "
            f"so run `make test` or `DATABASE_URL={database_url()} pytest tests/integration`"
        )
    import psycopg

    host = database_settings.get("HOST") or "localhost"
    port = database_settings.get("PORT") or 5432
    try:
        # The maintenance database: the test database does not exist yet at collection time.
        psycopg.connect(
            dbname="postgres",
            user=database_settings.get("USER") or None,
            password=database_settings.get("PASSWORD") or None,
            host=host,
            port=port,
            connect_timeout=3,
        ).close()
    except psycopg.Error as exc:
        return f"PostgreSQL is not answering at {host}:{port} ({str(exc).strip().splitlines()[0]})"
    return None


def redis_problem(url: str) -> str | None:
    """Why the integration tests cannot use Redis at `url`, or None when they can."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
        client.ping()
        client.close()
    except redis.RedisError as exc:
        return f"Redis is not answering at {url} ({exc})"
    return None


def redis_flush(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()


def database_url_for(url: str, name: str) -> str:
    """The same server and credentials as `url`, another database name (the test database)."""
    return urlsplit(url)._replace(path=f"/{name}").geturl()


def wait_until[T](predicate: Callable[[], T], timeout: float = 30.0, interval: float = 0.2, message: str = "") -> T:
    """Poll `predicate` until it returns something truthy and return that; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {message or predicate!r}")
        time.sleep(interval)


class CeleryWorker:
    """A real `celery worker` subprocess (prefork pool) against the test database and Redis.

    `kill()` is a crash: SIGKILL to the worker and its pool children, nothing acknowledged, nothing
    cleaned up. With acks_late, a task it was running goes back to the queue once the Redis
    visibility timeout has passed (kept short here: `visibility_timeout` seconds) and a worker is
    running again - `restart()` starts one.
    """

    def __init__(
        self,
        *,
        database_url: str,
        broker_url: str,
        concurrency: int = 2,
        visibility_timeout: int = 10,
        ready_timeout: float = 60.0,
    ) -> None:
        self.database_url = database_url
        self.broker_url = broker_url
        self.concurrency = concurrency
        self.visibility_timeout = visibility_timeout
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.kills = 0
        self.var_dir = Path(tempfile.mkdtemp(prefix="tribunal-worker-"))
        self.log_path = self.var_dir / "worker.log"
        self.node_name = f"tribunal-test-{uuid.uuid4().hex[:8]}@%h"

    def environment(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "DJANGO_ALLOW_ASYNC"))}
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
                "DATABASE_URL": self.database_url,
                # Close connections after each task: the test database is truncated between tests.
                "DATABASE_CONN_MAX_AGE": "0",
                "CELERY_BROKER_URL": self.broker_url,
                "CELERY_VISIBILITY_TIMEOUT": str(self.visibility_timeout),
                "CELERY_TASK_ALWAYS_EAGER": "false",
                "TRIBUNAL_VAR_DIR": str(self.var_dir),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    def command(self) -> list[str]:
        celery = Path(sys.executable).with_name("celery")
        return [
            str(celery),
            "-A",
            "reviewapp",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            str(self.concurrency),
            "-l",
            "info",
            "-n",
            self.node_name,
            # No other workers to synchronise with: start faster.
            "--without-mingle",
            "--without-gossip",
        ]

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def start(self) -> CeleryWorker:
        if self.alive:
            return self
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            # Its own session, so kill() can take the whole process group (pool children too).
            self.process = subprocess.Popen(
                self.command(),
                cwd=PROJECT_DIR,
                env=self.environment(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.starts += 1
        self._wait_ready(offset)
        return self

    def _wait_ready(self, offset: int) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(f"the Celery worker exited during start-up:\n{self.log_tail()}")
            # Celery logs "celery@host ready." once its consumer is connected to the broker.
            if b" ready." in self.log_path.read_bytes()[offset:]:
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the Celery worker was not ready after {self.ready_timeout:g}s:\n{self.log_tail()}")

    def _signal_group(self, signum: int) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def kill(self) -> None:
        """Crash the worker: SIGKILL to it and its pool children; running tasks stay unacknowledged."""
        if not self.alive:
            return
        self._signal_group(signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=10)
        self.kills += 1

    def stop(self, timeout: float = 15.0) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL if it does not finish within `timeout`."""
        if self.process is None:
            return
        if self.alive:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait(timeout=10)
        # Pool children that outlived their parent must not keep the test database open.
        self._signal_group(signal.SIGKILL)

    def restart(self) -> CeleryWorker:
        self.stop()
        return self.start()

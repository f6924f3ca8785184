"""The health check before a persistent PostgreSQL connection is reused (reviewapp/postgresql): a healthy
idle connection is reused without a statement; one the server ended is closed and replaced; anything
waiting on the socket gets Django's own `SELECT 1`. What the connection last ran is read from the server
(pg_stat_activity), from the test's own connection."""

from __future__ import annotations

import select
import time

import pytest
from django.db import connection, connections

from reviewapp.postgresql.base import DatabaseWrapper, nothing_waiting

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend's health check"),
]


@pytest.fixture
def reused():
    """A second connection as a request's would be, with health checks on, between two requests."""
    wrapper = DatabaseWrapper({**connection.settings_dict, "CONN_HEALTH_CHECKS": True, "CONN_MAX_AGE": 600})
    wrapper.ensure_connection()
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT 42 AS last_statement")
    wrapper.health_check_done = False  # what the end of a request does (close_if_unusable_or_obsolete)
    yield wrapper
    wrapper.close()


def last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def wait_readable(wrapper, seconds: float = 5.0) -> None:
    poller = select.poll()
    poller.register(wrapper.connection.fileno(), select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + seconds
    while not poller.poll(50):
        assert time.monotonic() < deadline, "nothing came on the connection's socket"


def test_a_healthy_idle_connection_is_reused_without_a_statement(reused):
    pid = reused.connection.info.backend_pid
    reused.close_if_health_check_failed()
    assert reused.connection is not None and reused.health_check_done
    assert last_statement(pid) == "SELECT 42 AS last_statement"  # no SELECT 1 reached the server
    with reused.cursor() as cursor:
        cursor.execute("SELECT 7")
        assert cursor.fetchone() == (7,)


def test_a_connection_the_server_ended_is_closed_and_then_replaced(reused):
    pid = reused.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        assert cursor.fetchone() == (True,)
    wait_readable(reused)
    assert not nothing_waiting(reused.connection)
    reused.close_if_health_check_failed()
    assert reused.connection is None  # closed here, not by the request's first statement failing
    with reused.cursor() as cursor:  # the request goes on with a new connection
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_something_waiting_on_a_healthy_connection_gets_djangos_select_1(reused):
    pid = reused.connection.info.backend_pid
    with reused.cursor() as cursor:
        cursor.execute("LISTEN health_check_test")
    reused.health_check_done = False
    other = DatabaseWrapper(connection.settings_dict)  # autocommit: the test's own transaction never commits
    try:
        with other.cursor() as cursor:
            cursor.execute("NOTIFY health_check_test")
    finally:
        other.close()
    wait_readable(reused)
    reused.close_if_health_check_failed()
    assert reused.connection is not None and reused.health_check_done  # healthy: kept
    assert last_statement(pid) == "SELECT 1"


def test_a_transaction_left_open_gets_djangos_select_1(reused):
    pid = reused.connection.info.backend_pid
    reused.connection.execute("BEGIN")
    assert not nothing_waiting(reused.connection)
    reused.close_if_health_check_failed()
    assert last_statement(pid) == "SELECT 1"
    reused.connection.execute("ROLLBACK")


def test_postgresql_settings_use_this_backend():
    assert connection.settings_dict["ENGINE"] == "reviewapp.postgresql"
    assert isinstance(connections["default"], DatabaseWrapper)

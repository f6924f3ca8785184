"""Django's PostgreSQL backend with one change: the health check before a persistent connection is reused
(CONN_HEALTH_CHECKS, on in production) asks the connection's socket before it asks the server.

Django's check sends `SELECT 1` at the start of every request that uses the database: a round trip to
the server, and a statement for it to run, on every page. A server that ends a session (a restart, a
terminated backend, an idle timeout, a failover) sends its last message and closes the socket, which
then has something to read; a healthy idle connection has nothing to read between statements. So when
the connection is idle, its status good and a poll of its socket finds nothing waiting, it is used as it
is; anything else (data or the end waiting on the socket, a transaction left open, a platform without
poll) gets Django's own `SELECT 1`, which reads whatever is there and closes the connection if it fails.
A network path that died silently is caught by neither before the request's first statement: it has
nothing to read, and `SELECT 1` would wait on it as long as that statement does.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base

if base.is_psycopg3:
    from psycopg.pq import ConnStatus, TransactionStatus

# Anything on the socket: data (the server's goodbye, a notice), its end, or an error. None without poll.
_WAITING = (select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR) if hasattr(select, "poll") else None


def nothing_waiting(connection) -> bool:
    """Whether a psycopg connection is open, idle outside a transaction, and has nothing to read: what
    `SELECT 1` would find healthy without sending it. False whenever that cannot be told here."""
    if _WAITING is None or not base.is_psycopg3:
        return False
    if connection.closed or connection.pgconn.status != ConnStatus.OK:
        return False
    if connection.info.transaction_status != TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), _WAITING)
    return not poller.poll(0)


class DatabaseWrapper(base.DatabaseWrapper):
    def close_if_health_check_failed(self):
        checking = self.connection is not None and self.health_check_enabled and not self.health_check_done
        if checking and not self.pool and nothing_waiting(self.connection):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

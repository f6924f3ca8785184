"""Django's PostgreSQL backend, with a health check that asks the connection's socket before the server
(`base.DatabaseWrapper`)."""

"""gunicorn settings for production: `gunicorn -c gunicorn.conf.py reviewapp.wsgi`.

Sized from the machine: one process per core plus one (a request that waits on the database leaves its
core to another process), each with a few threads, so a slow page does not hold up the other
reviewers behind it. Override with GUNICORN_WORKERS / GUNICORN_THREADS / GUNICORN_BIND.
With threads, every thread keeps its own PostgreSQL connection (CONN_MAX_AGE in reviewapp/production.py):
workers x threads connections per web machine.
"""

import os

_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

wsgi_app = "reviewapp.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", _cores + 1))
threads = int(os.environ.get("GUNICORN_THREADS", 4))
worker_class = "gthread"
# Loaded once in the master, then forked: workers start at once and share the imported code's memory.
preload_app = True
timeout = int(os.environ.get("GUNICORN_TIMEOUT", 60))
graceful_timeout = 30
keepalive = 5
# A worker is replaced after this many requests (with jitter, so they do not all restart together).
max_requests = 5000
max_requests_jitter = 500
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")

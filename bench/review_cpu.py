"""CPU per request of claim, the review screen and submit, in process: the production WSGI application
(reviewapp.production, DEBUG off) called directly, as gunicorn calls it, on a database bench/compare.py
built (its --postgres-url, at its --size). No HTTP and no server process, so on a shared machine the
figures move less than compare.py's; instruction counts (below) do not move at all.

    PYTHONPATH=. .venv/bin/python bench/review_cpu.py --database-url postgres://postgres@127.0.0.1:5432/tribunal_review_bench --size 100000
    # instructions per review screen (valgrind): run with --gets 10 and --gets 20, subtract, divide by 10
    valgrind --tool=callgrind --callgrind-out-file=var/cg.%p .venv/bin/python bench/review_cpu.py --requests 1 --gets 10 ...

Each of --requests reviewers claims the next item (POST /queue/next/), opens it (GET /review/<id>/) and
submits a label (rating, agreement with each verdict shown, a comment); the medians of this process's
CPU time per request are printed (and the lowest, which other work on a shared machine moves least),
with the statements each ran, and when PostgreSQL runs on this
machine (its backend's /proc/<pid>/schedstat readable) the CPU its backend spent on the request: parsing,
planning and running the statements, and the commit. --gets then opens one more claimed
item that many times. The database is reset first (bench._workload.reset_tribunal).
"""

import argparse
import io
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup(database_url: str) -> None:
    os.environ.update(
        DATABASE_URL=database_url,
        DJANGO_SETTINGS_MODULE="reviewapp.production",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="bench-only-secret-key-" + "x" * 40,
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost,testserver",
        DJANGO_SECURE_SSL_REDIRECT="false",
        LOG_LEVEL="WARNING",
        TRIBUNAL_VAR_DIR=str(ROOT / "var" / "bench-compare"),  # compare.py's: collected static files
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()


def call(
    app, method: str, path: str, cookies: dict[str, str], body: bytes = b"", *, query: str = ""
) -> tuple[str, dict, bytes]:
    answer = {}

    def start_response(status, headers):
        answer.update(status=status, headers=dict(headers))

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "HTTP_HOST": "127.0.0.1:8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": "application/x-www-form-urlencoded",
        "HTTP_COOKIE": "; ".join(f"{k}={v}" for k, v in cookies.items()),
        "HTTP_X_CSRFTOKEN": cookies["csrftoken"],
        "REMOTE_ADDR": "127.0.0.1",
    }
    response = app(environ, start_response)
    data = b"".join(response)
    response.close()
    return answer["status"], answer["headers"], data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/tribunal_bench2")
    parser.add_argument("--size", type=int, default=10_000, help="the judged turns compare.py built (its default too)")
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--gets", type=int, default=0)
    args = parser.parse_args()
    setup(args.database_url)
    from django.contrib.auth import get_user_model
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench._workload import reset_tribunal
    from bench.compare import label_form

    if not reset_tribunal(args.size):
        sys.exit(f"no workload of {args.size:,} judged turns at {args.database_url}: build it with bench/compare.py")
    sessions = []
    for user in get_user_model().objects.filter(username__startswith="bench-reviewer-").order_by("username"):
        login = Client()
        login.force_login(user)
        sessions.append(login.cookies["sessionid"].value)
    connection.close()
    app = WSGIHandler()
    cpu: dict[str, list[float]] = {"claim": [], "review": [], "submit": []}
    server: dict[str, list[float]] = {key: [] for key in cpu}
    statements: dict[str, int] = {}

    def backend_ns() -> int | None:
        """The nanoseconds the connection's PostgreSQL backend has spent on a CPU (None before a request
        opened the connection, or when the server is not on this machine)."""
        if connection.connection is None:
            return None
        try:
            with open(f"/proc/{connection.connection.info.backend_pid}/schedstat") as stat:
                return int(stat.read().split()[0])
        except OSError:
            return None

    def timed(key, method, path, cookies, body=b""):
        backend_before = backend_ns()
        started = time.process_time()
        with CaptureQueriesContext(connection) as queries:
            answer = call(app, method, path, cookies, body)
        cpu[key].append(time.process_time() - started)
        backend_after = backend_ns()
        if backend_before is not None and backend_after is not None:
            server.setdefault(key, []).append((backend_after - backend_before) / 1e9)
        statements[key] = len(queries)
        return answer

    for session in sessions[: args.requests]:
        cookies = {"sessionid": session, "csrftoken": "a" * 32}
        status, headers, _ = timed("claim", "POST", "/queue/next/", cookies)
        path = headers["Location"]
        status, _, page = timed("review", "GET", path, cookies)
        assert status.startswith("200"), status
        status, _, _ = timed("submit", "POST", path, cookies, urlencode(label_form(page.decode())).encode())
        assert status.startswith("302"), status
    for key, values in cpu.items():
        if values:
            ms = statistics.median(values[2:] or values) * 1000
            lowest = min(values[2:] or values) * 1000
            line = (
                f"{key}: {ms:.2f} ms CPU (median of {len(values)}, lowest {lowest:.2f}), {statements[key]} statements"
            )
            if server.get(key):
                line += f"; PostgreSQL backend {statistics.median(server[key][2:] or server[key]) * 1000:.2f} ms CPU"
            print(line)
    if args.gets:
        cookies = {"sessionid": sessions[args.requests], "csrftoken": "a" * 32}
        path = call(app, "POST", "/queue/next/", cookies)[1]["Location"]
        cpu["gets"] = []
        for _ in range(args.gets):
            timed("gets", "GET", path, cookies)
        line = f"{args.gets} more screens: {statistics.median(cpu['gets']) * 1000:.2f} ms CPU each (median)"
        if server.get("gets"):
            line += f"; PostgreSQL backend {statistics.median(server['gets']) * 1000:.2f} ms CPU"
        print(line)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

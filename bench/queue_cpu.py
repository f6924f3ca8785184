"""CPU per request of the queue page, in process: the production WSGI application (reviewapp.production,
DEBUG off) called directly, as gunicorn calls it, on a database bench/compare.py built (its
--postgres-url, at its --size). The sibling of bench/review_cpu.py, for the four queue operations
compare.py measures over HTTP.

    PYTHONPATH=. .venv/bin/python bench/queue_cpu.py --database-url postgres://postgres@127.0.0.1:5432/tribunal_bench2 --size 100000

As one reviewer of the workload's language (compare.py's reader), --requests times each: page 1
(GET /queue/), a middle page (GET /queue/?after=<priority:id of the middle item>), the filtered queue
(GET /queue/?reason=gold_disagrees); then --labels other reviewers claim and label an item each (not
timed), and page 1 is read again (after labels). Printed: the median CPU time of this process per
request (the first two requests of each left out), its wall time, the lowest CPU time of one request
(on a machine shared with other work, the figure that work moves least: compare code before and after
by it as well as by the medians), and the statements each ran. With
--save DIR each page's HTML is written there (the CSRF tokens blanked, which change per request), so
two runs can be compared with `diff -r`. The database is reset first (bench._workload.reset_tribunal).
"""

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.review_cpu import call, setup  # noqa: E402

CSRF = re.compile(r'("csrfmiddlewaretoken" value=|"X-CSRFToken": ?)"[^"]*"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/tribunal_bench2")
    parser.add_argument("--size", type=int, default=10_000, help="the judged turns compare.py built (its default too)")
    parser.add_argument("--requests", type=int, default=30, help="requests of each page")
    parser.add_argument("--labels", type=int, default=20, help="labels given before the last page")
    parser.add_argument("--save", type=Path, help="write each page's HTML to this folder")
    args = parser.parse_args()
    setup(args.database_url)
    from django.contrib.auth import get_user_model
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench._workload import reset_tribunal
    from bench.compare import label_form
    from reviewapp.models import ReviewItem

    if not reset_tribunal(args.size):
        sys.exit(f"no workload of {args.size:,} judged turns at {args.database_url}: build it with bench/compare.py")
    keys = list(ReviewItem.objects.order_by("-priority", "id").values_list("priority", "id"))
    middle = "{}:{}".format(*keys[len(keys) // 2])
    sessions = []
    for user in get_user_model().objects.filter(username__startswith="bench-reviewer-").order_by("username"):
        login = Client()
        login.force_login(user)
        sessions.append(login.cookies["sessionid"].value)
    connection.close()
    app = WSGIHandler()
    reader = {"sessionid": sessions[0], "csrftoken": "a" * 32}
    pages = {
        "queue": ("/queue/", ""),
        "middle": ("/queue/", urlencode({"after": middle})),
        "filtered": ("/queue/", "reason=gold_disagrees"),
    }
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    statements: dict[str, int] = {}

    def timed(key: str, path: str, query: str) -> None:
        for _ in range(args.requests):
            started, clock = time.process_time(), time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                status, _, page = call(app, "GET", path, reader, query=query)
            cpu.setdefault(key, []).append(time.process_time() - started)
            wall.setdefault(key, []).append(time.perf_counter() - clock)
            statements[key] = len(queries)
            assert status.startswith("200"), status
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{key}.html").write_text(CSRF.sub(r'\1""', page.decode()))

    for key, (path, query) in pages.items():
        timed(key, path, query)
    for session in sessions[1 : args.labels + 1]:
        cookies = {"sessionid": session, "csrftoken": "a" * 32}
        status, headers, _ = call(app, "POST", "/queue/next/", cookies)
        assert status.startswith("302"), status
        screen = headers["Location"]
        status, _, page = call(app, "GET", screen, cookies)
        status, _, _ = call(app, "POST", screen, cookies, urlencode(label_form(page.decode())).encode())
        assert status.startswith("302"), status
    timed("after_labels", "/queue/", "")
    for key, values in cpu.items():
        ms = statistics.median(values[2:] or values) * 1000
        wall_ms = statistics.median(wall[key][2:] or wall[key]) * 1000
        lowest = min(values[2:] or values) * 1000
        print(
            f"{key}: {ms:.2f} ms CPU, {wall_ms:.2f} ms wall (medians of {len(values)}), lowest {lowest:.2f} ms CPU,"
            f" {statements[key]} statements"
        )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

"""50 reviewers at once against the production setup on loopback: p95 per request type, and errors.

    PYTHONPATH=. .venv/bin/python bench/reviewers.py                      # 10k turns on PostgreSQL, 50 users
    PYTHONPATH=. .venv/bin/python bench/reviewers.py --size 100000 --users 50 --seconds 180 --reuse

The workload of bench/_workload.py is built in the PostgreSQL database --postgres-url (dropped and
created again unless --reuse finds it at that size), then gunicorn serves it with gunicorn.conf.py and
reviewapp.production (DEBUG off, persistent connections), as if behind the HTTPS proxy (X-Forwarded-Proto).
locust (requirements-bench.txt) runs this same file as its locustfile, headless: each simulated
reviewer logs in once, then loops queue -> claim (next item) -> review screen -> submit.

Think time, per reviewer: 2-5 s on the queue before starting, 8-20 s reading the nine-message turn and
labelling it, 1-3 s after submitting. A real reviewer spends 30-90 s on such a turn, so this is 3-4 times
the request rate of 50 real reviewers. Each reviewer starts logged in (a session opened for the account
beforehand: a reviewer logs in once a day, and 50 password hashes at once would measure the hasher).
Statistics are reset once every reviewer has started. Target: p95 < 150 ms, no errors.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from locust import HttpUser, between, task

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


_numbers = itertools.count()


class Reviewer(HttpUser):
    """One reviewer of the workload's language, with the cookies a browser would keep."""

    wait_time = between(1, 3)  # after a submit, before the queue again

    def on_start(self) -> None:
        # Logged in already (a reviewer logs in once a day): the session main() opened for this account,
        # and a CSRF secret of its own, as the login page would have set.
        sessions = json.loads(Path(os.environ["BENCH_SESSIONS"]).read_text())
        session = sessions[next(_numbers) % len(sessions)]
        self.cookies: dict[str, str] = {"sessionid": session, "csrftoken": secrets.token_hex(16)}

    def call(self, method: str, path: str, name: str, *, data=None, expect: int = 200):
        """One request behind the HTTPS proxy; cookies kept by hand (they are Secure: HTTPS only)."""
        headers = {"X-Forwarded-Proto": "https", "Referer": f"https://{self.host_name}/queue/"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if data is not None:
            data = {**data, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")}
        with self.client.request(
            method, path, name=name, data=data, headers=headers, allow_redirects=False, catch_response=True
        ) as response:
            for cookie in response.cookies:
                self.cookies[cookie.name] = cookie.value
            if response.status_code != expect:
                response.failure(f"{name}: HTTP {response.status_code}, expected {expect}")
            return response

    @property
    def host_name(self) -> str:
        return self.host.split("://", 1)[1].rstrip("/")

    @task
    def review_one_item(self) -> None:
        self.call("GET", "/queue/", "queue")
        time.sleep(random.uniform(2, 5))
        claim = self.call("POST", "/queue/next/", "claim", data={}, expect=302)
        location = claim.headers.get("Location", "")
        if "/review/" not in location:
            claim.failure(f"claim: no item offered ({location})")
            return
        path = "/review/" + location.split("/review/", 1)[1]
        screen = self.call("GET", path, "review screen")
        time.sleep(random.uniform(8, 20))
        form = {"rating": "1", "seconds_spent": "30", "comment": "Reads well."}
        for part in screen.text.split('name="verdict_')[1:]:
            form["verdict_" + part.split('"', 1)[0]] = "agree"
        self.call("POST", path, "submit", data=form, expect=302)


SESSIONS = r"""
import json, django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
sessions = []
for user in get_user_model().objects.filter(username__startswith="bench-reviewer-").order_by("username"):
    client = Client()
    client.force_login(user)
    sessions.append(client.cookies["sessionid"].value)
print(json.dumps(sessions))
"""


def main() -> None:
    from bench._http import child, free_port, stop, wait_until_up
    from bench.compare import django_env, fresh_database

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=120, help="measured time, after every reviewer logged in")
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/tribunal_bench2")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    var = ROOT / "var" / "bench-reviewers"
    var.mkdir(parents=True, exist_ok=True)
    env = django_env(args.postgres_url, var, production=True)
    env["DJANGO_SECURE_SSL_REDIRECT"] = "true"  # the production default: requests come through the proxy
    python = sys.executable
    reset = "import django; django.setup(); from bench._workload import reset_tribunal; "
    reused = False
    if args.reuse:
        child([python, "manage.py", "migrate", "-v0"], env)
        reused = child([python, "-c", reset + f"print(reset_tribunal({args.size}))"], env)[2].strip() == "True"
    if not reused:
        fresh_database(args.postgres_url)
        child([python, "manage.py", "migrate", "-v0"], env)
        build = "import django; django.setup(); from bench._workload import build_tribunal; "
        child([python, "-c", build + f"build_tribunal({args.size}, progress=None)"], env)
    child([python, "manage.py", "collectstatic", "--noinput", "-v0"], env)
    sessions = var / "sessions.json"
    sessions.write_text(child([python, "-c", SESSIONS], env)[2].strip().splitlines()[-1])
    port = free_port()
    env["GUNICORN_BIND"] = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [python, "-m", "gunicorn", "-c", "gunicorn.conf.py"], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )
    load = [round(os.getloadavg()[0], 1)]
    try:
        wait_until_up(port, "/login/", server)
        with tempfile.TemporaryDirectory() as folder:
            spawn_rate = 5
            ramp = args.users // spawn_rate + 2
            command = [python, "-m", "locust", "-f", __file__, "--headless", "--only-summary"]
            command += ["-u", str(args.users), "-r", str(spawn_rate), "-t", f"{args.seconds + ramp}s"]
            command += ["--host", f"http://127.0.0.1:{port}", "--csv", f"{folder}/run", "--reset-stats"]
            locust_env = {**os.environ, "PYTHONPATH": str(ROOT), "BENCH_SESSIONS": str(sessions)}
            subprocess.run(command, cwd=ROOT, env=locust_env, check=False)
            rows = list(csv.DictReader(Path(f"{folder}/run_stats.csv").read_text().splitlines()))
            failures = list(csv.DictReader(Path(f"{folder}/run_failures.csv").read_text().splitlines()))
    finally:
        stop(server)
        load.append(round(os.getloadavg()[0], 1))
    print(f"\n{args.users} reviewers, {args.size:,} judged turns, PostgreSQL, gunicorn.conf.py; load average {load}")
    print("| request | requests | failures | median ms | p95 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['Name']} | {row['Request Count']} | {row['Failure Count']} | {row['50%']} | {row['95%']} "
            f"| {row['99%']} | {float(row['Max Response Time']):.0f} |"
        )
    for failure in failures:
        print(f"error: {json.dumps(failure)}")


if __name__ == "__main__":
    main()

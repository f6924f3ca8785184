"""Tribunal side by side with Label Studio on one workload (bench/_workload.py), over HTTP.

    PYTHONPATH=. .venv/bin/python bench/compare.py --size 100000                  # Tribunal only
    PYTHONPATH=. .venv/bin/python bench/compare.py --size 10000 --label-studio     # and Label Studio
    PYTHONPATH=. .venv/bin/python bench/compare.py --size 1000000 --databases postgresql --servers gunicorn

For each database (SQLite file under var/bench-compare/, PostgreSQL database --postgres-url, dropped and
created again: never point it at one you need) the workload is written in bulk into a fresh migrated
database, then each server is started on loopback with DJANGO_DEBUG=false: gunicorn with the
production settings (gunicorn.conf.py, one worker, one thread) and runserver. Every request opens a new
connection; each figure is the median of --repeats requests. The query counts come from the same
operations through Django's test client in one process. Import (a JSONL file of --import-size
conversations through `dataset_import`), export (all gold rows as JSONL, and as Parquet) and `manage.py
check` run in processes of their own, with their peak RSS. Each export is timed twice on PostgreSQL:
right after the workload is written, every row built (a first export); then, after the keep an import
queues (timed) and the labels the HTTP run submits, the next export, reading kept rows and building
the labelled ones. After the import operation, the keep it queues is timed too: its rows, all new,
kept beside the workload's (what a worker does after an import into a database already in use).

Label Studio (--label-studio) runs from its own virtualenv (--ls-venv, default /work/lsvenv:
`python3 -m venv /work/lsvenv && /work/lsvenv/bin/pip install label-studio==1.23.2 'sentry-sdk<3'`: Label
Studio 1.23.2 does not start with sentry-sdk 3, which its own requirements let in), `label-studio
start` on SQLite in a fresh data folder, on loopback, analytics and version checks off; its workload
goes in through its API (a project with a labeling config, the tasks imported in chunks).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import _workload as workload  # noqa: E402
from bench import cpus  # noqa: E402
from bench._http import Http, child, free_port, stop, wait_until_up  # noqa: E402

OPERATIONS = [
    ("queue", "queue/task list page 1"),
    ("middle", "middle page of the list"),
    ("filtered", "filtered: judge differs from gold"),
    ("after_labels", "queue page 1 after labels"),
    ("review", "one item's review screen"),
    ("claim", "next item (claim)"),
    ("submit", "submit a label"),
    ("export", "export all rows, every row built (s)"),
    ("export_rate", "export, every row built (rows/s)"),
    ("keep", "keeping the rows after an import (s, a worker's)"),
    ("keep_import", "keeping an import's rows beside kept ones (s, a worker's)"),
    ("export_kept", "export all rows, rows kept (s)"),
    ("export_kept_rate", "export, rows kept (rows/s)"),
    ("parquet", "Parquet export, every row built (rows/s)"),
    ("parquet_kept", "Parquet export, rows kept (rows/s)"),
    ("import", "import (tasks/s)"),
    ("import_turns", "import (turns/s)"),
    ("import_rss", "import peak RSS (MiB)"),
    ("import_reader_rss", "import reading process peak RSS (MiB)"),
    ("check", "process start: manage.py check (ms)"),
    ("first_page", "server start to first page (ms)"),
]


def django_env(url: str, var: Path, production: bool) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "TRIBUNAL_VAR_DIR": str(var),
        "DJANGO_DEBUG": "false",
        "DJANGO_SETTINGS_MODULE": "reviewapp.production" if production else "reviewapp.settings",
        "DJANGO_SECRET_KEY": "bench-only-secret-key-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "PYTHONPATH": str(ROOT),
        "LOG_LEVEL": "WARNING",
    }
    env.pop("CELERY_BROKER_URL", None)
    return env


def fresh_database(url: str) -> None:
    if url.startswith("sqlite"):
        path = Path(urlsplit(url).path)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples), 1)


# --- Tribunal ----------------------------------------------------------------------------------------
def tribunal_http(port: int, pid: int, repeats: int, sessions: list[str], cursor: str) -> dict[str, float]:
    """The seven page operations against a running server, as reviewers of the workload's language:
    median wall ms of each, and the server's mean CPU ms per request under "<operation>_cpu"."""
    times: dict[str, list[float]] = {key: [] for key in ("queue", "middle", "filtered", "after_labels")}
    times |= {"review": [], "claim": [], "submit": []}
    cpu: dict[str, list[float]] = {key: [] for key in times}
    reader = Http.tribunal(port, sessions[0])
    reader.server_pid = pid

    def read(key: str, path: str) -> None:
        times[key].append(reader.get(path))
        cpu[key].append(reader.last_cpu_ms)

    for key, path in (("queue", "/queue/"), ("middle", f"/queue/?after={cursor}")):
        for _ in range(repeats):
            read(key, path)
    for _ in range(repeats):
        read("filtered", "/queue/?reason=gold_disagrees")
    for session in sessions[1 : repeats + 1]:
        client = Http.tribunal(port, session)
        client.server_pid = pid
        status, headers, _, ms = client.request("POST", "/queue/next/")
        assert status == 302 and "/review/" in headers.get("location", ""), (status, headers)
        times["claim"].append(ms)
        cpu["claim"].append(client.last_cpu_ms)
        path = "/review/" + headers["location"].split("/review/", 1)[1]
        status, _, body, ms = client.request("GET", path)
        assert status == 200, status
        times["review"].append(ms)
        cpu["review"].append(client.last_cpu_ms)
        status, headers, _, ms = client.request("POST", path, form=label_form(body.decode()))
        assert status == 302, (status, headers)
        times["submit"].append(ms)
        cpu["submit"].append(client.last_cpu_ms)
    for _ in range(repeats):
        read("after_labels", "/queue/")
    figures = {key: median_ms(value) for key, value in times.items()}
    return figures | {f"{key}_cpu": round(sum(value) / len(value), 1) for key, value in cpu.items()}


def label_form(page: str) -> dict[str, str]:
    """A reviewer's label: the rating, and agreement with each verdict the (not blind) screen shows."""
    form = {"rating": "1", "seconds_spent": "40", "comment": "Looks right."}
    for part in page.split('name="verdict_')[1:]:
        form["verdict_" + part.split('"', 1)[0]] = "agree"
    return form


QUERIES = r"""
import json, django
django.setup()
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.contrib.auth import get_user_model
from reviewapp.models import ReviewItem

items = list(ReviewItem.objects.order_by("-priority", "id").values_list("priority", "id"))
middle = "%d:%d" % items[len(items) // 2]
sessions = []
for user in get_user_model().objects.filter(username__startswith="bench-reviewer-").order_by("username"):
    login = Client()
    login.force_login(user)
    sessions.append(login.cookies["sessionid"].value)
client = Client()
client.force_login(get_user_model().objects.get(username="bench-reviewer-49"))
counts = {}
def run(key, method, path, data=None):
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(path, data or {})
    counts[key] = len(queries)
    return response
run("queue", "get", "/queue/"); run("middle", "get", "/queue/?after=" + middle)
run("filtered", "get", "/queue/?reason=gold_disagrees")
path = run("claim", "post", "/queue/next/").url
page = run("review", "get", path).content.decode()
from bench.compare import label_form
run("submit", "post", path, label_form(page))
run("after_labels", "get", "/queue/")
print(json.dumps({"middle": middle, "queries": counts, "sessions": sessions}))
"""

# One export of every gold row (JSONL, or the format given second), timed. "built": every row built
# from the data (the kept rows are dropped first: a first export, as right after a bulk write no hook
# kept). "kept": the rows as they stand (after the keep that follows an import, and the labels the
# HTTP run submitted since). The file is deleted once timed. Exports run on a Celery worker, whose
# process loads pyarrow before it forks its pool (reviewapp.celery.preload_worker): so does this one,
# before the clock starts.
EXPORT = r"""
import json, sys, time, django
django.setup()
from reviewapp.celery import preload_worker
preload_worker()
from django.db import connection
from reviewapp.models import Judge
from reviewapp.exports.services import exports
if sys.argv[1] == "built" and connection.vendor == "postgresql":
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE reviewapp_exportline, reviewapp_exportblock")
fmt = sys.argv[2] if len(sys.argv) > 2 else "jsonl"
started = time.perf_counter()
snapshot = exports.snapshot_create(judge=Judge.objects.get(slug="task_completion"), fmt=fmt, name="bench", build=False)
snapshot = exports.snapshot_write(snapshot_id=snapshot.pk)
print(json.dumps({"rows": snapshot.row_count, "seconds": time.perf_counter() - started}))
exports.snapshot_path(snapshot).unlink()
"""

# What an import queues once its rows are in (exports.tasks.export_lines_keep): the workload is
# written in bulk, not through an import, so it is run here, timed, as a worker would after one; and
# after the import operation (its dataset named second), its rows beside the workload's kept ones.
KEEP = r"""
import json, sys, time, django
django.setup()
from bench._workload import DATASET
from reviewapp.models import Dataset
from reviewapp.exports.services import export_lines
started = time.perf_counter()
done = export_lines.refresh_after_bulk_write(Dataset.objects.get(name=sys.argv[1] if len(sys.argv) > 1 else DATASET).pk)
print(json.dumps({"ran": bool(done) and all(d.ran for d in done), "built": sum(d.built for d in done),
                  "seconds": time.perf_counter() - started}))
"""

IMPORT = r"""
import json, resource, sys, time, django
django.setup()
from reviewapp.corpus.services.imports import dataset_import
started = time.perf_counter()
summary = dataset_import(path=sys.argv[1], fmt="jsonl", dataset_name="bench-import")
reader = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the reading process, where there is one
print(json.dumps({"conversations": summary.conversations, "turns": summary.turns,
                  "seconds": time.perf_counter() - started, "reader_kib": reader}))
"""


def write_jsonl(path: Path, size: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in workload.records(size, start=10_000_000):
            handle.write(json.dumps(record) + "\n")


def start_tribunal(server: str, env: dict[str, str], port: int) -> subprocess.Popen:
    python = str(Path(sys.executable))
    if server == "gunicorn":
        command = [python, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--workers", "1", "--threads", "1"]
        command += ["--bind", f"127.0.0.1:{port}"]
    else:
        command = [python, "manage.py", "runserver", "--noreload", "--skip-checks", f"127.0.0.1:{port}"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def bench_tribunal(database: str, url: str, args, var: Path) -> dict[str, dict[str, float]]:
    """Figures per server for one database; the in-process query counts under "queries"."""
    env = django_env(url, var, production=True)
    python = sys.executable
    reused = False
    if args.reuse:
        child([python, "manage.py", "migrate", "-v0"], env)
        reset = "import django; django.setup(); from bench._workload import reset_tribunal; "
        reused = child([python, "-c", reset + f"print(reset_tribunal({args.size}))"], env)[2].strip() == "True"
    if reused:
        print(f"== Tribunal on {database}: the {args.size:,} judged turns of an earlier run, reset", flush=True)
    else:
        print(f"== Tribunal on {database}: building {args.size:,} judged turns", flush=True)
        fresh_database(url)
        child([python, "manage.py", "migrate", "-v0"], env)
        started = time.perf_counter()
        build = "import django; django.setup(); from bench._workload import build_tribunal; "
        child([python, "-c", build + f"print(build_tribunal({args.size}, progress=None))"], env)
        print(f"   built in {time.perf_counter() - started:.0f} s", flush=True)
    child([python, "manage.py", "collectstatic", "--noinput", "-v0"], env)
    exported: dict[str, float] = {}
    _, _, out = child([python, "-c", EXPORT, "built"], env)
    first = json.loads(out.strip().splitlines()[-1])
    exported["export"] = round(first["seconds"], 1)
    exported["export_rate"] = round(first["rows"] / first["seconds"])
    _, _, out = child([python, "-c", EXPORT, "built", "parquet"], env)
    first = json.loads(out.strip().splitlines()[-1])
    exported["parquet"] = round(first["rows"] / first["seconds"])
    _, _, out = child([python, "-c", KEEP], env)
    kept = json.loads(out.strip().splitlines()[-1])
    if kept["ran"]:  # PostgreSQL
        exported["keep"] = round(kept["seconds"], 1)
    info = json.loads(child([python, "-c", QUERIES], env)[2].strip().splitlines()[-1])
    results: dict[str, dict[str, float]] = {"queries": info["queries"]}
    for n, server in enumerate(args.servers):
        port = free_port()
        server_env = env if server == "gunicorn" else django_env(url, var, production=False)
        started = time.perf_counter()
        process = start_tribunal(server, server_env, port)
        try:
            first_page = wait_until_up(port, "/login/", process) - started
            sessions = info["sessions"][n * args.repeats :]
            figures = tribunal_http(port, process.pid, args.repeats, sessions, info["middle"])
        finally:
            stop(process)
        figures["first_page"] = round(first_page * 1000)
        results[f"{database}/{server}"] = figures
        print(f"   {server}: {json.dumps(figures)}", flush=True)
    shared = results[f"{database}/{args.servers[0]}"]
    shared.update(exported)
    if "keep" in exported:  # the next export: kept rows read, those labelled during the HTTP run built
        _, _, out = child([python, "-c", EXPORT, "kept"], env)
        after = json.loads(out.strip().splitlines()[-1])
        shared["export_kept"] = round(after["seconds"], 1)
        shared["export_kept_rate"] = round(after["rows"] / after["seconds"])
        _, _, out = child([python, "-c", EXPORT, "kept", "parquet"], env)
        after = json.loads(out.strip().splitlines()[-1])
        shared["parquet_kept"] = round(after["rows"] / after["seconds"])
    if args.import_size:
        source = var / f"bench-import-{args.import_size}.jsonl"
        if not source.exists():
            write_jsonl(source, args.import_size)
        peak_kib, _, out = child([python, "-c", IMPORT, str(source)], env)
        summary = json.loads(out.strip().splitlines()[-1])
        shared["import"] = round(summary["conversations"] / summary["seconds"])
        shared["import_turns"] = round(summary["turns"] / summary["seconds"])
        shared["import_rss"] = round(peak_kib / 1024)
        shared["import_reader_rss"] = round(summary["reader_kib"] / 1024)
        if "keep" in exported:  # what the import queued: its rows kept beside the workload's
            _, _, out = child([python, "-c", KEEP, "bench-import"], env)
            kept = json.loads(out.strip().splitlines()[-1])
            shared["keep_import"] = round(kept["seconds"], 1)
    checks = [child([python, "manage.py", "check"], env)[1] * 1000 for _ in range(5)]
    shared["check"] = median_ms(checks)
    return results


# --- the table ---------------------------------------------------------------------------------------
def print_table(results: dict[str, dict[str, float]], size: int, machine: str = "") -> None:
    systems = [name for name in results if name != "load" and not name.startswith("queries")]
    queries = {k: v for name, counts in results.items() if name.startswith("queries") for k, v in counts.items()}
    ls = results.get("label-studio")
    # Export, import and check run once per database, without a server: they sit in its first column.
    # The ratios are against gunicorn, the production server.
    against = [name for name in systems if name.endswith("/gunicorn")] or [n for n in systems if n != "label-studio"]
    head = ["operation", *systems]
    if ls:
        head += [f"LS/{name}" for name in against]
    head.append("queries")
    load = results.get("load", {})
    lines = [f"Workload: {size:,} judged turns (9 messages each), medians of requests on new connections"]
    lines.append(
        f"load average (1 min) at start {load.get('start')}, at end {load.get('end')}, on {os.cpu_count()} CPUs"
    )
    if machine:  # two real idle cores give a factor near 2.0 and memory at several GiB/s
        lines.append(machine)
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label in OPERATIONS:
        row = [label] + [fmt(results[name].get(key)) for name in systems]
        if ls:
            row += [ratio(ls.get(key), results[name].get(key), key) for name in against]
        row.append(str(queries.get(key, "")))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Server CPU per request (ms, mean; user + system of the server's processes, from /proc)"]
    lines += ["| operation | " + " | ".join(systems) + " |", "|" + "---|" * (len(systems) + 1)]
    for key, label in OPERATIONS[:7]:
        lines.append("| " + " | ".join([label] + [fmt(results[name].get(f"{key}_cpu")) for name in systems]) + " |")
    lines += ["", *targets(results, against, ls)]
    print("\n".join(lines))


PAGES = [key for key, _ in OPERATIONS[:7] if key != "after_labels"]  # the six the 5x target names
# What this table measures of the performance targets (docs/performance.md): (figure, target, the
# test per database: None where the target does not name that database).
TARGETS = [
    ("import_turns", "import: 100,000 turns/s on PostgreSQL, 50,000 on SQLite",
     {"postgresql": lambda v: v >= 100_000, "sqlite": lambda v: v >= 50_000}),
    ("export_kept_rate", "JSONL export, rows kept: 100,000 rows/s", {"postgresql": lambda v: v >= 100_000}),
    ("parquet_kept", "Parquet export, rows kept: 100,000 rows/s", {"postgresql": lambda v: v >= 100_000}),
    ("export_rate", "JSONL export, every row built (a first export): 100,000 rows/s",
     {"postgresql": lambda v: v >= 100_000}),
    ("parquet", "Parquet export, every row built (a first export): 100,000 rows/s",
     {"postgresql": lambda v: v >= 100_000}),
    ("check", "manage.py check: under 1,000 ms", {"postgresql": lambda v: v < 1000, "sqlite": lambda v: v < 1000}),
]  # fmt: skip


def targets(results: dict[str, dict[str, float]], against: list[str], ls: dict | None) -> list[str]:
    """Each target this run measured, with its figure and whether it is met, per production server."""
    lines = ["Targets (met: yes / no)", "| target | " + " | ".join(against) + " |", "|" + "---|" * (len(against) + 1)]

    def row(label: str, cells: list[str]) -> None:
        lines.append("| " + " | ".join([label, *cells]) + " |")

    def verdict(value, test) -> str:
        return "-" if value is None or test is None else f"{fmt(value)}: {'yes' if test(value) else 'no'}"

    def under_10(value) -> bool:
        return value <= 10

    slowest = [max(results[n].get(k, 0) for k in PAGES) for n in against]
    row("pages: 10 ms or less (the slowest median, over HTTP; the target is in process)",
        [verdict(value, under_10) for value in slowest])  # fmt: skip
    if ls:

        def lowest_ratio(name: str) -> float | None:
            return min((ls[k] / results[name][k] for k in PAGES if results[name].get(k) and ls.get(k)), default=None)

        def five_times(value) -> bool:
            return value >= 5

        row("pages: 5x Label Studio or more on PostgreSQL (the lowest ratio)",
            [verdict(lowest_ratio(n), five_times if n.startswith("postgresql") else None) for n in against])  # fmt: skip
    for key, label, tests in TARGETS:
        row(label, [verdict(results[n].get(key), tests.get(n.split("/")[0])) for n in against])
    return lines


def fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def ratio(ls_value, value, key: str) -> str:
    if not ls_value or not value:
        return "-"
    # Rates (tasks/s) are better when higher: the ratio is still LS / Tribunal.
    return f"{ls_value / value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--databases", nargs="*", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "runserver"], choices=["gunicorn", "runserver"])
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/tribunal_bench2")
    parser.add_argument("--import-size", type=int, help="conversations imported (default: --size, at most 100,000)")
    parser.add_argument("--label-studio", action="store_true", help="measure Label Studio too")
    parser.add_argument("--ls-venv", default="/work/lsvenv")
    parser.add_argument("--json", help="also write every figure to this file")
    parser.add_argument("--work-dir", default=str(ROOT / "var" / "bench-compare"), help="SQLite file, media, JSONL")
    parser.add_argument(
        "--reuse", action="store_true", help="keep the workload an earlier run built at this size (migrated, reset)"
    )
    args = parser.parse_args()
    if args.import_size is None:
        args.import_size = min(args.size, 100_000)
    var = Path(args.work_dir).resolve()
    var.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, float]] = {"load": {"start": round(os.getloadavg()[0], 1)}}
    machine = cpus.summary()  # before any server starts: what this machine gives two busy processes
    for database in args.databases:
        url = f"sqlite:///{var / 'compare.sqlite3'}" if database == "sqlite" else args.postgres_url
        figures = bench_tribunal(database, url, args, var)
        results[f"queries ({database})"] = figures.pop("queries")
        results.update(figures)
    if args.label_studio:
        from bench import _label_studio

        with tempfile.TemporaryDirectory(prefix="ls-bench-") as folder:
            results["label-studio"] = _label_studio.bench(Path(args.ls_venv), Path(folder), args)
    results["load"]["end"] = round(os.getloadavg()[0], 1)
    if args.json:
        Path(args.json).write_text(json.dumps({**results, "machine": machine}, indent=2))
    # The query counts of the first database are shown: they are the same on both when the code is.
    first = next((name for name in results if name.startswith("queries")), None)
    for name in [n for n in results if n.startswith("queries") and n != first]:
        if results[name] != results[first]:
            print(f"note: {name} differ: {results[name]}")
        results.pop(name)
    print_table(results, args.size, machine)
    shutil.rmtree(var / "media", ignore_errors=True)


if __name__ == "__main__":
    main()

"""Rate and peak memory of an export at two sizes: memory should not grow with the row count.

    PYTHONPATH=. .venv/bin/python bench/export_memory.py [--rows 100000 1000000] [--formats jsonl parquet]
        [--database-url postgres://postgres@127.0.0.1:5432/tribunal_bench_export] [--reuse] [--keep DIR]
        [--lines built kept] [--process cold|worker|warm]

For each size: a fresh database (SQLite in a temporary folder, or the PostgreSQL database named by
--database-url, dropped and created again unless --reuse finds it filled at that size; it must not be
one you need) holding N judged turns: N
conversations of nine turns (agent and user in turn) whose last agent turn has an imported gold label
and one verdict; every third of those turns has a review item with one review (a category, a comment).
The rows are inserted by one `INSERT ... SELECT` per table over a number series, 200,000 conversations
at a time. Then each export runs in its own process (snapshot_create + snapshot_write: the path of
the Exports page, the worker and `manage.py export_dataset`), whose peak RSS (ru_maxrss from wait4)
and wall time are reported. Data generation runs in another process, so its memory is not counted.

On PostgreSQL each format is timed both ways by default (--lines): with every row built from the data
(no row kept: a first export, or one after a change no keep has caught yet), then with every row kept
(ExportLine, refreshed before the export is timed: what an export reads after the keeps an import, a
sweep, an export and Celery beat's periodic keep run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]

GENERATE = r"""
import sys, django
django.setup()
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from reviewapp.models import Category, Dataset, Judge, JudgeVersion, Sweep
rows = int(sys.argv[1])
judge = Judge.objects.create(slug="conciseness", level="turn", scale="ordinal", scale_min=1, scale_max=3)
version = JudgeVersion.objects.create(judge=judge, version="1.0", spec_hash="e" * 64)
dataset = Dataset.objects.create(name="bench", kind="validation")
sweep = Sweep.objects.create(dataset=dataset, status=Sweep.Status.DONE)
category = Category.objects.create(slug="gloss", name="Gloss")
reviewers = [get_user_model().objects.create(username=f"bench-reviewer-{i}").pk for i in range(3)]
now = connection.ops.adapt_datetimefield_value(timezone.now())  # as the ORM stores it
postgres = connection.vendor == "postgresql"
BATCH = 200_000
# Each statement inserts one table's rows for conversations lo..hi straight from a number series.
TABLES = (
    "reviewapp_conversation (id, dataset_id, external_id, language, metadata, audio, created_at)"
    " SELECT n, %(dataset)s, 'conv-' || n, CASE n %% 4 WHEN 0 THEN 'en' WHEN 1 THEN 'fr' WHEN 2 THEN 'ja' ELSE 'hi' END,"
    " '{}', '', %(now)s FROM {series}",
    "reviewapp_turn (id, conversation_id, position, role, text, intended_text, entities, metadata)"
    " SELECT (n - 1) * 9 + p + 1, n, p, CASE p %% 2 WHEN 0 THEN 'agent' ELSE 'user' END,"
    " CASE p %% 2 WHEN 0 THEN 'Agent answer ' || p || ' in call ' || n || ': your booking is confirmed for Friday.'"
    " ELSE 'User question ' || p || ' in call ' || n || '?' END, '', '[]', '{}' FROM {series}, {positions}",
    "reviewapp_goldlabel (id, judge_id, conversation_id, turn_id, source, rating, label, failure_modes, excluded,"
    " metadata, created_at) SELECT n, %(judge)s, n, n * 9, 'imported', 1 + n %% 3, '', '[]', FALSE, '{}', %(now)s"
    " FROM {series}",
    "reviewapp_verdict (id, sweep_id, judge_version_id, conversation_id, turn_id, run_index, tier, status, rating,"
    " label, flags, sub_scores, explanation, raw_text, created_at, metadata, problem_code)"
    " SELECT n, %(sweep)s, %(version)s, n, n * 9, 0, 'llm', 'resolved', 1 + (n + 1) %% 3, '', '[]', '{}',"
    " 'One clause too many.', '', %(now)s, '{}', '' FROM {series}",
    "reviewapp_reviewitem (id, judge_id, conversation_id, turn_id, dataset_id, language, reasons, priority,"
    " sample_weight, status, reviews_required, created_at, updated_at, lead_note, plan_term)"
    " SELECT n / 3, %(judge)s, n, n * 9, %(dataset)s, 'en', '[\"gold_disagrees\"]', 0, 1.0, 'closed', 1,"
    " %(now)s, %(now)s, '', 0 FROM {series} WHERE n %% 3 = 0",
    "reviewapp_review (id, item_id, reviewer_id, rating, label, verdict_agreement, comment, quoted_span, created_at,"
    " updated_at, revision_requested, grain) SELECT n / 3, n / 3,"
    " CASE n %% 9 WHEN 0 THEN %(r0)s WHEN 3 THEN %(r1)s ELSE %(r2)s END, 1 + n %% 3, '', '{}', 'Too long by a clause.',"
    " '', %(now)s, %(now)s, FALSE, '{}' FROM {series} WHERE n %% 3 = 0",
    "reviewapp_review_categories (review_id, category_id) SELECT n / 3, %(category)s FROM {series} WHERE n %% 3 = 0",
)
params = {"dataset": dataset.pk, "judge": judge.pk, "sweep": sweep.pk, "version": version.pk, "now": now,
          "category": category.pk, "r0": reviewers[0], "r1": reviewers[1], "r2": reviewers[2]}
with connection.cursor() as cursor:
    for lo in range(1, rows + 1, BATCH):
        hi = min(rows, lo + BATCH - 1)
        if postgres:
            prefix, series, positions = "", f"generate_series({lo}, {hi}) AS s(n)", "generate_series(0, 8) AS t(p)"
        else:
            prefix = (f"WITH RECURSIVE s(n) AS (SELECT {lo} UNION ALL SELECT n + 1 FROM s WHERE n < {hi}),"
                      " t(p) AS (SELECT 0 UNION ALL SELECT p + 1 FROM t WHERE p < 8) ")
            series, positions = "s", "t"
        with transaction.atomic():
            for table in TABLES:
                sql = "INSERT INTO " + table.replace("{series}", series).replace("{positions}", positions)
                if not postgres:  # SQLite takes the CTE after INSERT ... (cols) as part of the SELECT
                    head, select = sql.split(" SELECT ", 1)
                    sql = f"{head} {prefix}SELECT {select}"
                cursor.execute(sql, params)
    if postgres:
        from bench._workload import settle

        settle(cursor)  # statistics, visibility map, the rows written out: not during the first export
print(rows)
"""


# The export in its own process, timed from the moment Django is loaded (process start-up is not the
# export's): snapshot_create + snapshot_write, which counts, streams, writes, hashes and renames.
EXPORT = r"""
import json, os, shutil, sys, time, django
django.setup()
from django.db import connection
from reviewapp.models import Judge
from reviewapp.exports.services import exports
from bench._http import backend_cpu_seconds
fmt, keep, lines, process = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
warm = process == "warm"
if process == "worker":  # what a Celery worker's main process loads before it forks its pool
    from reviewapp.celery import preload_worker

    preload_worker()

# Kept JSONL lines (PostgreSQL): none for a first export, or all of them kept before it is timed.
refresh_s = None
if connection.vendor == "postgresql":
    try:
        from reviewapp.exports.services import export_lines
    except ImportError:  # code from before kept lines
        export_lines = None
    if export_lines is not None:
        if lines == "built":
            with connection.cursor() as cursor:  # the kept blocks too, where the code has them
                cursor.execute("TRUNCATE reviewapp_exportline")
                cursor.execute("SELECT to_regclass('reviewapp_exportblock') IS NOT NULL")
                if cursor.fetchone()[0]:
                    cursor.execute("TRUNCATE reviewapp_exportblock")
        else:  # what is not kept yet (all of it after a "built" run, nothing after a "kept" one)
            refreshed = export_lines.refresh(Judge.objects.get(slug="conciseness"))
            refresh_s = refreshed.seconds
            with connection.cursor() as cursor:  # what autovacuum does soon after: not during the export
                cursor.execute("VACUUM ANALYZE reviewapp_exportline")
                cursor.execute("SELECT to_regclass('reviewapp_exportblock') IS NOT NULL")
                if cursor.fetchone()[0]:
                    cursor.execute("VACUUM ANALYZE reviewapp_exportblock")


def server_cpu():  # CPU seconds of this connection's PostgreSQL backend (same machine), else None
    return backend_cpu_seconds(connection)


# A large export on PostgreSQL reads in two halves on connections of their own: their backends' CPU
# is read just before each closes and added to this connection's.
halves_cpu = []
try:
    import contextlib
    from reviewapp.exports.services import export_parallel
except ImportError:  # code from before the halves
    export_parallel = None
if export_parallel is not None:
    opened = export_parallel._snapshot_connection

    @contextlib.contextmanager
    def measured(snapshot=None):
        with opened(snapshot) as (other, name):
            start = backend_cpu_seconds(other)
            yield other, name
            halves_cpu.append(backend_cpu_seconds(other) - start)

    export_parallel._snapshot_connection = measured


if warm:  # one export first, untimed, in this process: a worker that has exported this format before
    first = exports.snapshot_create(judge=Judge.objects.get(slug="conciseness"), fmt=fmt, name=f"warm-{fmt}", build=False)
    exports.snapshot_path(exports.snapshot_write(snapshot_id=first.pk)).unlink()
    halves_cpu.clear()

started, cpu, server = time.perf_counter(), os.times(), server_cpu()
snapshot = exports.snapshot_create(judge=Judge.objects.get(slug="conciseness"), fmt=fmt, name=f"bench-{fmt}", build=False)
snapshot = exports.snapshot_write(snapshot_id=snapshot.pk)
seconds, done, server_done = time.perf_counter() - started, os.times(), server_cpu()
path = exports.snapshot_path(snapshot)
print(json.dumps({
    "rows": snapshot.row_count, "export_s": seconds, "bytes": path.stat().st_size, "sha256": snapshot.sha256,
    "cpu_s": done.user + done.system - cpu.user - cpu.system,
    "server_cpu_s": None if server is None else server_done - server + sum(halves_cpu),
    "refresh_s": refresh_s,
}))
if keep:
    shutil.copy(path, os.path.join(keep, path.name))
path.unlink()
"""


def run(command: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    """Run a child; return its peak RSS in KiB (wait4), its wall time, and its stdout."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{text}")
    return usage.ru_maxrss, time.monotonic() - started, text


def fresh_postgres(url: str) -> None:
    """Drop and create the benchmark's PostgreSQL database."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def filled_postgres(url: str, rows: int) -> bool:
    """Whether the PostgreSQL database already holds this benchmark's rows at this size."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as connection:
            found = connection.execute("SELECT count(*) FROM reviewapp_goldlabel").fetchone()[0]
            connection.execute("DELETE FROM reviewapp_exportsnapshot")  # the last run's, so names restart at v1
    except psycopg.Error:
        return False
    return found == rows


def bench(
    rows: int,
    formats: list[str],
    database_url: str | None = None,
    keep: str | None = None,
    reuse: bool = False,
    lines: tuple[str, ...] = ("built", "kept"),
    process: str = "cold",
) -> list[dict]:
    python = sys.executable
    results = []
    with tempfile.TemporaryDirectory(prefix="tribunal-export-bench-") as folder:
        reused = bool(database_url and reuse and filled_postgres(database_url, rows))
        if database_url and not reused:
            fresh_postgres(database_url)
        env = {
            **os.environ,
            "TRIBUNAL_VAR_DIR": folder,
            "MEDIA_ROOT": f"{folder}/media",
            "DATABASE_URL": database_url or f"sqlite:///{folder}/bench.sqlite3",
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "PYTHONPATH": str(ROOT),
            "LOG_LEVEL": "WARNING",
        }
        env.pop("CELERY_BROKER_URL", None)
        generated_s = 0.0
        if not reused:
            run([python, "manage.py", "migrate", "-v0"], env)
            _, generated_s, _ = run([python, "-c", GENERATE, str(rows)], env)
        runs = [(mode, fmt) for mode in (lines if database_url else ("built",)) for fmt in formats]
        for mode, fmt in runs:
            peak_kib, seconds, stdout = run([python, "-c", EXPORT, fmt, keep or "", mode, process], env)
            summary = json.loads(stdout.strip().splitlines()[-1])
            results.append(
                {
                    "database": "postgresql" if database_url else "sqlite",
                    "rows": summary["rows"],
                    "format": fmt,
                    "peak_rss_mib": round(peak_kib / 1024, 1),
                    "seconds": round(summary["export_s"], 1),
                    "rows_per_s": round(summary["rows"] / summary["export_s"]),
                    "cpu_s": round(summary["cpu_s"], 1),
                    "server_cpu_s": None if summary["server_cpu_s"] is None else round(summary["server_cpu_s"], 1),
                    "sha256": summary["sha256"],
                    "process_s": round(seconds, 1),
                    "file_mib": round(summary["bytes"] / 2**20, 1),
                    "generate_s": round(generated_s, 1),
                    "lines": mode if database_url else "-",
                    "process": process,
                    "refresh_s": None if summary.get("refresh_s") is None else round(summary["refresh_s"], 1),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--formats", nargs="+", default=["jsonl", "csv", "parquet", "eva"])
    parser.add_argument("--database-url", help="a PostgreSQL database to drop, create and fill (default: SQLite)")
    parser.add_argument("--keep", help="a folder to copy each exported file into (to compare two versions)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the PostgreSQL database when it already holds the rows of this size (before/after pairs on one database)",
    )
    parser.add_argument(
        "--lines",
        nargs="+",
        choices=["built", "kept"],
        default=["built", "kept"],
        help="PostgreSQL, each format timed once per mode given (default both, in this order): every row"
        " built (no row kept: a first export), then every row kept before the export is timed (the"
        " usual, repeated export; the refresh's seconds are reported)",
    )
    parser.add_argument(
        "--process",
        choices=["cold", "worker", "warm"],
        default="cold",
        help="the export's process: cold (a fresh process, every library loaded on first use), worker (what"
        " a Celery worker's pool process starts with: reviewapp.celery.preload_worker run before the"
        " export), warm (one export first, untimed: a worker that has exported this format before; peak"
        " RSS then covers both)",
    )
    parser.add_argument("--warm", action="store_const", const="warm", dest="process", help="--process warm")
    args = parser.parse_args()
    results = [
        result
        for rows in args.rows
        for result in bench(rows, args.formats, args.database_url, args.keep, args.reuse, args.lines, args.process)
    ]
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    header = f"{'database':<10} {'rows':>9} {'format':<8} {'peak RSS MiB':>12} {'seconds':>8} {'rows/s':>8}"
    print(
        header + f" {'CPU s':>6} {'DB CPU s':>8} {'file MiB':>9} {'lines':>6} {'refresh s':>9} {'process':>7}  sha256"
    )
    for r in results:
        server = "-" if r["server_cpu_s"] is None else r["server_cpu_s"]
        print(
            f"{r['database']:<10} {r['rows']:>9} {r['format']:<8} {r['peak_rss_mib']:>12} {r['seconds']:>8} "
            f"{r['rows_per_s']:>8} {r['cpu_s']:>6} {server:>8} {r['file_mib']:>9} {r['lines']:>6}"
            f" {'-' if r['refresh_s'] is None else r['refresh_s']:>9} {r['process']:>7}  {r['sha256'][:12]}"
        )


if __name__ == "__main__":
    main()

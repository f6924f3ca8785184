"""Rate and peak memory of an export at two sizes: memory should not grow with the row count.

    PYTHONPATH=. .venv/bin/python bench/export_memory.py [--rows 100000 1000000] [--formats jsonl parquet]
        [--database-url postgres://postgres@127.0.0.1:5432/tribunal_bench_export]

For each size: a fresh database (SQLite in a temporary folder, or the PostgreSQL database named by
--database-url, dropped and created again; it must not be one you need), N gold-labelled agent turns (two per
conversation, each after a user turn, so rows carry context), then `manage.py export_dataset` in its
own process, whose peak RSS (ru_maxrss from wait4) and wall time are reported. Data generation runs
in another process, so its memory is not counted.
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
FALSE = False
from django.db import connection, transaction
from django.utils import timezone
from reviewapp.models import Dataset, Judge
rows = int(sys.argv[1])
judge = Judge.objects.create(slug="conciseness", level="turn", scale="ordinal", scale_min=1, scale_max=3)
dataset = Dataset.objects.create(name="bench", kind="validation")
now = timezone.now()
conversations = (rows + 1) // 2
batch = 20000
with connection.cursor() as cursor:
    for start in range(0, conversations, batch):
        ids = range(start + 1, min(conversations, start + batch) + 1)
        with transaction.atomic():
            cursor.executemany(
                "INSERT INTO reviewapp_conversation (id, dataset_id, external_id, language, metadata, audio, created_at)"
                " VALUES (%s, %s, %s, %s, '{}', '', %s)",
                [(c, dataset.pk, f"conv-{c:07d}", ("en", "fr", "ja", "hi")[c % 4], now) for c in ids],
            )
            turns, labels = [], []
            for c in ids:
                for position in range(4):
                    turn_id = (c - 1) * 4 + position + 1
                    agent = position % 2 == 1
                    text = (f"Agent answer {position} in call {c}: your booking is confirmed for Friday."
                            if agent else f"User question {position} in call {c}?")
                    turns.append((turn_id, c, position, "agent" if agent else "user", text))
                    if agent and len(labels) + start * 2 < rows:
                        labels.append((judge.pk, c, turn_id, "imported", 1 + (c + position) % 3, now))
            cursor.executemany(
                "INSERT INTO reviewapp_turn (id, conversation_id, position, role, text, intended_text, entities, metadata)"
                " VALUES (%s, %s, %s, %s, %s, '', '[]', '{}')",
                turns,
            )
            cursor.executemany(
                "INSERT INTO reviewapp_goldlabel (judge_id, conversation_id, turn_id, source, rating, label, failure_modes,"
                " excluded, metadata, created_at) VALUES (%s, %s, %s, %s, %s, '', '[]', FALSE, '{}', %s)",
                labels,
            )
print(rows)
"""


# The export in its own process, timed from the moment Django is loaded (process start-up is not the
# export's): snapshot_create + snapshot_write, which counts, streams, writes, hashes and renames.
EXPORT = r"""
import json, sys, time, django
django.setup()
from reviewapp.models import Judge
from reviewapp.services import exports
fmt = sys.argv[1]
started = time.perf_counter()
snapshot = exports.snapshot_create(judge=Judge.objects.get(slug="conciseness"), fmt=fmt, name=f"bench-{fmt}", build=False)
snapshot = exports.snapshot_write(snapshot_id=snapshot.pk)
seconds = time.perf_counter() - started
path = exports.snapshot_path(snapshot)
print(json.dumps({"rows": snapshot.row_count, "export_s": seconds, "bytes": path.stat().st_size}))
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


def bench(rows: int, formats: list[str], database_url: str | None = None) -> list[dict]:
    python = sys.executable
    results = []
    with tempfile.TemporaryDirectory(prefix="tribunal-export-bench-") as folder:
        if database_url:
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
        run([python, "manage.py", "migrate", "-v0"], env)
        _, generated_s, _ = run([python, "-c", GENERATE, str(rows)], env)
        for fmt in formats:
            peak_kib, seconds, stdout = run([python, "-c", EXPORT, fmt], env)
            summary = json.loads(stdout.strip().splitlines()[-1])
            results.append(
                {
                    "database": "postgresql" if database_url else "sqlite",
                    "rows": summary["rows"],
                    "format": fmt,
                    "peak_rss_mib": round(peak_kib / 1024, 1),
                    "seconds": round(summary["export_s"], 1),
                    "rows_per_s": round(summary["rows"] / summary["export_s"]),
                    "process_s": round(seconds, 1),
                    "file_mib": round(summary["bytes"] / 2**20, 1),
                    "generate_s": round(generated_s, 1),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--formats", nargs="+", default=["jsonl", "csv", "parquet", "eva"])
    parser.add_argument("--database-url", help="a PostgreSQL database to drop, create and fill (default: SQLite)")
    args = parser.parse_args()
    results = [result for rows in args.rows for result in bench(rows, args.formats, args.database_url)]
    header = f"{'database':<10} {'rows':>9} {'format':<8} {'peak RSS MiB':>12} {'seconds':>8} {'rows/s':>8}"
    print(header + f" {'file MiB':>9}")
    for r in results:
        print(
            f"{r['database']:<10} {r['rows']:>9} {r['format']:<8} {r['peak_rss_mib']:>12} {r['seconds']:>8} "
            f"{r['rows_per_s']:>8} {r['file_mib']:>9}"
        )


if __name__ == "__main__":
    main()

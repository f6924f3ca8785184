"""Peak memory of an export at two sizes: it should not grow with the row count.

    PYTHONPATH=. .venv/bin/python bench/export_memory.py [--rows 100000 1000000] [--formats jsonl parquet]

For each size: a fresh SQLite database in a temporary folder, N gold-labelled agent turns (two per
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

ROOT = Path(__file__).resolve().parents[1]

GENERATE = r"""
import sys, django
django.setup()
from django.db import connection, transaction
from django.utils import timezone
from reviewapp.models import Dataset, Judge
rows = int(sys.argv[1])
judge = Judge.objects.create(slug="conciseness", level="turn", scale="ordinal", scale_min=1, scale_max=3)
dataset = Dataset.objects.create(name="bench", kind="validation")
now = timezone.now().isoformat()
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
                " excluded, metadata, created_at) VALUES (%s, %s, %s, %s, %s, '', '[]', 0, '{}', %s)",
                labels,
            )
print(rows)
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


def bench(rows: int, formats: list[str]) -> list[dict]:
    python = sys.executable
    results = []
    with tempfile.TemporaryDirectory(prefix="tribunal-export-bench-") as folder:
        env = {
            **os.environ,
            "TRIBUNAL_VAR_DIR": folder,
            "DATABASE_URL": f"sqlite:///{folder}/bench.sqlite3",
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "PYTHONPATH": str(ROOT),
            "LOG_LEVEL": "WARNING",
        }
        env.pop("CELERY_BROKER_URL", None)
        run([python, "manage.py", "migrate", "-v0"], env)
        _, generated_s, _ = run([python, "-c", GENERATE, str(rows)], env)
        for fmt in formats:
            out = Path(folder) / f"out.{fmt}"
            peak_kib, seconds, stdout = run(
                [python, "manage.py", "export_dataset", "--judge", "conciseness", "--format", fmt, "--out", str(out)],
                env,
            )
            summary = json.loads(stdout.strip().splitlines()[-1])
            results.append(
                {
                    "rows": summary["rows"],
                    "format": fmt,
                    "peak_rss_mib": round(peak_kib / 1024, 1),
                    "seconds": round(seconds, 1),
                    "rows_per_s": round(summary["rows"] / seconds),
                    "file_mib": round(out.stat().st_size / 2**20, 1),
                    "generate_s": round(generated_s, 1),
                }
            )
            print(json.dumps(results[-1]), flush=True)
            out.unlink()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--formats", nargs="+", default=["jsonl", "csv", "parquet", "eva"])
    args = parser.parse_args()
    results = [result for rows in args.rows for result in bench(rows, args.formats)]
    print(f"{'rows':>9} {'format':<8} {'peak RSS MiB':>12} {'seconds':>8} {'rows/s':>8} {'file MiB':>9}")
    for r in results:
        print(
            f"{r['rows']:>9} {r['format']:<8} {r['peak_rss_mib']:>12} {r['seconds']:>8} {r['rows_per_s']:>8} "
            f"{r['file_mib']:>9}"
        )


if __name__ == "__main__":
    main()

"""How fast, and in how much memory, does `dataset_import` write the benchmark workload?

The workload: N judged turns, each a conversation of 9 messages (~1.8 KB of JSONL) whose last agent
turn carries a gold label and an imported judge verdict; a third of the verdicts disagree with gold.

    .venv/bin/python bench/import_rate.py                          # 10k and 100k, SQLite
    .venv/bin/python bench/import_rate.py --sizes 10000,100000,1000000 \\
        --postgres postgres://postgres@127.0.0.1:5432/tribunal_imports
    .venv/bin/python bench/import_rate.py --legacy                 # the whole-file parse + ORM writer
    .venv/bin/python bench/import_rate.py --sizes 100000 --no-sqlite --repeats 5 --fresh \\
        --postgres postgres://postgres@127.0.0.1:5432/tribunal_imports   # five imports, each on a new database

Each (database, size) runs in a fresh process, so its peak RSS (resource.getrusage) is its own: it
is printed beside the RSS before the import, and does not grow with the file when memory is constant.
SQLite gets a new file under var/ per run; on PostgreSQL the bench dataset is deleted first (give a
fresh database for comparable figures). "cpu_seconds_database_backend" is the PostgreSQL backend's own CPU (from /proc). Migrations
run in a process of their own before each measured one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var"
TURNS = 9
JUDGE = "helpfulness"
WORDS = [
    *("the", "flight", "seat", "window", "fare", "change", "confirm", "booking", "today", "morning"),
    *("refund", "bag", "gate", "delay", "option", "passenger", "ticket", "return", "evening", "aisle"),
    *("upgrade", "receipt", "payment", "card"),
]


def generate(path: Path, n: int) -> None:
    """n conversations of 9 turns (agent first, so the last turn is the agent's), one JSON line each."""
    rng = random.Random(13)
    with path.open("w", encoding="utf-8") as handle:
        for c in range(n):
            turns = []
            for t in range(TURNS):
                agent = t % 2 == 0
                words = " ".join(rng.choices(WORDS, k=16))
                turn: dict = {
                    "role": "agent" if agent else "user",
                    "text": f"Turn {t} of call {c}: {words}.",
                    "audio_start_ms": t * 4000,
                    "audio_end_ms": t * 4000 + 3500,
                }
                if t == TURNS - 1:
                    gold = rng.randint(1, 3)
                    judged = gold if c % 3 else (gold % 3) + 1  # every third verdict disagrees with gold
                    turn["labels"] = [{"judge": JUDGE, "rating": gold}]
                    turn["verdicts"] = [
                        {"judge": JUDGE, "version": "bench-v1", "rating": judged, "explanation": f"Rated {judged}."}
                    ]
                turns.append(turn)
            record = {"external_id": f"bench-{c:07d}", "language": "en", "metadata": {"n": c}, "turns": turns}
            handle.write(json.dumps(record) + "\n")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def drop_bench_rows(connection) -> None:
    """Delete the last run's bench dataset with plain DELETEs (the ORM's cascade would load every row)."""
    dataset = "(SELECT id FROM reviewapp_dataset WHERE name = 'bench-import')"
    conversations = f"(SELECT id FROM reviewapp_conversation WHERE dataset_id IN {dataset})"  # noqa: S608
    with connection.cursor() as cursor:
        for table in ("reviewapp_verdict", "reviewapp_goldlabel", "reviewapp_turn"):
            cursor.execute(f"DELETE FROM {table} WHERE conversation_id IN {conversations}")  # noqa: S608
        cursor.execute(f"DELETE FROM reviewapp_conversation WHERE dataset_id IN {dataset}")  # noqa: S608
        sweeps = f"(SELECT id FROM reviewapp_sweep WHERE dataset_id IN {dataset})"  # noqa: S608
        cursor.execute(f"DELETE FROM reviewapp_sweep_judge_versions WHERE sweep_id IN {sweeps}")  # noqa: S608
        cursor.execute(f"DELETE FROM reviewapp_sweep WHERE dataset_id IN {dataset}")  # noqa: S608
        cursor.execute(f"DELETE FROM reviewapp_datasetcount WHERE dataset_id IN {dataset}")  # noqa: S608
        cursor.execute("DELETE FROM reviewapp_dataset WHERE name = 'bench-import'")


def child(source: Path, legacy: bool) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    # DEBUG keeps every query's SQL: measure what production runs.
    os.environ.setdefault("DJANGO_DEBUG", "false")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection, transaction

    from bench._http import backend_cpu_seconds
    from reviewapp.corpus.services.imports import dataset_import

    drop_bench_rows(connection)
    before = peak_rss_mb()
    server_started = backend_cpu_seconds(connection)
    started, cpu_started = time.perf_counter(), time.process_time()
    if legacy:
        from reviewapp.corpus.importers import parse_path
        from reviewapp.corpus.importers.writer import write_parsed

        parsed = parse_path(source, fmt="jsonl")
        with transaction.atomic():
            write_parsed(parsed, dataset_name="bench-import", source=str(source))
        turns = sum(len(c.turns) for c in parsed.conversations)
        conversations = len(parsed.conversations)
    else:
        summary = dataset_import(path=source, fmt="jsonl", dataset_name="bench-import")
        turns, conversations = summary.turns, summary.conversations
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_ended = backend_cpu_seconds(connection)
    server_cpu = None if server_started is None or server_ended is None else round(server_ended - server_started, 2)
    print(
        json.dumps(
            {
                "database": connection.vendor,
                "writer": "legacy" if legacy else "streaming",
                "judged_turns": conversations,
                "turns": turns,
                "file_mb": round(source.stat().st_size / 2**20, 1),
                "seconds": round(elapsed, 2),
                "cpu_seconds_this_process": round(cpu, 2),
                "cpu_seconds_database_backend": server_cpu,
                # the reading process, where the import reads in one (importers.reading_process)
                "cpu_seconds_reading_process": round(children.ru_utime + children.ru_stime, 2),
                "reading_process_peak_rss_mb": round(children.ru_maxrss / 1024),
                "load_average_1min": round(os.getloadavg()[0], 1),
                "turns_per_second": round(turns / elapsed),
                "judged_turns_per_second": round(conversations / elapsed),
                "rss_before_import_mb": round(before),
                "peak_rss_mb": round(peak_rss_mb()),
            }
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="judged turns (conversations), comma-separated")
    parser.add_argument("--postgres", default="", help="also run on this PostgreSQL database URL")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--legacy", action="store_true", help="time the whole-file parse and ORM writer instead")
    parser.add_argument("--repeats", type=int, default=1, help="imports per database and size (median and best shown)")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="drop and create the --postgres database before each import (it must be one of the bench's own)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.legacy)
        return

    VAR.mkdir(exist_ok=True)
    targets = [] if args.no_sqlite else ["sqlite"]
    targets += [args.postgres] if args.postgres else []
    for n in (int(size) for size in args.sizes.split(",")):
        source = VAR / f"bench_import_{n}.jsonl"
        if not source.exists():
            generate(source, n)
        for target in targets:
            rates = []
            for _ in range(args.repeats):
                env = dict(os.environ)
                if target == "sqlite":
                    database = VAR / "bench_import.sqlite3"
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{database}{suffix}").unlink(missing_ok=True)
                    env["DATABASE_URL"] = f"sqlite:///{database}"
                else:
                    if args.fresh:
                        fresh_postgres(target)
                    env["DATABASE_URL"] = target
                # Migrations run in a process of their own, so the import's peak RSS is the import's.
                migrate = [sys.executable, str(ROOT / "manage.py"), "migrate", "--verbosity", "0"]
                subprocess.run(migrate, env={**env, "DJANGO_DEBUG": "false"}, check=True, cwd=ROOT)
                command = [sys.executable, __file__, "--child", str(source)] + (["--legacy"] if args.legacy else [])
                done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"the import failed ({done.returncode}):\n{done.stderr}")
                line = done.stdout.strip().splitlines()[-1]
                print(line, flush=True)
                rates.append(json.loads(line)["turns_per_second"])
            if len(rates) > 1:
                print(
                    f"{'sqlite' if target == 'sqlite' else 'postgresql'} {n}: turns/s median {statistics.median(rates):,.0f},"
                    f" best {max(rates):,}, of {len(rates)}: {', '.join(f'{rate:,}' for rate in rates)}",
                    flush=True,
                )


def fresh_postgres(url: str) -> None:
    """Drop and create the PostgreSQL database the URL names (a bench database: never one you keep)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


if __name__ == "__main__":
    main()

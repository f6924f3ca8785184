"""Sweep throughput: verdicts per second through ONE Celery worker, and its CPU per verdict.

Like production: PostgreSQL, Redis as broker, a real `celery worker` process (prefork, 2 processes
by default, or --pool threads; each process makes its chunks' LLM calls from one thread pool), the
real openai client over HTTP to tests/llm_server.py.

Two runs over the same N agent turns:
  1. the endpoint answers after --latency seconds (default 0.3): verdicts per second;
  2. the endpoint answers at once: the worker's CPU time per verdict (all its processes, from
     /proc), i.e. what Tribunal itself costs around each call (rendering, the openai client,
     parsing, archiving, writing the verdict).
The LLM server runs in this process, so its CPU is not counted against the worker.

    .venv/bin/python bench/sweep.py --turns 3000 --latency 0.3
    .venv/bin/python bench/sweep.py --pool threads --concurrency 8
    (PostgreSQL and Redis from BENCH_DATABASE_URL / BENCH_REDIS_URL; the database is recreated.)

Measured on the 2-core development machine (shared with other work, so +-20%), 3000 turns,
prefork x2, 64 threads, chunks of 100:
    before (typed openai responses, a thread pool per chunk): 77 verdicts/s at 300 ms,
        80/s at 0 ms, 10.8 ms of worker CPU per verdict
    after (raw completion JSON, one pool per process): 109-141/s at 300 ms, 127-198/s at 0 ms,
        6.2-7.8 ms of worker CPU per verdict (four runs, load average 3 to 10)

The aim: the rate limit and endpoint latency set the pace, not Tribunal (100+ verdicts/s on 2 cores
at 300 ms). The spec's rate_limit_per_second is raised to --rate so the limiter does not cap the run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/tribunal_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def recreate_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(
        dbname="postgres", user=parts.username, password=parts.password, host=parts.hostname, port=parts.port or 5432
    ) as connection:
        connection.autocommit = True
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def group_cpu_seconds(pgid: int) -> float:
    """utime + stime of every live process in the process group (the worker and its pool children)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # After the command name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12)
        if int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def start_worker(env: dict[str, str], pool: str, concurrency: int, log_path: Path) -> subprocess.Popen:
    celery = Path(sys.executable).with_name("celery")
    log = log_path.open("ab")
    command = [str(celery), "-A", "reviewapp", "worker", "--pool", pool, "--concurrency", str(concurrency)]
    command += ["-l", "warning", "--without-mingle", "--without-gossip", "-n", "bench@%h"]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process


def wait_ready(redis_url: str, timeout: float = 60.0) -> None:
    from reviewapp.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.control.ping(timeout=1.0):
            return
    raise SystemExit("the worker did not answer a ping in time")


def run_sweep(dataset, judge_version, *, label: str) -> tuple[float, int, object]:
    from reviewapp.models import Sweep
    from reviewapp.services.sweeps import sweep_start
    from reviewapp.tasks.sweeps import sweep_queue

    started = time.monotonic()
    sweep = sweep_start(
        dataset=dataset, judge_versions=[judge_version], repeats=1, qa_sample=0, name=label, dispatch=sweep_queue
    )
    last = 0.0
    while True:
        sweep.refresh_from_db()
        now = time.monotonic()
        if sweep.status not in (Sweep.Status.PENDING, Sweep.Status.RUNNING):
            break
        if now - last > 2:
            print(f"  [{label}] {now - started:6.1f}s {sweep.verdicts_written} verdicts", file=sys.stderr, flush=True)
            last = now
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    return elapsed, sweep.verdicts_written, sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--latency", type=float, default=0.3, help="endpoint latency for the throughput run (s)")
    parser.add_argument("--pool", choices=("prefork", "threads"), default="prefork", help="the worker's --pool")
    parser.add_argument("--concurrency", type=int, default=2, help="chunk tasks at once (processes or threads)")
    parser.add_argument("--threads", type=int, default=64, help="LLM calls in flight per chunk task")
    parser.add_argument("--chunk-size", type=int, default=100)
    parser.add_argument("--rate", type=float, default=2000.0, help="rate_limit_per_second put in the judge spec")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL))
    args = parser.parse_args()

    from tests.llm_server import run_llm_server

    recreate_database(args.database_url)
    var_dir = Path(tempfile.mkdtemp(prefix="tribunal-bench-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "TRIBUNAL_VAR_DIR": str(var_dir),
        "TRIBUNAL_CODE_VERSION": "bench",
        "TRIBUNAL_SWEEP_LLM_THREADS": str(args.threads),
        "TRIBUNAL_SWEEP_CHUNK_SIZE": str(args.chunk_size),
        "LOG_LEVEL": "WARNING",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    import redis

    redis.Redis.from_url(args.redis_url).flushdb()

    os.environ.update({k: env[k] for k in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "CELERY_BROKER_URL")})
    os.environ.update({k: env[k] for k in ("TRIBUNAL_VAR_DIR", "TRIBUNAL_CODE_VERSION", "TRIBUNAL_SWEEP_CHUNK_SIZE")})
    import django

    django.setup()
    from reviewapp.models import Conversation, Dataset, Turn
    from reviewapp.services.judges import judge_version_store
    from scoring.specs import load_specs

    spec = load_specs(ROOT / "judges" / "conciseness.yaml")[0]
    spec = dataclasses.replace(spec, params={**spec.params, "rate_limit_per_second": args.rate})
    judge_version = judge_version_store(spec=spec)
    dataset = Dataset.objects.create(name="bench-sweep")
    conversations = Conversation.objects.bulk_create(
        [Conversation(dataset=dataset, external_id=f"b{n:06d}", language="en") for n in range(args.turns)]
    )
    Turn.objects.bulk_create(
        [
            turn
            for n, conversation in enumerate(conversations)
            for turn in (
                Turn(conversation=conversation, position=0, role="user", text=f"Can you move my booking {n}?"),
                Turn(conversation=conversation, position=1, role="agent", text=f"Sure, booking {n} moves to Monday."),
            )
        ],
        batch_size=2000,
    )

    results: dict[str, object] = {
        "turns": args.turns,
        "pool": args.pool,
        "concurrency": args.concurrency,
        "threads": args.threads,
        "chunk_size": args.chunk_size,
    }
    with run_llm_server(behaviour="good", latency_s=args.latency) as server:
        worker_env = {**env, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
        worker = start_worker(worker_env, args.pool, args.concurrency, var_dir / "worker.log")
        try:
            wait_ready(args.redis_url)
            elapsed, verdicts, _ = run_sweep(dataset, judge_version, label=f"latency {args.latency}s")
            results["latency_s"] = args.latency
            results["throughput_seconds"] = round(elapsed, 2)
            results["throughput_verdicts"] = verdicts
            results["verdicts_per_second"] = round(verdicts / elapsed, 1)
            # LLM calls in flight at most: the pool is per process (shared by a threads worker's tasks).
            in_flight = args.threads * (args.concurrency if args.pool == "prefork" else 1)
            results["ceiling_verdicts_per_second"] = round(in_flight / args.latency, 1) if args.latency else None

            server.set_latency(0.0)
            cpu_before = group_cpu_seconds(worker.pid)
            elapsed0, verdicts0, _ = run_sweep(dataset, judge_version, label="latency 0s")
            cpu = group_cpu_seconds(worker.pid) - cpu_before
            results["zero_latency_seconds"] = round(elapsed0, 2)
            results["zero_latency_verdicts_per_second"] = round(verdicts0 / elapsed0, 1)
            results["worker_cpu_seconds"] = round(cpu, 2)
            results["worker_cpu_ms_per_verdict"] = round(1000 * cpu / max(1, verdicts0), 2)
            results["requests_served"] = len(server.requests)
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

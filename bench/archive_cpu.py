"""CPU per verdict of what a sweep's chunk does once its answers are back, apart from the calls.

    PYTHONPATH=. .venv/bin/python bench/archive_cpu.py [--turns 3000] [--rounds 3]
    (PostgreSQL from BENCH_DATABASE_URL, recreated; --database-url sqlite:///path for SQLite)

bench/sweep.py gives the whole worker's CPU per verdict, which on a shared 2-core machine moves by a
fifth from run to run with the calls' threads and the machine's other work. This runs one part of
it alone, in one thread, on the conciseness judge and bench/sweep.py's turns: the chunk's archive
write (llm_tier._Archive.write) in batches of 128, each answer a well-formed reply as
tests/llm_server.py gives: the prompts stored once by hash, the calls archived, the answers parsed
and the verdicts written, one transaction per batch. Each round is a new sweep over the same
turns, so the first round stores the user prompts and later rounds find them stored (as a rerun
does); the lowest round of each kind is printed, with the thread's CPU per verdict.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sweep import DEFAULT_DATABASE_URL, recreate_database, turn_dataset  # noqa: E402

BATCH = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3, help="sweeps over the same turns after the first")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL))
    args = parser.parse_args()

    if args.database_url.startswith("postgres"):
        recreate_database(args.database_url)
    elif args.database_url.startswith("sqlite:///"):
        Path(args.database_url.removeprefix("sqlite:///")).unlink(missing_ok=True)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "DATABASE_URL": args.database_url,
            "DJANGO_DEBUG": "false",  # DEBUG keeps every query's SQL: measure what production runs
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from django.db import connection

    from reviewapp.judging.services.judges import judge_version_store
    from reviewapp.judging.services.sweeps.llm_tier import _Archive, variables_for
    from reviewapp.judging.services.sweeps.verdicts import conversation_turns, load_targets
    from reviewapp.models import Judge, Sweep, Turn, Verdict
    from scoring.llm import LLMReply
    from scoring.specs import load_specs, render
    from tests.llm_answers import good_answer

    spec = load_specs(ROOT / "judges" / "conciseness.yaml")[0]
    spec = dataclasses.replace(spec, version="bench-archive")
    jv = judge_version_store(spec=spec)
    dataset = turn_dataset("bench-archive", args.turns)
    turn_ids = list(
        Turn.objects.filter(conversation__dataset=dataset, role=Turn.Role.AGENT)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    targets = load_targets(Judge.Level.TURN, turn_ids)
    by_conversation = conversation_turns(t.conversation.pk for t in targets.values())
    jobs = []
    for target in targets.values():
        prompt = render(spec, variables_for(spec, target, by_conversation), language=target.language)
        body = {
            "model": "bench",
            "messages": [{"role": "system", "content": prompt.system}, {"role": "user", "content": prompt.user}],
        }
        jobs.append((target, prompt, LLMReply(good_answer(body), 420, 35, 300, 1, "")))
    print(f"{len(jobs):,} answered calls, batches of {BATCH}, {connection.vendor}")

    results: dict[str, list[float]] = {"first sweep (prompts new)": [], "rerun (prompts stored)": []}
    for round_number in range(args.rounds + 1):
        sweep = Sweep.objects.create(dataset=dataset, name=f"archive {round_number}", status=Sweep.Status.RUNNING)
        archive = _Archive(sweep=sweep, jv=jv, spec=spec, model="bench", sent_params={}, clips={})
        cpu = 0.0
        for start in range(0, len(jobs), BATCH):
            answered = [(target, 0, prompt, reply) for target, prompt, reply in jobs[start : start + BATCH]]
            began = time.thread_time()
            archive.write(answered)
            cpu += time.thread_time() - began
        written = Verdict.objects.filter(sweep=sweep).count()
        assert written == len(jobs), f"{written} verdicts written of {len(jobs)}"
        kind = "first sweep (prompts new)" if round_number == 0 else "rerun (prompts stored)"
        results[kind].append(cpu / len(jobs) * 1000)
    summary = {
        kind: f"{min(values):.3f} ms per verdict (rounds: {', '.join(f'{v:.3f}' for v in values)})"
        for kind, values in results.items()
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()

"""How fast does `dataset_import` write? Generates 100k turns of Tribunal JSONL and times one import.

    .venv/bin/python bench/import_rate.py                       # fresh SQLite file under var/
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tribunal_bench .venv/bin/python bench/import_rate.py

The database is migrated first; on SQLite the bench file is deleted and recreated each run, on any
other database the bench dataset is deleted before the timed import.
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VAR = ROOT / "var"
sys.path.insert(0, str(ROOT))


def generate(path: Path, conversations: int, turns: int) -> None:
    rng = random.Random(7)
    with path.open("w", encoding="utf-8") as handle:
        for c in range(conversations):
            record_turns = []
            for t in range(turns):
                turn = {
                    "role": "user" if t % 2 == 0 else "agent",
                    "text": f"Synthetic turn {t} of conversation {c}: " + " ".join(rng.choices(WORDS, k=20)),
                    "audio_start_ms": t * 4000,
                    "audio_end_ms": t * 4000 + 3500,
                }
                if t % 2 == 1:
                    turn["intended_text"] = turn["text"].replace("flight", "Flight")
                if t % 2 == 1 and c % 10 == 0:
                    turn["labels"] = [{"judge": "conciseness", "rating": rng.randint(1, 3)}]
                    turn["verdicts"] = [{"judge": "conciseness", "version": "bench", "rating": rng.randint(1, 3)}]
                record_turns.append(turn)
            record = {"external_id": f"bench-{c:06d}", "language": "en", "metadata": {"n": c}, "turns": record_turns}
            handle.write(json.dumps(record) + "\n")


WORDS = [
    "the",
    "flight",
    "seat",
    "window",
    "fare",
    "change",
    "confirm",
    "booking",
    "today",
    "morning",
    "refund",
    "bag",
    "gate",
    "delay",
    "option",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()

    VAR.mkdir(exist_ok=True)
    if not os.environ.get("DATABASE_URL"):
        database = VAR / "bench_import.sqlite3"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    # DEBUG keeps (and on SQLite re-quotes) every query's SQL: measure what production runs.
    os.environ.setdefault("DJANGO_DEBUG", "false")

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from reviewapp.models import Dataset
    from reviewapp.services.imports import dataset_import

    call_command("migrate", verbosity=0)
    Dataset.objects.filter(name="bench-import").delete()

    source = VAR / "bench_import.jsonl"
    generate(source, args.conversations, args.turns)

    started = time.perf_counter()
    summary = dataset_import(path=source, fmt="jsonl", dataset_name="bench-import", language=None, skip_invalid=False)
    elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "database": connection.vendor,
                "conversations": summary.conversations,
                "turns": summary.turns,
                "labels": summary.labels,
                "verdicts": summary.verdicts,
                "seconds": round(elapsed, 2),
                "turns_per_second": round(summary.turns / elapsed),
            }
        )
    )


if __name__ == "__main__":
    main()

"""Latency of the JSON API in-process: per endpoint, median and p95 of N requests through the full middleware.

    PYTHONPATH=. .venv/bin/python bench/api_latency.py [--requests 300] [--verdicts 2000]

A fresh SQLite database in a temporary folder, migrated; a dataset of `--verdicts` agent turns with a
finished sweep (one resolved verdict per turn), a written CSV snapshot and a lead's token with every scope.
Then each endpoint is called `--requests` times with Django's test client (the whole middleware stack,
URL resolution, token check, validation and rendering), after 20 warm-up calls. The gate endpoint counts
every verdict of the sweep, so it grows with `--verdicts`; the others should not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup(folder: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.MEDIA_ROOT = folder / "media"
    call_command("migrate", verbosity=0)


def _seed(verdicts: int) -> tuple[str, int, int]:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from bench import _workload as workload
    from reviewapp.exports.services.exports import snapshot_create, snapshot_write
    from reviewapp.judging.services.judges import judge_version_store
    from reviewapp.models import Dataset, Profile, Sweep
    from reviewapp.people.services.api_tokens import SCOPES, api_token_create
    from scoring.specs import load_specs

    version = judge_version_store(spec=load_specs(ROOT / "judges" / "conciseness.yaml")[0])
    lead = get_user_model().objects.create_user("lead")
    Profile.objects.create(user=lead, role="lead", languages=[])
    dataset = Dataset.objects.create(name="bench")
    sweep = Sweep.objects.create(dataset=dataset, status=Sweep.Status.DONE, finished_at=timezone.now())
    sweep.judge_versions.set([version])
    answers = workload.write_calls(
        dataset,
        range(verdicts),
        external_id=lambda number: f"c{number}",
        language=lambda number: "fr",
        messages=lambda number: [("user", "Allô ?"), ("agent", "Bonjour.")],
    )
    workload.write_verdicts(
        sweep, version, ((turn, {"tier": "llm", "rating": 1 + number % 3}) for number, turn in enumerate(answers))
    )
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=version.judge, fmt="csv", build=False).pk)
    raw = api_token_create(user=lead, name="bench", scopes=SCOPES)[1]
    return raw, sweep.pk, snapshot.pk


def _time(client, method: str, path: str, requests: int, **extra) -> dict:
    def once():
        response = getattr(client, method)(path, **extra)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
        return response.status_code

    status = {once() for _ in range(20)}
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        once()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "status": sorted(status),
        "median_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[int(len(samples) * 0.95) - 1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--verdicts", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        _setup(Path(folder))
        import logging

        logging.disable(logging.WARNING)  # the refused requests below would log one line each
        from django.test import Client

        raw, sweep_id, snapshot_id = _seed(args.verdicts)
        client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
        refused = json.dumps({"dataset": "bench", "judges": ["conciseness"], "repeats": "2"})
        cases = {
            "GET /sweeps/ID": ("get", f"/api/v1/sweeps/{sweep_id}", {}),
            "GET /sweeps/ID/gate": ("get", f"/api/v1/sweeps/{sweep_id}/gate", {}),
            "GET /snapshots": ("get", "/api/v1/snapshots", {}),
            "GET /snapshots/ID/download": ("get", f"/api/v1/snapshots/{snapshot_id}/download", {}),
            "POST /sweeps (refused: repeats is a string)": (
                "post",
                "/api/v1/sweeps",
                {"data": refused, "content_type": "application/json"},
            ),
            "GET /nothing (JSON 404)": ("get", "/api/v1/nothing", {}),
        }
        report = {
            name: _time(client, method, path, args.requests, **extra) for name, (method, path, extra) in cases.items()
        }
        print(json.dumps({"requests": args.requests, "verdicts": args.verdicts, "endpoints": report}, indent=2))


if __name__ == "__main__":
    main()

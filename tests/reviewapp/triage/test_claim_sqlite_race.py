"""Concurrent claims on SQLite: reviewers asking at the same instant never share an item.

SQLite's claim reads the next item and takes it in one transaction that holds the write lock from its
BEGIN (`claims._claim_next_sqlite`). The race runs in a process of its own on a SQLite file, with the
settings `make run` has (WAL, a busy timeout, IMMEDIATE transactions), each reviewer in a thread with
its own connection: the test database in memory cannot have two connections waiting on each other.
The queue, the reviewers and the race are tests/integration/test_claim_postgres.py's.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's claim (PostgreSQL's: integration)")
ROOT = Path(__file__).resolve().parents[3]
REVIEWERS, ITEMS = 4, 30

RACE = f"""
import json
import django
django.setup()
from reviewapp.models import AuditEvent, ReviewItem
from tests.integration.test_claim_postgres import claim_every_item, queue_of, reviewers

queue_of({ITEMS})
claimed, clashes, errors = claim_every_item(reviewers({REVIEWERS}), {ITEMS}, seconds=120)
print(json.dumps({{
    "errors": [repr(e) for e in errors],
    "clashes": clashes,
    "claimed": [sorted(ids) for ids in claimed.values()],
    "items": sorted(ReviewItem.objects.values_list("pk", flat=True)),
    "audited": AuditEvent.objects.filter(action="item.claim").count(),
}}))
"""


def test_simultaneous_claims_on_sqlite_never_give_one_item_to_two_reviewers(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'race.sqlite3'}", "DJANGO_SETTINGS_MODULE": "reviewapp.settings"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=120)
    done = subprocess.run([sys.executable, "-c", RACE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["errors"] == [] and outcome["clashes"] == []
    # Each reviewer saw every item exactly once (a skip never offers it again), each claim audited once.
    assert len(outcome["items"]) == ITEMS
    assert outcome["claimed"] == [outcome["items"]] * REVIEWERS
    assert outcome["audited"] == REVIEWERS * ITEMS

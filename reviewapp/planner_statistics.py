"""The query planner's statistics, refreshed after a write of many rows (an import, a triage).

SQLite gathers no statistics by itself, and without them its planner guesses: at a million turns the
queue's count of what a reviewer cannot claim walked a language's whole active queue (13 ms; 34 ms
before those sets were asked as `id IN (...)`) where the statistics show that looking up the few
items under a lease or sent back by id is cheaper. So once a bulk write commits, the tables it filled
are analyzed: an import's (`IMPORTED`), a sweep's verdicts, the review items any triage creates
(`triage.review_items_merge`, which every triage writes through). All of them take about 0.25 s at a
million turns.

Only tables written in bulk are analyzed: those a reviewer's work grows one row at a time (reviews,
skips, comments) keep no statistics, so the planner takes them for large tables and reads them by
their indexes, where statistics taken while they were small would have it scan them as they grow.
PostgreSQL's autovacuum analyzes a table soon after such a write by itself.
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Model

from reviewapp.models import Conversation, GoldLabel, ReviewItem, Turn, Verdict

IMPORTED = (Conversation, Turn, Verdict, GoldLabel)  # what an import writes in bulk
BULK = (*IMPORTED, ReviewItem)  # and a triage


def refresh_after_commit(*models: type[Model]) -> None:
    """Analyze the tables of `models` once the current transaction commits (at once outside one)."""
    tables = [model._meta.db_table for model in models]
    transaction.on_commit(lambda: analyze(tables))


def analyze(tables: list[str]) -> None:
    """`ANALYZE` of `tables`, on SQLite (PostgreSQL's autovacuum keeps its own)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")

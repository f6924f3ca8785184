"""The queue filtered by a reason reads a partial index per reason in claim order (migrations
0012_item_queue_per_reason on PostgreSQL, 0016 on SQLite); on every database the filter keeps the items
that have the reason among theirs, and only those."""

import importlib

import pytest
from django.db import connection

from reviewapp.models import ReviewItem
from reviewapp.triage.selectors.queue import top_items
from reviewapp.triage.selectors.queue_filters import QueueFilters
from tests.factories import make_item

MIGRATION = importlib.import_module("reviewapp.migrations.0012_item_queue_per_reason")
on_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans")


def test_every_reason_an_item_can_have_has_its_index():
    assert sorted(MIGRATION.REASONS) == sorted(ReviewItem.Reason.values)


@pytest.mark.django_db
def test_each_index_holds_the_active_items_of_its_reason_in_claim_order():
    """PostgreSQL's ask for the reason by containment, SQLite's by the quoted code in the JSON text,
    each as its `QueueFilters.q` asks it."""
    if connection.vendor == "postgresql":
        sql = "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'reviewapp_reviewitem'"
        columns, statuses = "(language, priority DESC, id)", "'open'"
        condition = """reasons @> '["{}"]'::jsonb"""
    else:
        sql = "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'reviewapp_reviewitem'"
        columns, statuses = '("language", "priority" DESC, "id")', "\"status\" IN ('open', 'in_review')"
        condition = "\"reasons\" LIKE '%\"{}\"%' ESCAPE '\\'"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        found = dict(cursor.fetchall())
    for reason in ReviewItem.Reason.values:
        definition = found[f"item_queue_{reason}"]
        assert columns in definition and statuses in definition and "'in_review'" in definition, definition
        code = reason if connection.vendor == "postgresql" else reason.replace("_", "\\_")
        assert condition.format(code) in definition, definition


@pytest.mark.django_db
def test_a_reason_filter_keeps_exactly_the_items_with_that_reason(make_user):
    lists = (["unresolved"], ["qa_sample"], ["gold_disagrees", "qa_sample"], ["runs_disagree"], [])
    items = [make_item("fr", reasons=reasons, priority=100 - k) for k, reasons in enumerate(lists * 3)]
    lead = make_user("lea", role="lead")
    for reason in ("qa_sample", "gold_disagrees", "unresolved", "high_variance"):
        shown = top_items(user=lead, filters=QueueFilters(reason=reason), languages=["fr"])
        expected = [item.pk for item in items if reason in item.reasons]
        assert sorted(item.pk for item in shown) == sorted(expected), reason


@pytest.mark.django_db
@on_postgres
def test_the_filtered_first_page_is_read_from_the_reasons_index(make_user):
    for k in range(30):
        make_item(("fr", "de")[k % 2], reasons=(["unresolved"], ["gold_disagrees", "qa_sample"])[k % 2], priority=k)
    lead = make_user("lea", role="lead")
    queryset = top_items(user=lead, filters=QueueFilters(reason="gold_disagrees"), languages=["fr", "de"])
    with connection.cursor() as cursor:
        # On a table this small a sequential scan is cheaper; what is asked is whether the index applies.
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = queryset.explain()
    assert "item_queue_gold_disagrees" in plan, plan


on_sqlite = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own indexes and plans")


def _sqlite_plan(sql: str, params: list) -> str:
    """SQLite's plan of a statement as the app runs it (Django's placeholders turned into SQLite's)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(row[-1] for row in cursor.fetchall())


@pytest.mark.django_db
@on_sqlite
@pytest.mark.parametrize(
    ("reason", "index"), [("", "item_active_queue"), ("gold_disagrees", "item_queue_gold_disagrees")]
)
def test_the_sqlite_queue_page_walks_the_partial_index_of_its_filter(make_user, reason, index):
    """SQLite uses a partial index only when the statement names its condition word for word, with the
    values written in: the queue's statement writes the statuses and the reason's pattern."""
    from reviewapp.triage.selectors import queue_sql

    for k in range(30):
        make_item(("fr", "de")[k % 2], reasons=(["unresolved"], ["gold_disagrees", "qa_sample"])[k % 2], priority=k)
    lead = make_user("lea", role="lead")
    _without_statistics()
    sql, params = queue_sql.items_sql(
        user=lead, filters=QueueFilters(reason=reason), languages=["de", "fr"], after=None, limit=51
    )
    plan = _sqlite_plan(sql, params)
    walks = [line for line in plan.splitlines() if "reviewapp_reviewitem" in line]
    assert len(walks) >= 2 and all(f"INDEX {index} (language=?)" in line for line in walks), plan
    assert "SCAN" not in plan, plan


def _without_statistics() -> None:
    """The plan SQLite makes with no statistics, whatever an earlier test's ANALYZE left loaded."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone() is not None:
            cursor.execute("DELETE FROM sqlite_stat1")
            cursor.execute("ANALYZE sqlite_schema")  # reload them: none

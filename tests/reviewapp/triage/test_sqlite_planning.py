"""SQLite plans the queue's statements from statistics it does not gather by itself: an import, a
sweep and any triage analyze the tables they filled once they commit, and the count of what a reviewer cannot claim
then reads the few items under a lease or sent back by their own indexes, never a language's whole
active queue."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviewapp import planner_statistics
from reviewapp.models import GoldLabel, Review, ReviewItem
from reviewapp.triage.selectors import queue_sql
from reviewapp.triage.services.queue_items import dataset_triage
from tests.factories import dataset, dataset_of_calls, make_item, store_judge

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's statistics and plans"),
]


def analyzed_tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone() is None:
            return set()
        cursor.execute("SELECT DISTINCT tbl FROM sqlite_stat1")
        return {row[0] for row in cursor.fetchall()}


def test_a_triage_analyzes_the_review_items_once_it_commits(django_capture_on_commit_callbacks):
    data = dataset("imported")
    items = [make_item("fr", on=data, verdict_rating=3) for _ in range(4)]
    ReviewItem.objects.all().delete()
    for item in items:
        GoldLabel.objects.create(
            judge=item.judge, conversation=item.conversation, turn=item.turn, source="imported", rating=1
        )
    with connection.cursor() as cursor:  # whatever the migrations left
        cursor.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'reviewapp_reviewitem'")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dataset_triage(dataset=data, qa_rate=0)
    assert ReviewItem.objects.count() == 4
    assert "reviewapp_reviewitem" not in analyzed_tables()  # not before the commit
    for callback in callbacks:
        callback()
    assert "reviewapp_reviewitem" in analyzed_tables()


def test_the_unclaimable_count_reads_the_leased_and_sent_back_items_by_their_indexes(make_user):
    ana, bo = make_user("ana", languages=["fr"]), make_user("bo", languages=["fr"])
    items = [make_item(("fr", "de")[k % 2], priority=k) for k in range(60)]
    now = timezone.now()
    ReviewItem.objects.filter(pk=items[0].pk).update(claimed_by=bo, lease_expires_at=now + timedelta(minutes=5))
    Review.objects.create(item=items[2], reviewer=bo, rating=1, revision_requested=True)
    planner_statistics.analyze([ReviewItem._meta.db_table])
    with connection.cursor() as cursor:
        # The statistics ANALYZE took of the bench's queue at a million turns (111,112 items, five
        # languages, a few under a lease): what SQLite plans with there. A test table's own are too small
        # to tell a walk of the queue from a look-up by id.
        cursor.executemany(
            "UPDATE sqlite_stat1 SET stat = %s WHERE tbl = 'reviewapp_reviewitem' AND idx = %s",
            [
                ("111112 37038 13889 6173 1", "item_queue"),
                ("110906 22182 7394 1", "item_active_queue"),
                ("1 1 1", "item_claims"),
                ("111112 1", "reviewapp_reviewitem_turn_id_3583a047"),
            ],
        )
        cursor.execute("ANALYZE sqlite_schema")  # reload them

    statement = queue_sql._progress_statement("sqlite", False, 1)
    values = {"user": ana.pk, "now": now, "start of day": now, "language 0": "fr"}
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {statement.sql}", statement.bind(values))
        plan = "\n".join(row[-1] for row in cursor.fetchall())
        cursor.execute(statement.sql, statement.bind(values))
        names = [column[0] for column in cursor.description]
        numbers = dict(zip(names, cursor.fetchone(), strict=True))
    assert "item_claims (claimed_by_id>?)" in plan, plan
    assert "USING INDEX review_revising" in plan, plan
    assert "item_queue" not in plan and "item_active_queue" not in plan, plan
    assert numbers["unclaimable"] == 2  # the held item and the one sent back to bo


def test_an_import_analyzes_the_tables_it_filled_once_it_commits(tmp_path, django_capture_on_commit_callbacks):
    from reviewapp.corpus.services.imports import dataset_import

    source = tmp_path / "calls.jsonl"
    lines = [
        f'{{"external_id": "c{k}", "language": "fr", "turns": [{{"role": "user", "text": "bonjour {k}"}}]}}'
        for k in range(5)
    ]
    source.write_text("\n".join(lines) + "\n")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM sqlite_stat1 WHERE tbl IN ('reviewapp_conversation', 'reviewapp_turn')")
    with django_capture_on_commit_callbacks(execute=True):
        summary = dataset_import(path=source, fmt="jsonl", dataset_name="calls")
    assert summary.conversations == 5
    assert {"reviewapp_conversation", "reviewapp_turn"} <= analyzed_tables()


def test_a_finished_sweep_analyzes_its_verdicts_and_the_items_its_triage_queued(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    data = dataset_of_calls("t1", {"a": ("en", ["fine [[r=3]]"]), "b": ("en", ["oops [[bad]]"])})
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if cursor.fetchone() is not None:
            cursor.execute("DELETE FROM sqlite_stat1 WHERE tbl IN ('reviewapp_verdict', 'reviewapp_reviewitem')")
    run_sweep(dataset=data, judge_versions=[judge], qa_sample=0)
    assert ReviewItem.objects.exists()
    assert {"reviewapp_verdict", "reviewapp_reviewitem"} <= analyzed_tables()

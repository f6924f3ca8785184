"""A new dataset's foreign keys checked once per import (importers.keys) on PostgreSQL: the checks find
every broken key the row triggers would have refused, the setting is back before the import returns,
and without the privilege, with the setting off, or beside a trigger of the table's own, every row
goes through the triggers as before."""

import json

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from reviewapp.corpus.importers import bulk
from reviewapp.corpus.importers.keys import COUNTED_ON_INSERT, EXPORT_LINES, set_based_keys_available
from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Conversation, Dataset, DatasetCount, GoldLabel, JudgeVersion, Turn, Verdict
from tests.reviewapp.corpus.counts_support import assert_kept

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="session_replication_role is PostgreSQL's"),
]
WRITTEN = (Conversation, Turn, GoldLabel, Verdict)


def call(i, turns=3):
    items = [{"role": "agent" if t % 2 == 0 else "user", "text": f"turn {t} of call {i}"} for t in range(turns)]
    items[-1]["labels"] = [{"judge": "helpful", "rating": 2}]
    items[-1]["verdicts"] = [{"judge": "helpful", "version": "v1", "rating": 1 + i % 3}]
    return {"external_id": f"call-{i:04d}", "turns": items}


def calls_file(tmp_path, count=30):
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(call(i)) + "\n" for i in range(count)), encoding="utf-8")
    return path


def replication_role():
    with connection.cursor() as cursor:
        cursor.execute("SHOW session_replication_role")
        return cursor.fetchone()[0]


def import_capturing(path, **options):
    with CaptureQueriesContext(connection) as queries:
        summary = dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10, **options)
    return summary, [query["sql"] for query in queries.captured_queries]


def test_a_new_dataset_is_written_with_the_row_triggers_off_and_checked_once_per_table(tmp_path):
    assert set_based_keys_available(WRITTEN)  # the test database's role is a superuser
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            jit = cursor.fetchone()[0]
        summary, sql = import_capturing(calls_file(tmp_path))
        assert replication_role() == "origin"  # back before the import returned, in the same transaction
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            assert cursor.fetchone()[0] == jit  # off for the checks only
    switched = [q for q in sql if "set_config('session_replication_role'" in q]
    assert len(switched) == 2  # off before the first batch's COPYs, on again after the last batch
    checks = [q for q in sql if q.startswith("WITH batch AS") and "FOR KEY SHARE" in q]
    assert len(checks) == 3  # one per batch: its conversations, turns, gold labels and verdicts
    assert summary.created["turns"] == 90 and summary.created["verdicts"] == 30
    assert Turn.objects.filter(conversation__dataset__name="calls").count() == 90
    assert GoldLabel.objects.filter(turn__conversation__dataset__name="calls").count() == 30
    assert Verdict.objects.filter(turn__conversation__dataset__name="calls").count() == 30
    # The rows are the triggers' to check again from here: a broken key after the import is refused.
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO reviewapp_turn (conversation_id, position, role, text, intended_text, entities, metadata)"
            " VALUES (%s, 0, 'user', '', '', '[]', '{}')",
            [Conversation.objects.order_by("-id").values_list("id", flat=True)[0] + 1000],
        )
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_rows_written_between_batches_go_through_their_triggers(tmp_path):
    """A judge and version first named by a later batch are created with the row triggers on, and the
    next batch's COPYs have them off again."""
    records = [call(i) for i in range(30)]
    for record in records[20:]:  # the third batch names a judge (and version) of its own
        record["turns"][-1]["verdicts"] = [{"judge": "concise", "version": "v2", "rating": 2}]
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with transaction.atomic():
        summary, sql = import_capturing(path)
        assert replication_role() == "origin"
    steps = []
    for query in sql:
        if "set_config('session_replication_role'" in query:
            steps.append("replica" if "'replica'" in query else "origin")
        elif query.startswith('INSERT INTO "reviewapp_judge"') or query.startswith(
            'INSERT INTO "reviewapp_judgeversion"'
        ):
            steps.append("insert " + query.split('"')[1])
        elif query.startswith("COPY") and steps[-1] != "copy":
            steps.append("copy")
    # The first batch's judge and version are created before the triggers go off; "concise" after they
    # are back on; then off again for the third batch's rows, and on at the end.
    assert steps == [
        "insert reviewapp_judge",
        "insert reviewapp_judgeversion",
        "replica",
        "copy",
        "origin",
        "insert reviewapp_judge",
        "insert reviewapp_judgeversion",
        "replica",
        "copy",
        "origin",
    ], steps
    assert summary.created["judges"] == 2 and summary.created["verdicts"] == 30


def corrupt(monkeypatch, kind, change):
    """The writer's rows for `kind`, changed by `change(rows)` in the second batch, before they are sent."""
    original = bulk.StreamWriter._prepare_rows
    batches = []

    def prepare_rows(self, conversations):
        real_prepare = self.tables[kind].prepare

        def prepare(rows):
            if len(batches) == 1 and rows:
                rows = change(list(rows))
            return real_prepare(rows)

        self.tables[kind].prepare = prepare
        try:
            return original(self, conversations)
        finally:
            self.tables[kind].prepare = real_prepare
            batches.append(kind)

    monkeypatch.setattr(bulk.StreamWriter, "_prepare_rows", prepare_rows)
    if kind == "turns":  # the turns' lines made from their rows (as for a value COPY reads specially), to change one
        monkeypatch.setattr(bulk, "copy_lines", lambda lines, template, nulls: None)


def replace(row, index, value):
    return (*row[:index], value, *row[index + 1 :])


def refused(tmp_path):
    with pytest.raises(IntegrityError) as error:
        dataset_import(path=calls_file(tmp_path), fmt="jsonl", dataset_name="calls", batch_size=10)
    assert not Dataset.objects.filter(name="calls").exists()
    assert not Turn.objects.exists() and not Verdict.objects.exists() and not GoldLabel.objects.exists()
    return str(error.value)


def test_a_turn_of_a_conversation_that_does_not_exist_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    corrupt(monkeypatch, "turns", lambda rows: [replace(rows[0], 1, 10**9), *rows[1:]])
    message = refused(tmp_path)
    assert "reviewapp_turn" in message and "1 rows point outside the dataset" in message
    assert "(29 of 30 rows found in the dataset)" in message  # the second batch's 30 turns


def test_a_verdict_of_a_judge_version_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    corrupt(monkeypatch, "verdicts", lambda rows: [*rows[:-2], *(replace(row, 1, 10**9) for row in rows[-2:])])
    message = refused(tmp_path)
    assert "reviewapp_verdict" in message and "judge_version_id (1 missing)" in message


def test_a_label_on_a_turn_of_another_conversation_is_refused(tmp_path, monkeypatch):
    # The label names the next conversation and keeps its turn: both exist, so the triggers would let it
    # pass; the import's own check does not.
    corrupt(monkeypatch, "labels", lambda rows: [replace(rows[0], 1, rows[1][1]), *rows[1:]])
    message = refused(tmp_path)
    assert "reviewapp_goldlabel" in message and "turn_id (1 missing)" in message


def test_a_conversation_of_another_dataset_is_refused(tmp_path, monkeypatch):
    other = Dataset.objects.create(name="other")
    corrupt(monkeypatch, "conversations", lambda rows: [replace(rows[0], 1, other.pk), *rows[1:]])
    message = refused(tmp_path)
    assert "reviewapp_conversation" in message and "(9 of 10 rows" in message


def test_with_the_setting_off_every_row_goes_through_the_triggers(tmp_path, monkeypatch, settings):
    settings.TRIBUNAL_IMPORT_SET_BASED_KEYS = False
    assert not set_based_keys_available(WRITTEN)
    summary, sql = import_capturing(calls_file(tmp_path))
    assert summary.created["turns"] == 90
    assert not [q for q in sql if "set_config('session_replication_role'" in q]
    Dataset.objects.filter(name="calls").delete()
    corrupt(monkeypatch, "verdicts", lambda rows: [replace(rows[0], 1, 10**9), *rows[1:]])
    with pytest.raises(psycopg.errors.ForeignKeyViolation, match="judge_version_id"):  # from the COPY itself
        dataset_import(path=calls_file(tmp_path), fmt="jsonl", dataset_name="calls", batch_size=10)


def test_a_role_may_use_the_checks_only_when_it_may_set_the_parameter():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("CREATE ROLE tribunal_keys_probe NOSUPERUSER")  # rolled back with the transaction
        cursor.execute("SET LOCAL ROLE tribunal_keys_probe")
        assert not set_based_keys_available(WRITTEN)
        cursor.execute("RESET ROLE")
        if connection.pg_version >= 150000:
            cursor.execute("GRANT SET ON PARAMETER session_replication_role TO tribunal_keys_probe")
            cursor.execute("SET LOCAL ROLE tribunal_keys_probe")
            assert set_based_keys_available(WRITTEN)
            cursor.execute("RESET ROLE")
        transaction.set_rollback(True)


def test_a_table_with_a_trigger_of_its_own_keeps_the_row_triggers(tmp_path):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION pg_temp.keep_turn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER turn_kept AFTER INSERT ON reviewapp_turn FOR EACH ROW EXECUTE FUNCTION pg_temp.keep_turn()"
        )
        assert not set_based_keys_available(WRITTEN)
        summary, sql = import_capturing(calls_file(tmp_path))
        assert summary.created["turns"] == 90
        assert not [q for q in sql if "set_config('session_replication_role'" in q]
        transaction.set_rollback(True)


def test_the_existing_rows_the_import_names_are_locked_until_it_commits(tmp_path):
    with transaction.atomic():
        dataset_import(path=calls_file(tmp_path), fmt="jsonl", dataset_name="calls", batch_size=10)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                " WHERE l.pid = pg_backend_pid() AND c.relname = %s AND l.mode = 'RowShareLock'",
                [JudgeVersion._meta.db_table],
            )
            assert cursor.fetchone()[0] == 1  # FOR KEY SHARE: a row share lock, held until the end


def test_an_existing_row_gone_before_it_is_locked_is_refused(tmp_path, monkeypatch):
    # As if another transaction had deleted the judge version between the batch's COPY and its check.
    original = bulk.StreamWriter._prepare_rows

    def prepare_rows(self, conversations):
        prepared = original(self, conversations)
        prepared.parents[JudgeVersion] = [*prepared.parents[JudgeVersion], 10**9]
        return prepared

    monkeypatch.setattr(bulk.StreamWriter, "_prepare_rows", prepare_rows)
    message = refused(tmp_path)
    assert "1 of the import's reviewapp_judgeversion rows no longer exist" in message


def test_rows_written_with_the_triggers_off_are_counted_by_the_import_itself(tmp_path):
    """The counting insert triggers (migration 0014) and the export-line triggers (migration 0018) are
    the only triggers of the tables' own the set-based path allows: they are off with the key checks,
    BulkKeys adds the batches' counts, and no kept line draws on the new conversations."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = ANY(%s::regclass[]) AND NOT tgisinternal"
            " AND tgenabled = 'O' ORDER BY tgname",
            [[model._meta.db_table for model in WRITTEN]],
        )
        found_triggers = [row[0] for row in cursor.fetchall()]
    # A conversation is never inserted into a kept line's past, so its table has no insert trigger.
    export_lines = [name for name in EXPORT_LINES if name != "reviewapp_conversation_export_forget_i"]
    assert found_triggers == sorted([*COUNTED_ON_INSERT, *export_lines])
    path = tmp_path / "calls.jsonl"
    records = [{**call(i), "language": "fr" if i % 3 else "ja"} for i in range(30)]
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    _, sql = import_capturing(path)
    assert [q for q in sql if "set_config('session_replication_role'" in q]  # the triggers were off
    added = [q for q in sql if q.startswith("INSERT INTO reviewapp_datasetcount")]
    assert len(added) == 1  # one upsert for the whole import
    found = Dataset.objects.get(name="calls")
    kept = {row.language: (row.conversations, row.turns, row.gold_labels, row.verdicts) for row in
            DatasetCount.objects.filter(dataset=found)}  # fmt: skip
    assert kept == {"fr": (20, 60, 20, 20), "ja": (10, 30, 10, 10)}
    assert_kept()

"""On PostgreSQL, the queue counts' triggers note each item's move and fold the notes once per statement.

The triggers of the initial migration upserted a count row for every item written, in the writing
transaction. A statement that writes many items of one group (a triage opening 30,000 items of one
language and reason, a bulk close, a dataset's items deleted) then updates that one row once per item,
and none of its versions can be pruned while the transaction runs, so each update walks past all the
ones before: 10,000 items of one group took 0.8 s, the next 20,000 4.9 s, and it grows with the square.

Now a row trigger notes (group, +1 or -1) in an unlogged table, and a statement trigger folds the
transaction's notes into the counts: one upsert per group that changed, in key order (so two
transactions moving items between the same groups lock them in the same order). As before, a decrement
never creates a group: a group whose row went with its dataset or judge stays gone. SQLite updates a
row in place and keeps its row triggers.
"""

import importlib

from django.db import migrations

KEY = ("language", "judge_id", "dataset_id", "status", "reasons")
COUNTS = "reviewapp_queuecount"
ITEMS = "reviewapp_reviewitem"
NOTES = "reviewapp_queuecount_delta"
COLUMNS = ", ".join(KEY)


def _note(row: str, sign: int) -> str:
    values = ", ".join(f"{row}.{column}" for column in KEY)
    return f"INSERT INTO {NOTES} VALUES (pg_current_xact_id(), {values}, {sign});"


CHANGED = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in KEY)
SAME_GROUP = " AND ".join(f"q.{column} = net.{column}" for column in KEY)

FORWARD = f"""
DROP TRIGGER IF EXISTS reviewapp_queue_count_move ON {ITEMS};
DROP TRIGGER IF EXISTS reviewapp_queue_count_write ON {ITEMS};
DROP FUNCTION IF EXISTS reviewapp_queue_count_shift();
-- Unlogged: its rows live from an item's write to the end of its statement, in the writing transaction.
CREATE UNLOGGED TABLE {NOTES} (
    xact xid8 NOT NULL, language varchar(35) NOT NULL, judge_id bigint NOT NULL, dataset_id bigint NOT NULL,
    status varchar(32) NOT NULL, reasons jsonb NOT NULL, d integer NOT NULL
);
CREATE INDEX {NOTES}_xact ON {NOTES} (xact);
CREATE FUNCTION reviewapp_queue_count_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        {_note("OLD", -1)}
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        {_note("NEW", 1)}
    END IF;
    RETURN NULL;
END
$$;
CREATE FUNCTION reviewapp_queue_count_fold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (DELETE FROM {NOTES} WHERE xact = pg_current_xact_id() RETURNING {COLUMNS}, d),
    net AS (SELECT {COLUMNS}, SUM(d) AS n FROM gone GROUP BY {COLUMNS} HAVING SUM(d) <> 0)
    INSERT INTO {COUNTS} AS kept ({COLUMNS}, n)
    SELECT {COLUMNS}, n FROM net
    WHERE n > 0 OR EXISTS (SELECT 1 FROM {COUNTS} q WHERE {SAME_GROUP})
    ORDER BY {COLUMNS}
    ON CONFLICT ({COLUMNS}) DO UPDATE SET n = kept.n + EXCLUDED.n;
    RETURN NULL;
END
$$;
CREATE TRIGGER reviewapp_queue_count_write AFTER INSERT OR DELETE ON {ITEMS}
    FOR EACH ROW EXECUTE FUNCTION reviewapp_queue_count_note();
CREATE TRIGGER reviewapp_queue_count_move AFTER UPDATE OF {COLUMNS} ON {ITEMS}
    FOR EACH ROW WHEN ({CHANGED}) EXECUTE FUNCTION reviewapp_queue_count_note();
CREATE TRIGGER reviewapp_queue_count_fold AFTER INSERT OR DELETE OR UPDATE OF {COLUMNS} ON {ITEMS}
    FOR EACH STATEMENT EXECUTE FUNCTION reviewapp_queue_count_fold();
"""

# The initial migration's row triggers, as they were.
BACKWARD = f"""
DROP TRIGGER IF EXISTS reviewapp_queue_count_fold ON {ITEMS};
DROP TRIGGER IF EXISTS reviewapp_queue_count_move ON {ITEMS};
DROP TRIGGER IF EXISTS reviewapp_queue_count_write ON {ITEMS};
DROP FUNCTION IF EXISTS reviewapp_queue_count_fold();
DROP FUNCTION IF EXISTS reviewapp_queue_count_note();
DROP TABLE IF EXISTS {NOTES};
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    initial = importlib.import_module("reviewapp.migrations.0001_squashed_0010_queue_counts")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(BACKWARD)
        # Its triggers and function only (the statistics object it also creates is still there).
        cursor.execute(initial.POSTGRES_FORWARD.split("-- The queue filtered by a reason")[0])


class Migration(migrations.Migration):
    dependencies = [("reviewapp", "0014_dataset_counts")]

    operations = [migrations.RunPython(forward, backward)]

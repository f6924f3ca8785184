"""Counts of conversations, turns, gold labels and verdicts per dataset and language, kept on write.

The datasets list counted every visible row of the four tables on each view: at 200,000 conversations
and 1.8 million turns that one statement took 1.2 s, and it grows with the corpus. Triggers now keep
reviewapp_datasetcount equal to a GROUP BY of the rows by their conversation's (dataset, language), in
the writing transaction, on every write path: imports, services, bulk inserts, cascading deletes.

PostgreSQL: inserts noted row by row and counted once per statement, except by an import that writes
with the row triggers off, which adds its own counts; deletes per statement; moves row by row (see
below). SQLite: row-level triggers for all three (SQLite updates a row in place).

A conversation deleted takes its remaining turns, labels and verdicts with it from the counts; a turn,
label or verdict deleted after its conversation (the foreign keys are deferred) finds no conversation
and takes nothing away again. So the counts are right whichever is deleted first. A conversation that
changes dataset or language moves its rows' counts; so does a row that changes conversation.
Decrements never insert; groups that emptied stay with zeros.
"""

import django.db.models.deletion
from django.db import migrations, models

COUNTS = "reviewapp_datasetcount"
CONVERSATIONS = "reviewapp_conversation"
# Each table whose rows belong to a conversation, and the column that counts them.
CHILDREN = {"reviewapp_turn": "turns", "reviewapp_goldlabel": "gold_labels", "reviewapp_verdict": "verdicts"}
COLUMNS = ("conversations", *CHILDREN.values())
GROUP = "dataset_id, language"


def _children_of(conversation: str) -> dict[str, str]:
    """For each counted column but conversations, the COUNT of `conversation`'s rows in that table."""
    return {
        column: f"(SELECT COUNT(*) FROM {table} WHERE conversation_id = {conversation})"
        for table, column in CHILDREN.items()
    }


def _upsert_added(column: str) -> str:
    return f"ON CONFLICT ({GROUP}) DO UPDATE SET {column} = kept.{column} + EXCLUDED.{column}"


# --- PostgreSQL --------------------------------------------------------------------------------
# Inserts are noted row by row in DELTAS (the conversation and the kind of row) and folded into the
# counts once per statement, grouped. A row trigger that updated the count row itself would update one
# row N times in a transaction, each version behind the last (none can be pruned while it runs): an
# insert of 40,000 rows took 11 s that way. A statement-level trigger with a transition table would
# cost the import of a new dataset its transition tables even where it does not fire (0.7 s of backend
# CPU for 900,000 turns, and 0.7 s more to group them). Both insert triggers are of the default kind:
# that import writes with the row triggers off (session_replication_role = replica, importers.keys),
# so it skips them and adds its counts itself (BulkKeys.done), one upsert per language. Deletes are
# counted per statement, through their transition table, and moves row by row where a key changes;
# both are ENABLE ALWAYS, so no delete or move is ever left uncounted.

DELTAS = "reviewapp_datasetcount_delta"
KINDS = {CONVERSATIONS: 0, **{table: number for number, table in enumerate(CHILDREN, start=1)}}
INSERT_TRIGGERS = {
    CONVERSATIONS: "reviewapp_dataset_count_conversations_insert",
    **{table: f"reviewapp_dataset_count_{column}_insert" for table, column in CHILDREN.items()},
}
FOLD_TRIGGERS = {table: name.replace("_insert", "_fold") for table, name in INSERT_TRIGGERS.items()}
FOLDED = ", ".join(
    f"COALESCE(SUM(per.n) FILTER (WHERE per.kind = {KINDS[table]}), 0)" for table in (CONVERSATIONS, *CHILDREN)
)
ADD_ALL = ", ".join(f"{column} = kept.{column} + EXCLUDED.{column}" for column in COLUMNS)
POSTGRES_DELTAS = f"""
-- Unlogged: its rows live from a row's insert to the end of its statement, in the writing transaction.
CREATE UNLOGGED TABLE {DELTAS} (xact xid8 NOT NULL, conversation_id bigint NOT NULL, kind smallint NOT NULL);
CREATE INDEX {DELTAS}_xact ON {DELTAS} (xact);
CREATE FUNCTION reviewapp_dataset_count_fold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (DELETE FROM {DELTAS} WHERE xact = pg_current_xact_id() RETURNING conversation_id, kind),
    per AS (SELECT conversation_id, kind, COUNT(*) AS n FROM gone GROUP BY conversation_id, kind)
    INSERT INTO {COUNTS} AS kept ({GROUP}, {", ".join(COLUMNS)})
    SELECT c.dataset_id, c.language, {FOLDED}
    FROM per JOIN {CONVERSATIONS} c ON c.id = per.conversation_id
    GROUP BY c.dataset_id, c.language ORDER BY c.dataset_id, c.language
    ON CONFLICT ({GROUP}) DO UPDATE SET {ADD_ALL};
    RETURN NULL;
END
$$;
""" + "".join(
    f"CREATE TRIGGER {FOLD_TRIGGERS[table]} AFTER INSERT ON {table}"
    " FOR EACH STATEMENT EXECUTE FUNCTION reviewapp_dataset_count_fold();\n"
    for table in INSERT_TRIGGERS
)


def _noted(table: str) -> str:
    conversation = "NEW.id" if table == CONVERSATIONS else "NEW.conversation_id"
    return f"INSERT INTO {DELTAS} VALUES (pg_current_xact_id(), {conversation}, {KINDS[table]});"


def _pg_child(table: str, column: str) -> str:
    grouped = (
        f"SELECT c.dataset_id, c.language, SUM(per.n) AS n"
        f" FROM (SELECT conversation_id, COUNT(*) AS n FROM changed GROUP BY conversation_id) per"
        f" JOIN {CONVERSATIONS} c ON c.id = per.conversation_id GROUP BY c.dataset_id, c.language"
    )
    name = f"reviewapp_dataset_count_{column}"
    return f"""
CREATE FUNCTION {name}_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {COUNTS} AS kept SET {column} = kept.{column} - gone.n FROM ({grouped}) gone
    WHERE kept.dataset_id = gone.dataset_id AND kept.language = gone.language;
    RETURN NULL;
END
$$;
CREATE FUNCTION {name}_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_noted(table)}
        RETURN NULL;
    END IF;
    UPDATE {COUNTS} AS kept SET {column} = kept.{column} - 1 FROM {CONVERSATIONS} c
    WHERE c.id = OLD.conversation_id AND kept.dataset_id = c.dataset_id AND kept.language = c.language;
    INSERT INTO {COUNTS} AS kept ({GROUP}, {column})
    SELECT dataset_id, language, 1 FROM {CONVERSATIONS} WHERE id = NEW.conversation_id
    {_upsert_added(column)};
    RETURN NULL;
END
$$;
CREATE TRIGGER {INSERT_TRIGGERS[table]} AFTER INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION {name}_row();
CREATE TRIGGER {name}_delete AFTER DELETE ON {table} REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION {name}_gone();
CREATE TRIGGER {name}_move AFTER UPDATE OF conversation_id ON {table}
    FOR EACH ROW WHEN (OLD.conversation_id IS DISTINCT FROM NEW.conversation_id)
    EXECUTE FUNCTION {name}_row();
ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name}_delete;
ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name}_move;
"""


def _pg_conversations() -> str:
    children = _children_of("g.id")
    gone_columns = ", ".join(f"SUM({count}) AS {column}" for column, count in children.items())
    subtract = ", ".join(f"{column} = kept.{column} - gone.{column}" for column in COLUMNS)
    moved = _children_of("NEW.id")
    take_moved = ", ".join(
        ["conversations = kept.conversations - 1"]
        + [f"{column} = kept.{column} - {count}" for column, count in moved.items()]
    )
    add_moved = ", ".join(f"{column} = kept.{column} + EXCLUDED.{column}" for column in COLUMNS)
    name = "reviewapp_dataset_count_conversations"
    return f"""
CREATE FUNCTION {name}_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_noted(CONVERSATIONS)}
    ELSE  -- a move: the conversation's rows go with it
        UPDATE {COUNTS} AS kept SET {take_moved}
        WHERE kept.dataset_id = OLD.dataset_id AND kept.language = OLD.language;
        INSERT INTO {COUNTS} AS kept ({GROUP}, {", ".join(COLUMNS)})
        VALUES (NEW.dataset_id, NEW.language, 1, {", ".join(moved.values())})
        ON CONFLICT ({GROUP}) DO UPDATE SET {add_moved};
    END IF;
    RETURN NULL;
END
$$;
CREATE FUNCTION {name}_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE {COUNTS} AS kept SET {subtract}
    FROM (SELECT g.dataset_id, g.language, COUNT(*) AS conversations, {gone_columns}
          FROM changed g GROUP BY g.dataset_id, g.language) gone
    WHERE kept.dataset_id = gone.dataset_id AND kept.language = gone.language;
    RETURN NULL;
END
$$;
CREATE TRIGGER {INSERT_TRIGGERS[CONVERSATIONS]} AFTER INSERT ON {CONVERSATIONS}
    FOR EACH ROW EXECUTE FUNCTION {name}_row();
CREATE TRIGGER {name}_delete AFTER DELETE ON {CONVERSATIONS}
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION {name}_gone();
CREATE TRIGGER {name}_move AFTER UPDATE OF dataset_id, language ON {CONVERSATIONS}
    FOR EACH ROW WHEN (OLD.dataset_id IS DISTINCT FROM NEW.dataset_id OR OLD.language IS DISTINCT FROM NEW.language)
    EXECUTE FUNCTION {name}_row();
ALTER TABLE {CONVERSATIONS} ENABLE ALWAYS TRIGGER {name}_delete;
ALTER TABLE {CONVERSATIONS} ENABLE ALWAYS TRIGGER {name}_move;
"""


POSTGRES_FORWARD = (
    _pg_conversations() + "".join(_pg_child(table, column) for table, column in CHILDREN.items()) + POSTGRES_DELTAS
)
POSTGRES_BACKWARD = "".join(
    f"DROP TRIGGER IF EXISTS reviewapp_dataset_count_{column}_{event} ON {table};"
    for table, column in [(CONVERSATIONS, "conversations"), *CHILDREN.items()]
    for event in ("insert", "fold", "delete", "move")
) + "".join(
    f"DROP FUNCTION IF EXISTS reviewapp_dataset_count_{column}_{kind}();"
    for column in COLUMNS
    for kind in ("row", "gone")
)
POSTGRES_BACKWARD += f"DROP FUNCTION IF EXISTS reviewapp_dataset_count_fold(); DROP TABLE IF EXISTS {DELTAS};"


# --- SQLite ------------------------------------------------------------------------------------


def _sqlite_child(table: str, column: str) -> list[str]:
    name = f"reviewapp_dataset_count_{column}"
    take = (
        f"UPDATE {COUNTS} SET {column} = {column} - 1 WHERE ({GROUP}) ="
        f" (SELECT {GROUP} FROM {CONVERSATIONS} WHERE id = OLD.conversation_id);"
    )
    add = (
        f"INSERT INTO {COUNTS} ({GROUP}, {column}) SELECT {GROUP}, 1 FROM {CONVERSATIONS}"
        f" WHERE id = NEW.conversation_id ON CONFLICT ({GROUP}) DO UPDATE SET {column} = {column} + 1;"
    )
    return [
        f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {add} END;",
        f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {take} END;",
        f"CREATE TRIGGER {name}_move AFTER UPDATE OF conversation_id ON {table}"
        f" WHEN OLD.conversation_id IS NOT NEW.conversation_id BEGIN {take} {add} END;",
    ]


def _sqlite_conversations() -> list[str]:
    old, new = _children_of("OLD.id"), _children_of("NEW.id")
    take = (
        f"UPDATE {COUNTS} SET conversations = conversations - 1, "
        + ", ".join(f"{column} = {column} - {count}" for column, count in old.items())
        + " WHERE dataset_id = OLD.dataset_id AND language = OLD.language;"
    )
    add_moved = (
        f"INSERT INTO {COUNTS} ({GROUP}, {', '.join(COLUMNS)}) VALUES (NEW.dataset_id, NEW.language, 1, "
        + ", ".join(new.values())
        + f") ON CONFLICT ({GROUP}) DO UPDATE SET "
        + ", ".join(f"{column} = {column} + excluded.{column}" for column in COLUMNS)
        + ";"
    )
    name = "reviewapp_dataset_count_conversations"
    return [
        f"CREATE TRIGGER {name}_insert AFTER INSERT ON {CONVERSATIONS} BEGIN"
        f" INSERT INTO {COUNTS} ({GROUP}, conversations) VALUES (NEW.dataset_id, NEW.language, 1)"
        f" ON CONFLICT ({GROUP}) DO UPDATE SET conversations = conversations + 1; END;",
        f"CREATE TRIGGER {name}_delete AFTER DELETE ON {CONVERSATIONS} BEGIN {take} END;",
        f"CREATE TRIGGER {name}_move AFTER UPDATE OF dataset_id, language ON {CONVERSATIONS}"
        " WHEN OLD.dataset_id IS NOT NEW.dataset_id OR OLD.language IS NOT NEW.language"
        f" BEGIN {take} {add_moved} END;",
    ]


SQLITE_FORWARD = _sqlite_conversations() + [
    statement for table, column in CHILDREN.items() for statement in _sqlite_child(table, column)
]
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS reviewapp_dataset_count_{column}_{event}"
    for column in COLUMNS
    for event in ("insert", "delete", "move")
]

# --- both --------------------------------------------------------------------------------------

RECOUNT = (
    f"INSERT INTO {COUNTS} ({GROUP}, {', '.join(COLUMNS)}) "
    f"SELECT c.dataset_id, c.language, COUNT(*), "
    + ", ".join(f"COALESCE(SUM({column}.n), 0)" for column in CHILDREN.values())
    + f" FROM {CONVERSATIONS} c "
    + " ".join(
        f"LEFT JOIN (SELECT conversation_id, COUNT(*) AS n FROM {table} GROUP BY conversation_id) {column}"
        f" ON {column}.conversation_id = c.id"
        for table, column in CHILDREN.items()
    )
    + " GROUP BY c.dataset_id, c.language"
)


def _execute(connection, postgres: str, sqlite: list[str], *then: str) -> None:
    with connection.cursor() as cursor:
        for statement in [postgres] if connection.vendor == "postgresql" else sqlite:
            cursor.execute(statement)
        for statement in then:
            cursor.execute(statement)


def install_triggers(apps, schema_editor):
    _execute(schema_editor.connection, POSTGRES_FORWARD, SQLITE_FORWARD, f"DELETE FROM {COUNTS}", RECOUNT)


def remove_triggers(apps, schema_editor):
    _execute(schema_editor.connection, POSTGRES_BACKWARD, SQLITE_BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0013_gold_judge_index_repeated_by_composite"),
    ]

    operations = [
        migrations.CreateModel(
            name="DatasetCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("language", models.CharField(max_length=35)),
                ("conversations", models.BigIntegerField(db_default=0)),
                ("turns", models.BigIntegerField(db_default=0)),
                ("gold_labels", models.BigIntegerField(db_default=0)),
                ("verdicts", models.BigIntegerField(db_default=0)),
                (
                    "dataset",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="reviewapp.dataset",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("dataset", "language"), name="dataset_count_group")],
            },
        ),
        migrations.RunPython(install_triggers, remove_triggers),
    ]

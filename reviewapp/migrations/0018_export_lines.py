"""Kept export lines (ExportLine) and what says whether one is still current: the epoch (names many
lines hold) and each conversation's generation (its data). On PostgreSQL, triggers move them forward
in the same transaction as every change a line draws on, so a kept line can never be read as current
beside data it was not built from. Statement-level triggers read the changed rows as transition
tables, so a bulk write (an import's COPY) fires each once per statement, and when no line has been
kept yet they stop at one probe."""

from django.db import migrations, models

# The conversations a statement's changed rows belong to, per table, `{rows}` standing for its
# transition table. Updates of turns, conversations and review items fire only when a column a line
# reads is set (`update_of`): claims and counters update those tables often and change no line.
CONVERSATIONS_OF = {
    "reviewapp_turn": "SELECT r.conversation_id FROM {rows} r",
    "reviewapp_conversation": "SELECT r.id FROM {rows} r",
    "reviewapp_goldlabel": "SELECT r.conversation_id FROM {rows} r",
    "reviewapp_verdict": "SELECT r.conversation_id FROM {rows} r",
    "reviewapp_reviewitem": "SELECT r.conversation_id FROM {rows} r",
    "reviewapp_review": "SELECT i.conversation_id FROM {rows} r JOIN reviewapp_reviewitem i ON i.id = r.item_id",
    "reviewapp_adjudication": "SELECT i.conversation_id FROM {rows} r JOIN reviewapp_reviewitem i ON i.id = r.item_id",
    "reviewapp_comment": "SELECT t.conversation_id FROM {rows} r JOIN reviewapp_turn t ON t.id = r.turn_id",
    "reviewapp_review_categories": (
        "SELECT i.conversation_id FROM {rows} r JOIN reviewapp_review x ON x.id = r.review_id"
        " JOIN reviewapp_reviewitem i ON i.id = x.item_id"
    ),
    "reviewapp_adjudication_categories": (
        "SELECT i.conversation_id FROM {rows} r JOIN reviewapp_adjudication x ON x.id = r.adjudication_id"
        " JOIN reviewapp_reviewitem i ON i.id = x.item_id"
    ),
    "reviewapp_comment_categories": (
        "SELECT t.conversation_id FROM {rows} r JOIN reviewapp_comment x ON x.id = r.comment_id"
        " JOIN reviewapp_turn t ON t.id = x.turn_id"
    ),
}
UPDATE_OF = {  # (conversation column, the columns a line reads)
    "reviewapp_turn": ("conversation_id", ("id", "conversation_id", "position", "role", "text", "intended_text")),
    "reviewapp_conversation": ("id", ("id", "external_id", "language", "dataset_id")),
    "reviewapp_reviewitem": ("conversation_id", ("id", "judge_id", "conversation_id", "turn_id")),
}
# A new conversation has no kept line yet: its inserts need not fire.
NO_INSERT = {"reviewapp_conversation"}
# Names many lines hold: a change moves the epoch (row triggers, only when the name changes).
NAMES = {
    "reviewapp_judge": ("id", "slug"),
    "reviewapp_judgeversion": ("id", "judge_id", "version"),
    "reviewapp_category": ("id", "slug"),
    "reviewapp_dataset": ("id", "name"),
}

BUMP = """
IF EXISTS (SELECT 1 FROM reviewapp_exportgeneration) THEN
    PERFORM 1 FROM reviewapp_exportgeneration g WHERE g.conversation_id IN ({ids})
        ORDER BY g.conversation_id FOR UPDATE;
    UPDATE reviewapp_exportgeneration g SET generation = g.generation + 1 WHERE g.conversation_id IN ({ids});
END IF;"""


def _function(table: str) -> str:
    of = CONVERSATIONS_OF[table]
    inserted, deleted = of.format(rows="new_rows"), of.format(rows="old_rows")
    return (
        f"CREATE FUNCTION {table}_export_forget() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" IF TG_OP = 'INSERT' THEN {BUMP.format(ids=inserted)}"
        f" ELSIF TG_OP = 'DELETE' THEN {BUMP.format(ids=deleted)}"
        f" ELSE {BUMP.format(ids=f'{inserted} UNION {deleted}')}"
        " END IF; RETURN NULL; END $$"
    )


def _row_function(table: str) -> str:
    """For the tables whose updates fire only when a column a line reads changes: a row trigger (a
    statement trigger with a column list cannot read transition tables)."""
    column = UPDATE_OF[table][0]
    return (
        f"CREATE FUNCTION {table}_export_forget_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" {BUMP.format(ids=f'NEW.{column}, OLD.{column}')} RETURN NULL; END $$"
    )


def _triggers(table: str) -> list[str]:
    name, run = f"{table}_export_forget", f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_export_forget()"
    if table in UPDATE_OF:
        changed = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in UPDATE_OF[table][1])
        update = (
            f"CREATE TRIGGER {name}_u AFTER UPDATE ON {table} FOR EACH ROW WHEN ({changed})"
            f" EXECUTE FUNCTION {table}_export_forget_row()"
        )
    else:
        update = f"CREATE TRIGGER {name}_u AFTER UPDATE ON {table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows {run}"
    statements = [update, f"CREATE TRIGGER {name}_d AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows {run}"]
    if table not in NO_INSERT:
        statements.append(f"CREATE TRIGGER {name}_i AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows {run}")
    return statements


EPOCH = (
    "CREATE FUNCTION reviewapp_export_epoch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    " UPDATE reviewapp_exportepoch SET epoch = epoch + 1; RETURN NULL; END $$"
)


def _epoch_triggers(table: str, columns: tuple[str, ...]) -> list[str]:
    changed = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in columns)
    run = "EXECUTE FUNCTION reviewapp_export_epoch()"
    return [
        f"CREATE TRIGGER {table}_export_epoch_u AFTER UPDATE ON {table} FOR EACH ROW WHEN ({changed}) {run}",
        f"CREATE TRIGGER {table}_export_epoch_d AFTER DELETE ON {table} FOR EACH STATEMENT {run}",
    ]


def _truncate_trigger(table: str) -> str:
    return f"CREATE TRIGGER {table}_export_truncate AFTER TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION reviewapp_export_epoch()"


TABLES = (*CONVERSATIONS_OF, *NAMES)


def triggers_forward(apps, schema_editor):
    apps.get_model("reviewapp", "ExportEpoch").objects.create(id=1, epoch=0)
    if schema_editor.connection.vendor != "postgresql":
        return
    statements = [EPOCH]
    for table in CONVERSATIONS_OF:
        statements += [_function(table), *([_row_function(table)] if table in UPDATE_OF else []), *_triggers(table)]
    for table, columns in NAMES.items():
        statements += _epoch_triggers(table, columns)
    statements += [_truncate_trigger(table) for table in TABLES]
    # A generation row that goes and comes back starts at 0 again, where an old line could match it.
    statements += [
        "CREATE TRIGGER reviewapp_exportgeneration_export_epoch AFTER DELETE ON reviewapp_exportgeneration"
        " FOR EACH STATEMENT EXECUTE FUNCTION reviewapp_export_epoch()",
        _truncate_trigger("reviewapp_exportgeneration"),
    ]
    for statement in statements:
        schema_editor.execute(statement)


def triggers_backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in CONVERSATIONS_OF:
        schema_editor.execute(f"DROP FUNCTION {table}_export_forget() CASCADE")
        if table in UPDATE_OF:
            schema_editor.execute(f"DROP FUNCTION {table}_export_forget_row() CASCADE")
    schema_editor.execute("DROP FUNCTION reviewapp_export_epoch() CASCADE")


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0017_user_sessions"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExportEpoch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("epoch", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="ExportGeneration",
            fields=[
                ("conversation_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("generation", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="ExportLine",
            fields=[
                ("gold_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("judge_id", models.BigIntegerField()),
                ("conversation_id", models.BigIntegerField()),
                ("fingerprint", models.CharField(max_length=16)),
                ("migration", models.IntegerField()),
                ("epoch", models.BigIntegerField()),
                ("generation", models.BigIntegerField()),
                ("key", models.TextField()),
                ("line", models.TextField()),
                ("columns", models.TextField()),
            ],
            options={
                "indexes": [models.Index(fields=["judge_id", "conversation_id"], name="exportline_judge")],
            },
        ),
        migrations.RunPython(triggers_forward, triggers_backward),
    ]

"""An index that gives each judge's gold labels in the order every PostgreSQL export and keep reads
them: by block of conversations (`export_sql.CONVERSATIONS_PER_BLOCK` conversation ids, 16), then
conversation and turn. Walking it, the database sorts only each target's few labels to find the
winner (`export_flat._gold_sql`), so rows stream out from the first label instead of after two sorts
of them all (0.14 s before the first of 200,000 rows). PostgreSQL only: SQLite exports read their
labels another way."""

from django.db import migrations

# export_sql.CONVERSATIONS_PER_BLOCK when this was written; a test checks they are still the same.
PER_BLOCK = 16
NAME = "gold_judge_block"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {NAME} ON reviewapp_goldlabel"
            f" (judge_id, (conversation_id / {PER_BLOCK}), conversation_id, turn_id)"
        )


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0024_export_block_columns"),
    ]

    operations = [migrations.RunPython(forward, backward)]

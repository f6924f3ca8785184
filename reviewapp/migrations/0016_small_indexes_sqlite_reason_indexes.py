"""Indexes the queue's statements can walk at any size, on SQLite too.

`item_claims` holds only claimed items, and `review_revising` only the reviews a lead sent back: the
queue's count of what a reviewer cannot claim reads these few rows (queue.unclaimable_count_sql)
instead of a language's whole active queue.

On SQLite, one partial index per review reason over the active queue, in claim order, as PostgreSQL has
had since 0012_item_queue_per_reason: there a reason is asked as the JSON text containing the quoted
code (`QueueFilters.q`: `reasons LIKE '%"code"%' ESCAPE '\\'`), and SQLite uses a partial index only when
the statement names its condition word for word, which the queue's statements do (queue_sql writes
the statuses and the reason's pattern into their SQL). The filtered first page then reads its 51 entries
instead of walking past every active item of the language that lacks the reason (7,400 of them at a
million turns, 25 ms). A new reason needs its index on both databases: a new migration calling 0012's
`create` and this one's.
"""

import importlib

from django.conf import settings
from django.db import migrations, models

# The same reasons and index names as PostgreSQL's (a new reason needs its index on both).
_POSTGRES = importlib.import_module("reviewapp.migrations.0012_item_queue_per_reason")
REASONS = _POSTGRES.REASONS
index_name = _POSTGRES.index_name


def like_pattern(reason: str) -> str:
    """The pattern Django's `icontains` gives for `"reason"`: `_` escaped, since it is LIKE's wildcard."""
    return "%" + f'"{reason}"'.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def create(reasons):
    def forward(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for reason in reasons:
            pattern = like_pattern(reason).replace("'", "''")
            schema_editor.execute(
                f'CREATE INDEX IF NOT EXISTS "{index_name(reason)}" ON "reviewapp_reviewitem"'
                ' ("language", "priority" DESC, "id")'
                f" WHERE \"status\" IN ('open', 'in_review') AND \"reasons\" LIKE '{pattern}' ESCAPE '\\'",
                None,  # no parameters: the pattern's % signs stay as written
            )

        # The statistics the queue's statements are planned with there (reviewapp/planner_statistics.py:
        # imports and triages refresh them from now on).
        # (planner_statistics.BULK's tables, as they are named at this migration.)
        bulk = ("conversation", "turn", "verdict", "goldlabel", "reviewitem")
        for table in (f"reviewapp_{name}" for name in bulk):
            schema_editor.execute(f'ANALYZE "{table}"', None)

    def backward(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for reason in reasons:
            schema_editor.execute(f'DROP INDEX IF EXISTS "{index_name(reason)}"')

    return forward, backward


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0015_queue_counts_folded_per_statement"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(model_name="reviewitem", name="item_claims"),
        migrations.AddIndex(
            model_name="reviewitem",
            index=models.Index(
                condition=models.Q(("claimed_by__isnull", False)),
                fields=["claimed_by", "lease_expires_at"],
                name="item_claims",
            ),
        ),
        migrations.AddIndex(
            model_name="review",
            index=models.Index(
                condition=models.Q(("revision_requested", True)), fields=["item"], name="review_revising"
            ),
        ),
        migrations.RunPython(*create(REASONS)),
    ]

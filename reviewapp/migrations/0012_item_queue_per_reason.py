"""On PostgreSQL, one partial index per review reason over the active queue, in claim order.

The queue filtered by a reason ("judge differs from gold", say) walked item_active_queue and dropped
every active item of the language that lacked the reason until it had a page: at 1,000,000 turns the
first page of "judge differs from gold" read 7,400 items per language to keep 51, and the walk grows
with the queue. With an index per reason (`reasons @> '["code"]'`, which QueueFilters.q asks on
PostgreSQL) the page is the first 51 entries of that index, whatever the size of the queue. An item is
written only to the indexes of its own reasons (one or two).

SQLite keeps its walk: Django's JSON containment is PostgreSQL's, so these are not model indexes, and
tests/reviewapp/triage/test_reason_indexes.py checks that every reason has its index.
A new reason needs its index here (a new migration calling `create`).
"""

from django.db import migrations

REASONS = (
    "unresolved",
    "runs_disagree",
    "judges_disagree",
    "uncertain",
    "qa_sample",
    "version_moved",
    "high_variance",
    "gold_disagrees",
    "imported",
)


def index_name(reason: str) -> str:
    return f"item_queue_{reason}"


def create(reasons):
    def forward(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for reason in reasons:
            schema_editor.execute(
                f'CREATE INDEX IF NOT EXISTS "{index_name(reason)}" ON "reviewapp_reviewitem"'
                ' ("language", "priority" DESC, "id")'
                " WHERE \"status\" IN ('open', 'in_review') AND \"reasons\" @> %s::jsonb",
                [f'["{reason}"]'],
            )

    def backward(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for reason in reasons:
            schema_editor.execute(f'DROP INDEX IF EXISTS "{index_name(reason)}"')

    return forward, backward


class Migration(migrations.Migration):
    dependencies = [("reviewapp", "0011_drop_indexes_repeated_by_composites")]

    operations = [migrations.RunPython(*create(REASONS))]

"""Kept export blocks hold the CSV rows of their conversations too (`rows`, `columns`), so a Parquet
export without filters reads a row per block of sixteen conversations, as a JSONL export does. The
CSV rows are compressed with LZ4 where the server has it, as the lines are (migration 0023). Blocks
kept before this have no CSV rows: the blocks' fingerprint changed with them, so none is read as
current and the next refresh composes them again. The columns have defaults in the database, so a
process still running the code from before composes its blocks while this is deployed."""

from django.db import migrations, models

from reviewapp.migrations import _lz4


def forward(apps, schema_editor):
    _lz4.set_compression(schema_editor, "reviewapp_exportblock", ("columns",), "lz4")


def backward(apps, schema_editor):
    pass  # the column goes with the migration


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0023_export_blocks"),
    ]

    operations = [
        migrations.AddField(model_name="exportblock", name="rows", field=models.IntegerField(db_default=0)),
        migrations.AddField(model_name="exportblock", name="columns", field=models.TextField(db_default="")),
        migrations.RunPython(forward, backward),
    ]

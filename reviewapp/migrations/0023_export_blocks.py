"""Kept export blocks (ExportBlock): the kept lines of sixteen conversations joined, so an export without
filters reads one row per block instead of two lookups per row. The lines are compressed with LZ4
where the server has it, as the kept lines are (migration 0019): a block of 35 KB of JSON compresses
to about a third."""

from django.db import migrations, models

from reviewapp.migrations import _lz4


def forward(apps, schema_editor):
    _lz4.set_compression(schema_editor, "reviewapp_exportblock", ("keys", "lines"), "lz4")


def backward(apps, schema_editor):
    pass  # the table goes with the migration


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0022_export_line_state_generations"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExportBlock",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("judge_id", models.BigIntegerField()),
                ("block", models.BigIntegerField()),
                ("golds", models.TextField()),
                ("generations", models.TextField()),
                ("fingerprint", models.CharField(max_length=16)),
                ("migration", models.IntegerField()),
                ("epoch", models.BigIntegerField()),
                ("keys", models.TextField()),
                ("lines", models.TextField()),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("judge_id", "block"), name="exportblock_judge_block")],
            },
        ),
        migrations.RunPython(forward, backward),
    ]

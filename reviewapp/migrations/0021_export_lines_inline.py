"""Kept export rows stay in their table, compressed, instead of going out to its TOAST table.

A kept row holds a JSONL line and the same row as CSV for Parquet: 2-5 KB together for conversations
of a few short turns. PostgreSQL starts shrinking a row past about 2 KB and keeps going until it is
under `toast_tuple_target` (2032 bytes by default): it compresses the larger value, then the other,
and when the row is still over, it moves the larger one out to the TOAST table. There an export
reads it through a second index and heap (four more buffers per row), after the lookup of the row
itself: 200,000 rows of 2.2 KB lines read in 3.1-4.0 s, 2.1-2.8 s with both values compressed in the
row. At 2712 bytes, three rows to an 8 KB page, a row whose two values compress to that stays whole
in its page; a larger one still goes out as before. Rows kept before stay as written until they are
next rebuilt (this migration makes every one of them stale: each kept row records the migration)."""

from django.db import migrations

TARGET = 2712  # (8192 - 24 bytes of page header - 3 line pointers of 4) / 3, down to a multiple of 8


def _set(schema_editor, value: str) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE reviewapp_exportline {value}")


def forward(apps, schema_editor):
    _set(schema_editor, f"SET (toast_tuple_target = {TARGET})")


def backward(apps, schema_editor):
    _set(schema_editor, "RESET (toast_tuple_target)")


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0020_export_line_state"),
    ]

    operations = [migrations.RunPython(forward, backward)]

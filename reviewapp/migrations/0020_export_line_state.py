"""What each judge's kept export lines were last brought current against (ExportLineState), so that
a refresh with nothing to build (the periodic keep, most of the time) returns after one statement
instead of walking every gold label: 9 s every five minutes at a million rows before."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0019_export_lines_lz4"),
    ]

    operations = [
        migrations.CreateModel(
            name="ExportLineState",
            fields=[
                ("judge_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("state", models.TextField()),
            ],
        ),
    ]

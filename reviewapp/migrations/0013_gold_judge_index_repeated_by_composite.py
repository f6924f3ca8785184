"""Drop the gold labels' single-column judge index: gold_judge (judge_id, excluded) starts with the same
column and serves every lookup it did (a judge's labels, the cascade when a judge is deleted), and each
index is one more insert for every label an import writes.

As in 0011, db_index=False is a change of state only: Django's AlterField would drop and re-create the
foreign key on PostgreSQL (checking every row again) and rebuild the table on SQLite.
"""

import django.db.models.deletion
from django.db import migrations, models

INDEX, TABLE, COLUMN = "reviewapp_goldlabel_judge_id_4132c404", "reviewapp_goldlabel", "judge_id"


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0012_item_queue_per_reason"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{INDEX}"', reverse_sql=f'CREATE INDEX "{INDEX}" ON "{TABLE}" ("{COLUMN}")'
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="goldlabel",
                    name="judge",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="gold_labels",
                        to="reviewapp.judge",
                    ),
                ),
            ],
        ),
    ]

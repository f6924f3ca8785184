"""Drop the single-column foreign key indexes that a composite index already starts with, and index
a verdict's signature and call only where they are set.

Each index is one more insert for every row an import writes (900,000 turns and 100,000 verdicts for
100,000 judged turns). The lookups these served use the composite index that begins with the same
column:
    reviewapp_conversation_dataset_id_ea561419  -> conversation_unique_per_dataset (dataset_id, external_id)
    reviewapp_turn_conversation_id_6e7deddb     -> turn_unique_position (conversation_id, position)
    reviewapp_verdict_turn_id_f471ea5f          -> verdict_turn_version (turn_id, judge_version_id)
    reviewapp_verdict_judge_version_id_132930ac -> verdict_version_status (judge_version_id, status)
    reviewapp_verdict_signature_id_38264f87     -> verdict_signature (signature_id) WHERE NOT NULL
    reviewapp_verdict_call_id_79498ad5          -> verdict_call (call_id) WHERE NOT NULL

The fields' db_index=False is a change of state only: Django's AlterField would drop and re-create
each foreign key on PostgreSQL (checking every existing row again) and rebuild the tables on SQLite,
where dropping the index is all that changes.
"""

import django.db.models.deletion
from django.db import migrations, models

DROPPED = [
    ("reviewapp_conversation_dataset_id_ea561419", "reviewapp_conversation", "dataset_id"),
    ("reviewapp_turn_conversation_id_6e7deddb", "reviewapp_turn", "conversation_id"),
    ("reviewapp_verdict_call_id_79498ad5", "reviewapp_verdict", "call_id"),
    ("reviewapp_verdict_judge_version_id_132930ac", "reviewapp_verdict", "judge_version_id"),
    ("reviewapp_verdict_signature_id_38264f87", "reviewapp_verdict", "signature_id"),
    ("reviewapp_verdict_turn_id_f471ea5f", "reviewapp_verdict", "turn_id"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0001_squashed_0010_queue_counts"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("{column}")',
                )
                for index, table, column in DROPPED
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="conversation",
                    name="dataset",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="conversations",
                        to="reviewapp.dataset",
                    ),
                ),
                migrations.AlterField(
                    model_name="turn",
                    name="conversation",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turns",
                        to="reviewapp.conversation",
                    ),
                ),
                migrations.AlterField(
                    model_name="verdict",
                    name="call",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="verdicts",
                        to="reviewapp.judgecall",
                    ),
                ),
                migrations.AlterField(
                    model_name="verdict",
                    name="judge_version",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="verdicts",
                        to="reviewapp.judgeversion",
                    ),
                ),
                migrations.AlterField(
                    model_name="verdict",
                    name="signature",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="verdicts",
                        to="reviewapp.signature",
                    ),
                ),
                migrations.AlterField(
                    model_name="verdict",
                    name="turn",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="verdicts",
                        to="reviewapp.turn",
                    ),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="verdict",
            index=models.Index(
                condition=models.Q(("signature__isnull", False)), fields=["signature"], name="verdict_signature"
            ),
        ),
        migrations.AddIndex(
            model_name="verdict",
            index=models.Index(condition=models.Q(("call__isnull", False)), fields=["call"], name="verdict_call"),
        ),
    ]

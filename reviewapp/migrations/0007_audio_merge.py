# Joins the audio migration with the tier-1, input and loop migrations that landed beside it; no operation of its own.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0004_audio_call_audio_import_jobs_replays_review_grain"),
        ("reviewapp", "0006_loop_merge_main"),
    ]

    operations = []

# Joins the audio migration with the tier-1 and input migrations that landed beside it; no operation of its own.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0004_audio_call_audio_import_jobs_replays_review_grain"),
        ("reviewapp", "0005_input_merge_tier1"),
    ]

    operations = []

# Joins the two 0004 migrations of work that landed side by side; no operation of its own.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0004_audio_call_audio_import_jobs_replays_review_grain"),
        ("reviewapp", "0004_tier1_signature_versions_token_scopes"),
    ]

    operations = []

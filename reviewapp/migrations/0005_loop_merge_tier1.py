# Joins the loop branch's models with tier1's; no operation of its own.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0004_loop_edge_cases_provenance"),
        ("reviewapp", "0004_tier1_signature_versions_token_scopes"),
    ]

    operations = []

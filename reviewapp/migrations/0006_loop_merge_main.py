# Joins the loop branch's models with main's migrations; no operation of its own.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("reviewapp", "0004_loop_edge_cases_provenance"),
        ("reviewapp", "0005_input_merge_tier1"),
    ]

    operations = []

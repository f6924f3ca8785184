"""A judge's kept-rows state (ExportLineState) keeps every conversation's generations apart from the
rest, and beside them the generations of the judge's own conversations: a change to another judge's
conversations no longer sends this judge's next refresh through all its gold labels (0.8-1.4 s at
100,000, 5.5-9 s at a million), only through one join of them (0.06 s at 100,000). A state kept
before reads as changed once, and that refresh builds."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reviewapp', '0021_export_lines_inline'),
    ]

    operations = [
        migrations.AddField(
            model_name='exportlinestate',
            name='generations',
            field=models.TextField(default=''),
        ),
        migrations.AddField(
            model_name='exportlinestate',
            name='judge_generations',
            field=models.TextField(default=''),
        ),
    ]

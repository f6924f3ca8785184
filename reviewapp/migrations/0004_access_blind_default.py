from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("reviewapp", "0003_queue_indexes")]

    operations = [
        migrations.AlterField(
            model_name="dataset",
            name="blind_review",
            field=models.BooleanField(default=True),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0002_invitation"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="retention_mode",
            field=models.CharField(
                choices=[("keep_all", "Keep everything"), ("drop", "Drop what has aged")],
                default="keep_all",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="tenant",
            name="retention_facts_ended_days",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="tenant",
            name="retention_episodes_days",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]

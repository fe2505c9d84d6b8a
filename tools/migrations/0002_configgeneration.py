"""The configuration generation row (tools.config_generation)."""

import secrets

from django.db import migrations, models


def create_row(apps, schema_editor):
    ConfigGeneration = apps.get_model("tools", "ConfigGeneration")
    ConfigGeneration.objects.using(schema_editor.connection.alias).get_or_create(
        pk=1, defaults={"token": secrets.randbits(62)}
    )


class Migration(migrations.Migration):
    dependencies = [
        ("tools", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConfigGeneration",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("token", models.BigIntegerField()),
            ],
            options={
                "verbose_name": "configuration generation",
            },
        ),
        migrations.RunPython(create_row, migrations.RunPython.noop),
    ]

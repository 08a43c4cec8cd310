"""The leaderboard's cache generation moves from the cache into the database (one row).

The row starts at the current time in microseconds: above any number the old cache-held
counter reached, so no page cached under it is ever read again.
"""

from django.db import migrations, models

import leaderboard.models.board


def create_row(apps, schema_editor):
    BoardGeneration = apps.get_model("leaderboard", "BoardGeneration")
    BoardGeneration.objects.get_or_create(pk=1, defaults={"value": leaderboard.models.board.starting_value()})


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0004_evaluation_level_intervals"),
    ]

    operations = [
        migrations.CreateModel(
            name="BoardGeneration",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("value", models.PositiveBigIntegerField(default=leaderboard.models.board.starting_value)),
            ],
            options={"verbose_name": "leaderboard cache generation"},
        ),
        migrations.RunPython(create_row, migrations.RunPython.noop),
    ]

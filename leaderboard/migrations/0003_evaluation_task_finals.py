"""Evaluation.task_finals: each scored evaluation's per-task Final, packed once.

The leaderboard's rank ranges bootstrap every entry's per-task Final; reading them from one
packed value per evaluation instead of one task-result row per task keeps a cold board
fast at thousands of entries. Evaluations scored before this migration are packed here
from their stored task results.
"""

from django.db import migrations, models

from leaderboard.models.submissions import pack_task_finals

BATCH = 500


def pack_existing(apps, schema_editor):
    Evaluation = apps.get_model("leaderboard", "Evaluation")
    TaskResult = apps.get_model("leaderboard", "TaskResult")
    ids = list(Evaluation.objects.filter(status="scored", task_finals__isnull=True).order_by("pk")
               .values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        pairs: dict[int, list] = {pk: [] for pk in batch}
        rows = TaskResult.objects.filter(evaluation_id__in=batch).order_by().values_list("evaluation_id", "task_id",
                                                                                           "final")
        for evaluation_id, task_id, final in rows.iterator(chunk_size=20_000):
            pairs[evaluation_id].append((task_id, final))
        packed = [Evaluation(pk=pk, task_finals=pack_task_finals(found)) for pk, found in pairs.items()]
        Evaluation.objects.bulk_update(packed, ["task_finals"])


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0002_generation_reliability"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="task_finals",
            field=models.BinaryField(blank=True, editable=False, help_text="Per-task Final, packed; null until scored.",
                                     null=True),
        ),
        migrations.RunPython(pack_existing, migrations.RunPython.noop),
    ]

"""95 % intervals of Low-level and High-level, stored like those of Final, IFS and VFS.

The leaderboard shows an interval under every evaluated score. Evaluations scored before
this migration get theirs here, computed from their stored task results exactly as the
pipeline does (:func:`leaderboard.pipeline.confidence_intervals`: percentile bootstrap over
tasks, a failed task counts 0); evaluations without task results (the paper's rows) keep none.
"""

from django.db import migrations, models

BATCH = 500
LEVELS = ("low_level", "high_level")


def fill_existing(apps, schema_editor):
    from evaluator.scoring import bootstrap_ci

    Evaluation = apps.get_model("leaderboard", "Evaluation")
    TaskResult = apps.get_model("leaderboard", "TaskResult")
    ids = list(Evaluation.objects.filter(status="scored", low_level_ci_low__isnull=True).order_by("pk")
               .values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        values: dict[int, list] = {pk: [] for pk in batch}
        rows = (TaskResult.objects.filter(evaluation_id__in=batch).order_by("evaluation_id", "task_id")
                .values_list("evaluation_id", "error", *LEVELS))
        for evaluation_id, error, *levels in rows.iterator(chunk_size=20_000):
            values[evaluation_id].append([0.0, 0.0] if error else levels)
        filled = []
        for pk, per_task in values.items():
            if not per_task:
                continue
            fields = {}
            for column, name in enumerate(LEVELS):
                fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = bootstrap_ci([row[column] for row in per_task])
            filled.append(Evaluation(pk=pk, **fields))
        Evaluation.objects.bulk_update(filled, [f"{name}_ci_{side}" for name in LEVELS for side in ("low", "high")])


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0003_evaluation_task_finals"),
    ]

    operations = [
        migrations.AddField(model_name="evaluation", name="low_level_ci_low",
                            field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="evaluation", name="low_level_ci_high",
                            field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="evaluation", name="high_level_ci_low",
                            field=models.FloatField(blank=True, null=True)),
        migrations.AddField(model_name="evaluation", name="high_level_ci_high",
                            field=models.FloatField(blank=True, null=True)),
        migrations.RunPython(fill_existing, migrations.RunPython.noop),
    ]

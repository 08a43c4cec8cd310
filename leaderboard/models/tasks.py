"""Task sets and tasks.

A task's *public inputs* (video, assets, stitched asset images, resolution, categories,
number of actions) may be shown to anyone once published. Its *ground truth* (the
action sequence with descriptions and assertions, the reference checkpoints and the
private reference data) is visible to staff only, for every split: readers of a
test-split task see inputs only. Task files live under ``settings.TASKS_ROOT`` (never
under MEDIA_ROOT, which may be served directly).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models


class Split(models.TextChoices):
    DEV = "dev", "dev (public)"
    TEST = "test", "test (held out)"


class TaskSet(models.Model):
    """A benchmark: e.g. the bundled sample benchmark or the official IWR-Bench release."""

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TaskQuerySet(models.QuerySet):
    def published(self):
        return self.filter(status=Task.Status.PUBLISHED)

    def for_split(self, split: str):
        return self.filter(split=split)


class Task(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        PUBLISHED = "published", "published"
        RETIRED = "retired", "retired"

    task_set = models.ForeignKey(TaskSet, on_delete=models.PROTECT, related_name="tasks")
    key = models.CharField(max_length=100, help_text="The task id as text (folder and result key).")
    split = models.CharField(max_length=8, choices=Split.choices, db_index=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PUBLISHED, db_index=True)

    # Public inputs.
    interaction_complexity = models.CharField(max_length=40, db_index=True)
    visual_complexity = models.CharField(max_length=40, db_index=True)
    domain = models.CharField(max_length=100, db_index=True)
    sub_domain = models.CharField(max_length=100, blank=True)
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    n_actions = models.PositiveIntegerField()

    # Private ground truth: the full published record (action sequence, assertions,
    # source website) and, for authored tasks, the authoring script.
    record = models.JSONField(help_text="The task's data.jsonl record (ground truth).")
    script = models.JSONField(null=True, blank=True, help_text="Authoring script, when the task was authored here.")
    files_dir = models.CharField(max_length=500, help_text="Folder under TASKS_ROOT holding the task's files.")
    record_hash = models.CharField(max_length=64, help_text="Hash of record + files, for idempotent re-import.")

    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["task_set", "split", "key"]
        constraints = [models.UniqueConstraint(fields=["task_set", "key"], name="unique_task_key_per_set")]

    def __str__(self) -> str:
        return f"{self.task_set.slug}/{self.key} ({self.split})"

    @property
    def files_path(self) -> Path:
        return Path(settings.TASKS_ROOT) / self.files_dir

    @property
    def resolution(self) -> str:
        return f"{self.width}x{self.height}"

    def category(self, axis: str) -> str:
        return getattr(self, axis)

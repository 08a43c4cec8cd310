"""Submissions, their evaluations and per-task results.

A :class:`Submission` is what a researcher sent: a bundle of pages (or an endpoint the
platform generated pages from) with its model metadata. Each scoring of it under one
protocol version is an :class:`Evaluation`; rescoring under a new protocol version adds an
evaluation and never overwrites an earlier one. An evaluation's per-task outcome is a
:class:`TaskResult`, written idempotently (one row per evaluation and task).

Rows labelled ``kind=paper`` carry the paper's published results (no bundle, no task
results, no confidence interval); ``kind=baseline`` rows are scored by the evaluator
itself (reference pages, scripts-stripped snapshots, empty pages).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.models.tasks import Split, Task

PAPER_PROTOCOL = "official judge (paper)"
# The scores every evaluation and task result stores, in the order pages and exports show them.
SCORE_FIELDS = ("final", "ifs", "vfs", "low_level", "high_level")


class Submission(models.Model):
    class Kind(models.TextChoices):
        BUNDLE = "bundle", "bundle upload"
        ENDPOINT = "endpoint", "model endpoint"
        BASELINE = "baseline", "baseline"
        PAPER = "paper", "reported in paper"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="submissions"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.BUNDLE, db_index=True)
    split = models.CharField(max_length=8, choices=Split.choices, db_index=True)
    protocol = models.CharField(max_length=40, default="iwr-det", help_text="Protocol name requested (e.g. iwr-det).")

    model_name = models.CharField(max_length=120)
    organisation = models.CharField(max_length=120, blank=True)
    model_size = models.CharField(max_length=40, blank=True, help_text="e.g. 7B, 72B, unknown")
    open_weights = models.BooleanField(default=False)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    description = models.TextField(blank=True)
    public = models.BooleanField(default=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True,
                                        help_text="Withdrawn by its owner: private for good, on no board.")

    bundle = models.FileField(upload_to="bundles/%Y/%m/", blank=True, max_length=300)
    bundle_size = models.PositiveBigIntegerField(default=0)
    bundle_sha256 = models.CharField(max_length=64, blank=True)

    # Maintainers' verdicts. A flagged entry leaves the ranking but stays reachable with its reason.
    verified = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True)

    # Quota: a submission is charged when accepted and refunded when cancelled while queued
    # or when it fails for a reason that is not the submitter's (infrastructure, evaluator fault).
    charged = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "split", "created_at"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.model_name} ({self.split})"

    @property
    def primary_evaluation(self):
        """The first evaluation (the one the submitter asked for); rescoring adds later ones."""
        return self.evaluations.order_by("created_at", "pk").first()


class Evaluation(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SCORED = "scored", "scored"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    class FailureKind(models.TextChoices):
        NONE = "", "-"
        BUNDLE = "bundle", "the bundle could not be used"
        GENERATION = "generation", "page generation failed"
        TIME_LIMIT = "time_limit", "time limit exceeded"
        EVALUATOR = "evaluator", "evaluator fault"
        INFRASTRUCTURE = "infrastructure", "infrastructure failure"
        PAGE = "page", "the pages made the evaluator fail"

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="evaluations")
    protocol = models.CharField(
        max_length=40, db_index=True, help_text="Full protocol name with version, e.g. iwr-det-1."
    )
    protocol_name = models.CharField(max_length=40, default="iwr-det", help_text="Protocol name without version.")
    evaluator_version = models.CharField(max_length=40, blank=True)
    # Protocol iwr-official only: the judge's model ids, fixed when the evaluation is queued (the worker
    # passes these, not the settings of the day). Scores of different judges never share a board.
    judge_model = models.CharField(max_length=200, blank=True, db_index=True,
                                   help_text="iwr-official: model id of the assertion judge and visual rubric.")
    grounding_model = models.CharField(max_length=200, blank=True,
                                       help_text="iwr-official: model id of the grounding agent.")
    is_rescore = models.BooleanField(default=False)
    priority = models.PositiveSmallIntegerField(default=5, help_text="Lower runs first; rescoring waits behind users.")

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_kind = models.CharField(max_length=16, choices=FailureKind.choices, blank=True, default="")
    failure_reason = models.TextField(blank=True)
    log = models.TextField(blank=True, help_text="Evaluator log shown to the owner (never ground truth).")

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    claim_token = models.CharField(max_length=64, blank=True)

    tasks_total = models.PositiveIntegerField(default=0)
    tasks_done = models.PositiveIntegerField(default=0)

    final = models.FloatField(null=True, blank=True)
    ifs = models.FloatField(null=True, blank=True)
    vfs = models.FloatField(null=True, blank=True)
    low_level = models.FloatField(null=True, blank=True)
    high_level = models.FloatField(null=True, blank=True)
    final_ci_low = models.FloatField(null=True, blank=True)
    final_ci_high = models.FloatField(null=True, blank=True)
    ifs_ci_low = models.FloatField(null=True, blank=True)
    ifs_ci_high = models.FloatField(null=True, blank=True)
    vfs_ci_low = models.FloatField(null=True, blank=True)
    vfs_ci_high = models.FloatField(null=True, blank=True)
    low_level_ci_low = models.FloatField(null=True, blank=True)
    low_level_ci_high = models.FloatField(null=True, blank=True)
    high_level_ci_low = models.FloatField(null=True, blank=True)
    high_level_ci_high = models.FloatField(null=True, blank=True)
    n_tasks = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True, help_text="results.json summary, incl. by_category.")
    # Protocol iwr-official only: what the judge cost and how it decided (leaderboard.official.judge_counters):
    # endpoint host, model ids, requests, cache hits, tokens, retries, quirks applied, incomplete tasks.
    # The per-step verdicts stay with each task's steps.
    judge_record = models.JSONField(default=dict, blank=True,
                                    help_text="iwr-official: the judge record of results.json, without per-step rows.")
    # Every task's Final packed once when the evaluation is scored (see pack_task_finals): the
    # rank-range bootstrap reads one small value per entry instead of a row per task.
    task_finals = models.BinaryField(null=True, blank=True, editable=False,
                                     help_text="Per-task Final, packed; null until scored.")
    artifacts_dir = models.CharField(max_length=500, blank=True, help_text="Folder under ARTIFACTS_ROOT.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "priority", "created_at"]),
            models.Index(fields=["protocol", "status"]),
        ]

    def __str__(self) -> str:
        return f"evaluation #{self.pk} of submission #{self.submission_id} under {self.protocol} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SCORED, self.Status.FAILED, self.Status.CANCELLED}


TASK_FINALS_DTYPE = np.dtype([("task", "<i8"), ("final", "<f8")])


def pack_task_finals(pairs) -> bytes:
    """(task id, Final) pairs as stored in ``Evaluation.task_finals``: little-endian records sorted
    by task id; no results pack to empty bytes (null means "not packed yet")."""
    records = np.array(sorted(pairs), dtype=TASK_FINALS_DTYPE)
    return records.tobytes()


def unpack_task_finals(packed) -> tuple[np.ndarray, np.ndarray] | None:
    """(task ids, Finals) from :func:`pack_task_finals`'s bytes; None when the evaluation has no results."""
    if not packed:
        return None
    records = np.frombuffer(bytes(packed), dtype=TASK_FINALS_DTYPE)
    return records["task"].astype(np.int64), records["final"].astype(np.float64)


def stored_task_finals(evaluation_id: int) -> bytes:
    """The packed per-task Finals of an evaluation, read from its stored task results (one query);
    scoring saves this on the evaluation when it scores it (:mod:`leaderboard.worker.scoring`)."""
    rows = TaskResult.objects.filter(evaluation_id=evaluation_id).order_by().values_list("task_id", "final")
    return pack_task_finals(rows)


class TaskResult(models.Model):
    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="task_results")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="results")
    ifs = models.FloatField()
    vfs = models.FloatField()
    final = models.FloatField()
    low_level = models.FloatField()
    high_level = models.FloatField()
    steps_passed = models.PositiveIntegerField()
    steps_total = models.PositiveIntegerField()
    steps = models.JSONField(default=list, help_text="Per-step records from results.json (may hold ground truth).")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task__key"]
        constraints = [models.UniqueConstraint(fields=["evaluation", "task"], name="one_result_per_task")]

    def __str__(self) -> str:
        return f"{self.task.key}: final {self.final:.3f}"


class GenerationJob(models.Model):
    """Pages generated by the platform from an OpenAI-compatible endpoint a user submitted.

    Claimed like an evaluation (see :mod:`leaderboard.worker.claims`): a worker takes a queued
    job with one conditional UPDATE that sets a fresh ``claim_token``, beats ``heartbeat_at``
    while it runs, and ends the job only while its token still holds. The reaper re-queues a
    running job whose heartbeat went stale (the next claim resumes, keeping pages already
    generated) and re-sends wake-ups nobody picked up (``dispatched_at``).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="generation")
    base_url = models.URLField()
    model_id = models.CharField(max_length=200)
    api_key_encrypted = models.BinaryField(blank=True, default=b"", help_text="Fernet-encrypted; erased when done.")
    max_tokens = models.PositiveIntegerField(default=16000)
    max_images = models.PositiveSmallIntegerField(default=70)
    max_frames = models.PositiveSmallIntegerField(default=64)
    default_temperature = models.BooleanField(
        default=False, help_text="Asked for: send no temperature (the model's default) instead of the protocol's 0.")
    length_parameter = models.CharField(max_length=24, default="max_tokens",
                                        help_text="How the answer-length limit is sent first.")
    ran_at_default_temperature = models.BooleanField(
        default=False, help_text="From the generation report: some request went without temperature 0.")
    generation_notes = models.JSONField(default=list, blank=True, help_text="The generation report's notes.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    task_errors = models.JSONField(default=dict, blank=True, help_text="task key -> reason its page is missing.")
    tasks_done = models.PositiveIntegerField(default=0)
    failure_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    # The claim of the worker running the job (empty while queued) and its liveness.
    claim_token = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="<celery node>:<pid> holding the claim.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Claims so far (a resumed run is one more).")
    started_at = models.DateTimeField(null=True, blank=True, help_text="When the latest claim started.")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="Last wake-up sent while queued.")

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.DONE, self.Status.FAILED, self.Status.CANCELLED}


def copy_bundle(submission: Submission, dest: Path) -> Path:
    """Copy the stored bundle to ``dest`` (storage-agnostic: works for remote storage too)."""
    with submission.bundle.open("rb") as source, open(dest, "wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)
    return dest

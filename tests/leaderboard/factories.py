"""Small factories for leaderboard rows. Each takes keyword overrides for any field."""

from __future__ import annotations

import itertools

from django.utils import timezone

from leaderboard.models import Evaluation, Submission, Task, TaskResult, TaskSet

_seq = itertools.count(1)


def make_task_set(**fields) -> TaskSet:
    n = next(_seq)
    defaults = {"slug": f"set-{n}", "name": f"Task set {n}"}
    return TaskSet.objects.create(**{**defaults, **fields})


def make_task(task_set: TaskSet | None = None, **fields) -> Task:
    n = next(_seq)
    record = {
        "id": n,
        "classification": {"interaction_complexity": "L2", "visual_complexity": "V1",
                           "domain": "productivity", "sub_domain": "todo"},
        "recording_details": {"resolution": "1280x720", "environment": "test"},
        "source_website": "https://secret.example/",
        "action_sequence": [
            {"type": "Click", "parameters": {"description": f"SECRET-DESCRIPTION-{n}"},
             "visual_evaluation_flag": True, "logical_assertion": f"SECRET-ASSERTION-{n}"},
        ],
    }
    defaults = {
        "task_set": task_set or make_task_set(),
        "key": str(n), "split": "dev", "interaction_complexity": "L2", "visual_complexity": "V1",
        "domain": "productivity", "sub_domain": "todo", "width": 1280, "height": 720, "n_actions": 1,
        "record": record, "files_dir": f"test/{n}", "record_hash": f"hash{n}",
    }
    return Task.objects.create(**{**defaults, **fields})


def make_tasks(n: int, split: str = "test") -> list[Task]:
    """``n`` tasks of one split in a new task set."""
    task_set = make_task_set()
    return [make_task(task_set, split=split) for _ in range(n)]


def make_submission(owner=None, **fields) -> Submission:
    defaults = {"owner": owner, "split": "dev", "model_name": f"model-{next(_seq)}", "protocol": "iwr-det"}
    return Submission.objects.create(**{**defaults, **fields})


def make_evaluation(submission: Submission | None = None, **fields) -> Evaluation:
    defaults = {"submission": submission or make_submission(), "protocol": "iwr-det-17", "protocol_name": "iwr-det"}
    return Evaluation.objects.create(**{**defaults, **fields})


def make_scored_evaluation(submission: Submission | None = None, *, final=0.5, ifs=0.4, vfs=0.73,
                           **fields) -> Evaluation:
    return make_evaluation(submission, status=Evaluation.Status.SCORED, final=final, ifs=ifs, vfs=vfs,
                           low_level=vfs, high_level=vfs, finished_at=timezone.now(), **fields)


def make_task_result(evaluation: Evaluation, task: Task, **fields) -> TaskResult:
    defaults = {"ifs": 0.5, "vfs": 0.5, "final": 0.5, "low_level": 0.5, "high_level": 0.5,
                "steps_passed": 1, "steps_total": 2, "steps": []}
    return TaskResult.objects.create(evaluation=evaluation, task=task, **{**defaults, **fields})


def make_bundle_submission(owner=None, *, pages: dict[str, str], split: str = "dev", **fields) -> Submission:
    """A bundle submission whose stored zip holds ``pages`` (task key -> HTML)."""
    import tempfile
    from pathlib import Path

    from django.core.files import File

    from evaluator.bundle import make_bundle_zip

    submission = make_submission(owner, split=split, **fields)
    with tempfile.TemporaryDirectory() as tmp:
        path = make_bundle_zip(pages, Path(tmp) / "bundle.zip")
        with open(path, "rb") as handle:
            submission.bundle.save(f"test-{submission.pk}.zip", File(handle), save=False)
        submission.bundle_size = path.stat().st_size
    submission.save()
    return submission


def make_queued_evaluation(submission: Submission, **fields) -> Evaluation:
    """A queued evaluation under the current iwr-det version, as accepting a submission creates."""
    from evaluator.protocols import get_protocol
    from leaderboard.intake.evaluations import queue_evaluation

    evaluation = queue_evaluation(submission, get_protocol("iwr-det"))
    if fields:
        Evaluation.objects.filter(pk=evaluation.pk).update(**fields)
        evaluation.refresh_from_db()
    return evaluation


def make_entry(owner=None, *, finals=(), tasks=(), split: str = "test", protocol: str = "iwr-det-17",
               final: float | None = None, evaluation_fields: dict | None = None, announce: bool = True,
               **submission_fields) -> Evaluation:
    """A scored leaderboard entry. With ``tasks`` and ``finals`` (one Final per task) it gets task
    results (IFS = VFS = Final on each task), mean scores and 95 % bootstrap intervals computed from
    them; otherwise just ``final`` (no per-task results, no interval). ``announce=False`` leaves the
    stored boards and the generation alone, for tests of what a cached board shows before the
    pipeline's announcement."""
    from evaluator.scoring import bootstrap_ci

    submission = make_submission(owner, split=split, **submission_fields)
    values = list(finals)
    mean = sum(values) / len(values) if values else (final if final is not None else 0.5)
    scores = {"final": mean, "ifs": mean, "vfs": mean}
    if values:
        lo, hi = bootstrap_ci(values)
        for name in ("final", "ifs", "vfs", "low_level", "high_level"):  # every score equals Final on each task
            scores.update({f"{name}_ci_low": lo, f"{name}_ci_high": hi})
    fields = {"status": Evaluation.Status.SCORED, "finished_at": timezone.now(), "protocol": protocol,
              "protocol_name": protocol.rsplit("-", 1)[0], "n_tasks": len(values), "low_level": mean,
              "high_level": mean, **scores, **(evaluation_fields or {})}
    evaluation = make_evaluation(submission, **fields)
    for task, value in zip(tasks, values, strict=True):
        make_task_result(evaluation, task, ifs=value, vfs=value, final=value, low_level=value, high_level=value)
    if announce:
        entry_added(evaluation.submission.split, evaluation.protocol)
    return evaluation


def entry_added(split: str, protocol: str) -> None:
    """What the product does when an entry appears (the worker's ``evaluation_finished``), minus the
    ranking: the entry's stored boards, where they exist, count a change, so none is read as current
    without the new entry, and the generation moves on. They are ranked again when next read
    (ranking at every entry would slow each test that builds many)."""
    from django.db.models import F

    from leaderboard.cache import bump_generation
    from leaderboard.models import StoredBoard

    StoredBoard.objects.filter(split=split, protocol=protocol).update(marks=F("marks") + 1)
    bump_generation()

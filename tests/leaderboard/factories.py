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


def make_submission(owner=None, **fields) -> Submission:
    defaults = {"owner": owner, "split": "dev", "model_name": f"model-{next(_seq)}", "protocol": "iwr-det"}
    return Submission.objects.create(**{**defaults, **fields})


def make_evaluation(submission: Submission | None = None, **fields) -> Evaluation:
    defaults = {"submission": submission or make_submission(), "protocol": "iwr-det-1", "protocol_name": "iwr-det"}
    return Evaluation.objects.create(**{**defaults, **fields})


def make_scored_evaluation(submission: Submission | None = None, *, final=0.5, ifs=0.4, vfs=0.73,
                           **fields) -> Evaluation:
    return make_evaluation(submission, status=Evaluation.Status.SCORED, final=final, ifs=ifs, vfs=vfs,
                           low_level=vfs, high_level=vfs, finished_at=timezone.now(), **fields)


def make_task_result(evaluation: Evaluation, task: Task, **fields) -> TaskResult:
    defaults = {"ifs": 0.5, "vfs": 0.5, "final": 0.5, "low_level": 0.5, "high_level": 0.5,
                "steps_passed": 1, "steps_total": 2, "steps": []}
    return TaskResult.objects.create(evaluation=evaluation, task=task, **{**defaults, **fields})

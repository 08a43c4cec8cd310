"""Fill a PostgreSQL database with a leaderboard at scale: N scored submissions of T tasks each.

Run by ``bench/leaderboard/run.sh`` (see there); on its own::

    DATABASE_URL=postgres://root@127.0.0.1:5432/iwr_bench IWR_ENV=development \\
        .venv/bin/python bench/leaderboard/fill.py --submissions 10000 --tasks 113 --researchers 500

The schema comes from the migrations; rows are written with PostgreSQL COPY (about a minute
for 10,000 submissions and 1.13 million task results). Every submission is public and scored
on the test split under the current iwr-det version. Researchers each submit two models
several times, so the board holds one row per researcher and model, like a real one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LEVELS = ("L1", "L2", "L3", "L4")
VISUAL = ("V1", "V2", "V3", "V4")
DOMAINS = ("e-commerce", "productivity", "gaming", "education", "news", "finance", "travel", "social")


def setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--tasks", type=int, default=113)
    parser.add_argument("--researchers", type=int, default=500, help="submitters (two models each)")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


def copy_rows(cursor, table: str, columns: list[str], rows) -> None:
    """COPY rows (tuples) into a table: the fast path for the million task results."""
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def reset() -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from leaderboard.models import Task, TaskSet

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE leaderboard_taskresult, leaderboard_evaluation, leaderboard_submission CASCADE")
    Task.objects.all().delete()  # a task set protects its tasks: they go first
    TaskSet.objects.all().delete()
    get_user_model().objects.filter(username__startswith="researcher").delete()


def make_tasks(n_tasks: int) -> list:
    from leaderboard.models import Task, TaskSet

    task_set = TaskSet.objects.create(slug="bench", name="Benchmark set")
    Task.objects.bulk_create(
        Task(task_set=task_set, key=f"t{n:03d}", split="test", interaction_complexity=LEVELS[n % 4],
             visual_complexity=VISUAL[(n // 4) % 4], domain=DOMAINS[n % len(DOMAINS)], width=1280, height=720,
             n_actions=9, record={}, files_dir=f"bench/t{n:03d}", record_hash=f"h{n}")
        for n in range(n_tasks))
    return list(Task.objects.filter(task_set=task_set).order_by("key"))


def make_users(n_users: int) -> list:
    from django.contrib.auth import get_user_model

    model = get_user_model()
    model.objects.bulk_create(model(username=f"researcher{n}", email=f"r{n}@example.org") for n in range(n_users))
    return list(model.objects.filter(username__startswith="researcher").order_by("pk"))


def summary_of(finals: np.ndarray, ifs: np.ndarray, vfs: np.ndarray, tasks) -> dict:
    by_category = {}
    for axis in ("interaction_complexity", "visual_complexity", "domain"):
        groups: dict[str, list[int]] = {}
        for index, task in enumerate(tasks):
            groups.setdefault(getattr(task, axis), []).append(index)
        by_category[axis] = {label: {"ifs": float(ifs[idx].mean()), "vfs": float(vfs[idx].mean()),
                                     "final": float(finals[idx].mean()), "n": len(idx)}
                             for label, idx in sorted(groups.items())}
    return {"ifs": float(ifs.mean()), "vfs": float(vfs.mean()), "final": float(finals.mean()),
            "n_tasks": len(tasks), "by_category": by_category}


def fill(args) -> None:
    from django.db import connection, transaction

    started = time.monotonic()
    rng = np.random.default_rng(args.seed)
    with transaction.atomic():
        reset()
        tasks = make_tasks(args.tasks)
        users = make_users(args.researchers)
        scores = make_submissions(args, rng, users, tasks)
        with connection.cursor() as cursor:
            copy_rows(cursor.cursor, "leaderboard_taskresult", RESULT_COLUMNS, result_rows(scores, tasks))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    from leaderboard import ranking

    ranking.boards_changed()  # as ``manage.py rank_boards`` after a bulk load: the boards are ranked and stored
    print(f"filled {args.submissions} scored submissions x {args.tasks} tasks from {args.researchers} researchers "
          f"({2 * args.researchers} models) in {time.monotonic() - started:.0f} s")


RESULT_COLUMNS = ["evaluation_id", "task_id", "ifs", "vfs", "final", "low_level", "high_level", "steps_passed",
                  "steps_total", "steps", "error", "created_at"]


def make_submissions(args, rng, users: list, tasks: list) -> dict[int, tuple]:
    """Submissions and their scored evaluations (per-task Finals packed, as the pipeline stores them);
    returns evaluation id -> (finals, ifs, vfs) per task."""
    from evaluator.protocols import get_protocol
    from leaderboard.models import Evaluation, Submission
    from leaderboard.models.submissions import pack_task_finals

    protocol = get_protocol("iwr-det").full_name
    task_ids = [task.pk for task in tasks]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    skill = rng.uniform(0.05, 0.8, size=(len(users), 2))
    submissions, evaluations, per_task = [], [], []
    for number in range(args.submissions):
        user_index, model = number % len(users), (number // len(users)) % 2
        created = start + timedelta(minutes=number)
        ifs = np.clip(rng.normal(skill[user_index, model], 0.25, len(tasks)), 0, 1)
        vfs = np.clip(rng.normal(0.45 + skill[user_index, model] / 2, 0.1, len(tasks)), 0, 1)
        finals = 0.7 * ifs + 0.3 * vfs
        submissions.append(Submission(owner=users[user_index], split="test", model_name=f"model-{user_index}-{model}",
                                      organisation=f"Lab {user_index % 90}", model_size="7B", open_weights=bool(model),
                                      verified=number % 7 == 0, created_at=created))
        evaluations.append(dict(protocol=protocol, protocol_name="iwr-det", evaluator_version="0.1.0",
                                status=Evaluation.Status.SCORED, created_at=created, started_at=created,
                                finished_at=created + timedelta(minutes=3), tasks_total=len(tasks),
                                tasks_done=len(tasks), n_tasks=len(tasks), summary=summary_of(finals, ifs, vfs, tasks),
                                task_finals=pack_task_finals(zip(task_ids, finals.tolist(), strict=True)),
                                **stats(finals, ifs, vfs)))
        per_task.append((finals, ifs, vfs))
    Submission.objects.bulk_create(submissions, batch_size=2000)
    rows = [Evaluation(submission=submission, **fields) for submission, fields in zip(submissions, evaluations,
                                                                                      strict=True)]
    Evaluation.objects.bulk_create(rows, batch_size=2000)
    return {row.pk: scores for row, scores in zip(rows, per_task, strict=True)}


def result_rows(scores: dict[int, tuple], tasks: list):
    created = datetime(2026, 1, 1, tzinfo=UTC)
    for evaluation_id, (finals, ifs, vfs) in scores.items():
        for index, task in enumerate(tasks):
            yield (evaluation_id, task.pk, float(ifs[index]), float(vfs[index]), float(finals[index]),
                   float(vfs[index]), float(vfs[index]), int(ifs[index] * 9), 9, "[]", "", created)


def stats(finals: np.ndarray, ifs: np.ndarray, vfs: np.ndarray) -> dict:
    """Means and normal-approximation 95 % intervals (the bench does not need the bootstrap's exact figures)."""
    fields = {"low_level": float(vfs.mean()), "high_level": float(vfs.mean())}
    for name, series in (("final", finals), ("ifs", ifs), ("vfs", vfs)):
        half = 1.96 * series.std(ddof=1) / np.sqrt(len(series))
        fields.update({name: float(series.mean()), f"{name}_ci_low": float(series.mean() - half),
                       f"{name}_ci_high": float(series.mean() + half)})
    return fields


if __name__ == "__main__":
    options = parse_args()
    setup_django()
    fill(options)

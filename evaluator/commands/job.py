"""``python -m evaluator job JOB_DIR``: the evaluator container's entry point.

It scores exactly what ``JOB_DIR/job.json`` describes and writes ``JOB_DIR/out/``:

    {"data": "data/data.jsonl",      # relative to JOB_DIR
     "bundle": "bundle.zip",         # zip or folder, relative to JOB_DIR
     "tasks": ["1", "2"] | null,     # default: every task of the data set
     "protocol": "iwr-det",
     "workers": 2 | null,
     "ocr_cache": "/ocr-cache" | null}   # a reference OCR cache mounted read-only (absolute)

Paths may not leave JOB_DIR, except the OCR cache: a mount of its own, filled outside the job.
This is the same code path as ``python -m evaluator score``; inside the container the container
itself is the process sandbox.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from evaluator.cli import UsageError

KNOWN_KEYS = {"data", "bundle", "tasks", "protocol", "workers", "ocr_cache"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "job", help="score the job described by JOB_DIR/job.json (the evaluator container's entry point)",
        description="Read JOB_DIR/job.json, score the bundle on the task data, write JOB_DIR/out/results.json.")
    parser.add_argument("job_dir", type=Path, help="job directory holding job.json")
    parser.set_defaults(func=run)


def read_job(job_dir: Path) -> dict:
    """Parse and check job.json; every problem is a one-line UsageError."""
    path = job_dir / "job.json"
    try:
        job = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(job, dict):
        raise UsageError(f"{path}: expected a JSON object")
    unknown = set(job) - KNOWN_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("data", "bundle"):
        if not isinstance(job.get(key), str):
            raise UsageError(f"{path}: field {key!r} must be a path relative to the job directory")
        job[key] = _inside(job_dir, job[key], key)
    tasks = job.get("tasks")
    if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str | int) for t in tasks)):
        raise UsageError(f"{path}: field 'tasks' must be a list of task ids or null")
    workers = job.get("workers")
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise UsageError(f"{path}: field 'workers' must be a positive integer or null")
    cache = job.get("ocr_cache")
    if cache is not None and not (isinstance(cache, str) and Path(cache).is_absolute() and Path(cache).is_dir()):
        raise UsageError(f"{path}: field 'ocr_cache' must be an existing folder's absolute path or null")
    return job


def _inside(job_dir: Path, relative: str, key: str) -> Path:
    root = job_dir.resolve()
    target = (root / relative).resolve()
    if root != target and root not in target.parents:
        raise UsageError(f"job.json field {key!r} points outside the job directory")
    if not target.exists():
        raise UsageError(f"job.json field {key!r}: {relative} does not exist in the job directory")
    return target


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    job = read_job(args.job_dir)
    from evaluator.runner import JobError, WorkerError, score

    try:
        document = score(job["data"], job["bundle"], args.job_dir / "out", task_keys=job.get("tasks"),
                         protocol=job.get("protocol") or "iwr-det", workers=job.get("workers"),
                         ocr_cache_dir=job.get("ocr_cache"))
    except JobError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = document["summary"]
    print(f"scored {summary['n_tasks']} tasks under {document['protocol']}: final {summary['final']:.4f}")
    return 0

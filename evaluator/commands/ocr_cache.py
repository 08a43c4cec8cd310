"""``python -m evaluator ocr-cache``: read a task set's reference checkpoints into an OCR cache folder.

The folder is the one ``score --ocr-cache`` keeps between runs: the reference checkpoints' OCR,
what the visual metrics derive from each of them alone (:mod:`evaluator.metrics.reference`) and
the pixel change between the checkpoint pairs the assertion judge compares, the same for every
submission. Scoring jobs run untrusted pages, so they only read it; it is filled here,
from nothing but the task set's own checkpoints: ``score`` runs this outside the job's sandbox,
beside the job, and the container deployment runs it in a container of its own beside the
job's (:mod:`evaluator.container`).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from evaluator.cli import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ocr-cache", help="read a task set's reference checkpoints into an OCR cache folder",
        description="OCR every reference checkpoint a scoring job may compare against (the initial view and "
                    "each visually checked action) into DIR, skipping those already there.")
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--dir", required=True, type=Path, help="the cache folder (created)")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    parser.add_argument("--protocol", default="iwr-det", help="scoring protocol whose OCR settings apply")
    parser.add_argument("--workers", type=int, default=None, help="parallel readers (default: one per usable core)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="start no new picture after this many seconds (the rest waits for the next fill)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.dataset import DatasetError

    keys = [k.strip() for k in args.tasks.split(",") if k.strip()] if args.tasks else None
    try:
        read, total = fill(args.data, args.dir, args.protocol, keys, args.workers, args.time_limit)
    except (DatasetError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"{read} reference checkpoint(s) read, {total - read} already kept or skipped, in {args.dir}")
    return 0


def fill(data: Path, directory: Path, protocol: str = "iwr-det", task_keys: list[str] | None = None,
         workers: int | None = None, time_limit: float | None = None) -> tuple[int, int]:
    """Read the reference checkpoints of ``data`` into ``directory``; returns (read now, checkpoints)."""
    from evaluator.capacity import usable_cpus
    from evaluator.dataset import load_dataset
    from evaluator.metrics import visual_params
    from evaluator.metrics.ocr import OcrCache
    from evaluator.metrics.reference import KeptReferences
    from evaluator.protocols import get_protocol

    dataset = load_dataset(Path(data))
    chosen = get_protocol(protocol)
    protocol_params = chosen.params
    params = visual_params(protocol_params.get("visual"))  # as the replay reads references
    images = reference_checkpoints(dataset, task_keys)
    deadline = time.monotonic() + time_limit if time_limit else None
    readings = OcrCache(directory=directory)
    read = readings.fill(images, params, workers or int(usable_cpus()), deadline)
    if not chosen.requires_llm:  # the official judge scores assertions and checkpoints with its own models
        _keep_pixel_changes(dataset, task_keys, protocol_params, directory, deadline)
        KeptReferences(directory).fill(images, params, readings, deadline)
    return read, len(images)


def _keep_pixel_changes(dataset, task_keys, params: dict, directory: Path, deadline: float | None) -> None:
    """The assertion judge's reference side: each judged checkpoint pair's pixel change, kept beside the OCR."""
    from evaluator.judges.reference import keep_pixel_changes

    for task in _selected(dataset, task_keys):
        if deadline is not None and time.monotonic() > deadline:
            return
        keep_pixel_changes(task, dataset.numbering, params, directory)


def reference_checkpoints(dataset, task_keys: list[str] | None = None) -> list[Path]:
    """Every reference checkpoint a job may score: the initial view and each visually checked action's."""
    found = []
    for task in _selected(dataset, task_keys):
        for step in (0, *task.flagged_steps):
            path = task.checkpoint_for_step(step, dataset.numbering)
            if path is not None and Path(path).is_file():
                found.append(Path(path))
    return found


def _selected(dataset, task_keys: list[str] | None) -> list:
    wanted = set(task_keys) if task_keys else None
    return [task for task in dataset.tasks if wanted is None or task.key in wanted]

"""``python -m evaluator author``: record one task from a real page (see docs/tasks.md)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "author",
        help="record a task from a local page and an action script",
        description=(
            "Record a task: serve the page offline, play the script's actions in Chromium, save the "
            "checkpoints, video, anonymised assets, stitched sheets and private reference data, and "
            "add the record to DATASET_DIR/data.jsonl. --site is a folder (its index.html), an .html "
            "file, a file:// URL or a URL on localhost; nothing else is fetched."
        ),
    )
    parser.add_argument("--site", required=True, help="folder, .html file, file:// URL or http://localhost URL")
    parser.add_argument("--script", required=True, type=Path, help="authoring script (JSON)")
    parser.add_argument("--out", required=True, type=Path, help="dataset folder (data.jsonl + data/)")
    parser.add_argument("--id", dest="task_id", help="task id (default: the script's id, else its file name)")
    parser.add_argument("--pace-ms", type=int, help="pause between actions in the video (default: the script's)")
    parser.add_argument("--no-video", action="store_true", help="skip the video (quick checks while writing a script)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.authoring import AuthoringError, author_task
    from evaluator.cli import UsageError

    if args.pace_ms is not None and not 0 <= args.pace_ms <= 10_000:
        raise UsageError("--pace-ms must be from 0 to 10000")
    try:
        task = author_task(
            args.site, args.script, args.out, task_id=args.task_id, record_video=not args.no_video, pace_ms=args.pace_ms
        )
    except AuthoringError as exc:
        raise UsageError(str(exc)) from None
    print(f"task {task.key}: {task.steps} actions, {len(task.assets)} assets, {len(task.sheets)} stitched sheet(s)")
    print(f"  written to {task.root}")
    for warning in task.warnings:
        print(f"  warning: {warning}")
    return 0

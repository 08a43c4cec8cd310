"""``python -m evaluator sample``: build the sample benchmark from the npm pages."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sample",
        help="build the sample benchmark (dev and test splits) from real npm pages",
        description="The sample benchmark's tasks are scripts in evaluator/sample/, recorded from npm packages.",
    )
    actions = parser.add_subparsers(dest="sample_command", metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="record every sample task into OUT/dev and OUT/test (skipped when up to date)",
        description=(
            "Record every task of evaluator/sample/manifest.json from the npm pages unpacked under "
            "--sources (scripts/setup.sh fetches them) into OUT/dev/data.jsonl and OUT/test/data.jsonl. "
            "Does nothing when OUT/build.json says the same scripts and evaluator version were built."
        ),
    )
    build.add_argument("--sources", type=Path, default=Path(".cache/npm"), help="folder of unpacked npm packages")
    build.add_argument("--out", type=Path, default=Path("var/benchmark"), help="output folder")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.add_argument("--workers", type=int, help="tasks recorded in parallel (default: 2 per core, at most 4)")
    build.set_defaults(func=run_build)
    listing = actions.add_parser("list", help="list the sample tasks with their split and page")
    listing.set_defaults(func=run_list)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def run_build(args: argparse.Namespace) -> int:
    from evaluator.cli import UsageError
    from evaluator.sample.build import SampleError, build_sample

    if args.workers is not None and not 1 <= args.workers <= 16:
        raise UsageError("--workers must be from 1 to 16")
    try:
        build_sample(args.sources, args.out, force=args.force, workers=args.workers)
    except SampleError as exc:
        raise UsageError(str(exc)) from None
    return 0


def run_list(args: argparse.Namespace) -> int:
    from evaluator.authoring import load_script
    from evaluator.sample.build import load_manifest

    packages, tasks = load_manifest()
    for task in tasks:
        script = load_script(task.script)
        levels = script.classification
        print(
            f"{task.split:4}  {script.id!s:28} {levels['interaction_complexity']} {levels['visual_complexity']} "
            f"{len(script.actions):2} actions  {task.package}@{packages[task.package]}/{task.page}"
        )
    return 0

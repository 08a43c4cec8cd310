"""``python -m evaluator baselines``: build the baseline bundles of a task set."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluator.cli import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "baselines", help="build baseline bundles (reference pages, scripts-stripped snapshots, empty pages)",
        description="Write OUT/<kind>/<task id>/index.html for each baseline kind, ready to score.")
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--kinds", default="reference,snapshot,empty", help="comma-separated kinds")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.baselines import KINDS, build_baselines
    from evaluator.dataset import DatasetError

    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise UsageError(f"--kinds: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(KINDS)}")
    if not args.data.is_file():
        raise UsageError(f"--data {args.data}: no such file")
    try:
        report = build_baselines(args.data, args.out, kinds)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    for kind, outcome in report.items():
        skipped = f", skipped (no reference page): {', '.join(outcome['skipped'])}" if outcome["skipped"] else ""
        print(f"{kind}: {len(outcome['written'])} pages in {args.out / kind}{skipped}")
    return 0

"""``python -m evaluator check-bundle``: a dry run of bundle intake against a task set.

Says which tasks have a page, which would score 0, which folders match no task and which
layout was read (flat ``<task id>/index.html`` or the official generator's
``<task id>/<model folder>/index.html``), without scoring anything. Exit status 0 when the
bundle would be accepted, 1 when it would be refused, 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evaluator.cli import UsageError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check-bundle", help="check a bundle against a task set without scoring it",
        description="Run every intake check on a bundle and report the tasks with a page, the tasks without one, "
                    "the folders ignored and the layout detected. Nothing is scored; nothing is kept.",
    )
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--bundle", required=True, type=Path, help="bundle zip or folder")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator.bundle import check_bundle
    from evaluator.dataset import DatasetError, load_dataset

    if not args.data.is_file():
        raise UsageError(f"--data {args.data}: no such file")
    if not args.bundle.exists():
        raise UsageError(f"--bundle {args.bundle}: no such file or folder")
    try:
        dataset = load_dataset(args.data)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    keys = _task_keys(args.tasks, dataset.keys)
    report = check_bundle(args.bundle, keys)
    print(json.dumps(report, indent=1, ensure_ascii=False) if args.json else "\n".join(format_report(report)))
    return 0 if report["accepted"] else 1


def _task_keys(option: str | None, known: list[str]) -> list[str]:
    if not option:
        return list(known)
    keys = [key.strip() for key in option.split(",") if key.strip()]
    if not keys:
        raise UsageError("--tasks lists no task id")
    unknown = [key for key in keys if key not in set(known)]
    if unknown:
        raise UsageError(f"unknown task id(s) {', '.join(unknown)}")
    return keys


def format_report(report: dict) -> list[str]:
    """The report as lines a person reads."""
    from evaluator.bundle.layout import Layout

    lines = []
    if report["layout"]:
        layout = Layout(**{name: report["layout"][name] for name in ("kind", "wrapper", "model_folders")})
        lines.append(f"layout: {layout.kind}: {layout.describe()}")
    lines.append(f"pages: {len(report['pages'])} of {report['tasks']} task(s)"
                 + (f" ({', '.join(report['pages'])})" if report["pages"] else ""))
    if report["missing"]:
        lines.append(f"no page (would score 0): {', '.join(report['missing'])}")
    if report["ignored"]:
        lines.append(f"ignored (no such task): {', '.join(report['ignored'])}")
    lines += [f"warning: {warning}" for warning in report["warnings"]]
    if report["accepted"]:
        lines.append("accepted: scoring would take this bundle")
    else:
        count = len(report["problems"])
        lines.append(f"rejected ({count} problem{'s' * (count != 1)}):")
        lines += [f"  {problem}" for problem in report["problems"]]
    return lines

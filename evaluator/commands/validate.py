"""``python -m evaluator validate --data PATH/data.jsonl``: check a whole task set.

Prints what the set holds and every problem found (file, line, task, field). Exit
status 0 when the set is valid, 1 when it has problems, 2 for unusable arguments.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from evaluator.cli import UsageError
from evaluator.dataset import Limits, validate_dataset
from evaluator.dataset.files import LIMIT_OPTIONS


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check a task set (data.jsonl and its task folders)",
        description="Check an IWR-Bench task set and list every problem with its file, line, task and field.",
    )
    parser.add_argument("--data", required=True, type=Path, metavar="PATH", help="the task set's data.jsonl")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON on stdout (the text report then goes to stderr)")
    names = ", ".join(f"{name} ({unit})" for name, (_, _, unit) in LIMIT_OPTIONS.items())
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                        help=f"change a size limit; repeatable. Names: {names}")
    parser.set_defaults(func=run)


def run(args) -> int:
    report = validate_dataset(args.data, limits=parse_limits(args.limit))
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        print(report.format_text(), file=sys.stderr)
    else:
        print(report.format_text())
    return 0 if report.ok else 1


def parse_limits(options: list[str]) -> Limits:
    """Limits with NAME=VALUE overrides, VALUE in the unit the name lists."""
    changes = {}
    for option in options:
        name, _, value = option.partition("=")
        if name.strip() not in LIMIT_OPTIONS:
            raise UsageError(f"unknown limit {name.strip()!r}; known: {', '.join(LIMIT_OPTIONS)}")
        attribute, unit, _ = LIMIT_OPTIONS[name.strip()]
        try:
            amount = float(value)
        except ValueError:
            raise UsageError(f"limit {option!r}: {value!r} is not a number") from None
        if not 0 < amount < 1e12:
            raise UsageError(f"limit {option!r} must be a positive number below 1e12")
        changes[attribute] = int(amount * unit)
    return dataclasses.replace(Limits(), **changes)

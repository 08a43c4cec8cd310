"""Command-line entry point.

Each subcommand lives in its own module under ``evaluator.commands`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable taking the
parsed arguments and returning an exit code). Modules are imported only when the CLI
runs, so importing :mod:`evaluator` stays free of side effects.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from evaluator import __version__

# Order in which subcommands appear in ``--help``.
COMMANDS = ("validate", "score", "ocr_cache", "job", "baselines", "author", "sample", "generate")


class UsageError(Exception):
    """Inputs the user gave cannot be used; the message is printed as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluator",
        description="IWR-Bench evaluator: validate task sets, author tasks, score submission bundles.",
    )
    parser.add_argument("--version", action="version", version=f"iwr-bench evaluator {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"evaluator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"evaluator.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

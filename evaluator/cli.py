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
COMMANDS = ("validate", "score", "check_bundle", "ocr_cache", "job", "container_job", "baselines", "author", "sample",
            "generate")


class UsageError(Exception):
    """Inputs the user gave cannot be used; the message is printed as one line (exit status 2)."""

    exit_code = 2


# iwr-official: the judge's settings or endpoint cannot be used (no endpoint, refused key, unreachable,
# bad weights). Its own exit status, so that a site's worker tells the operator's fault from the bundle's.
JUDGE_UNUSABLE_EXIT = 3


class JudgeUnusableError(UsageError):
    """The judge an official score needs cannot be used; nothing was scored."""

    exit_code = JUDGE_UNUSABLE_EXIT


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (a command name), that command's alone.

    Each run needs one command: ``main`` registers just that one when the first argument names
    it, so ``score`` does not import what ``generate`` needs (an HTTP client, TLS), which is a
    tenth of a second on every scoring job's start. ``--help`` and anything else get them all.
    """
    parser = argparse.ArgumentParser(
        prog="python -m evaluator",
        description="IWR-Bench evaluator: validate task sets, author tasks, score submission bundles.",
    )
    parser.add_argument("--version", action="version", version=f"iwr-bench evaluator {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only in COMMANDS else COMMANDS:
        try:
            module = importlib.import_module(f"evaluator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"evaluator.commands.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_name(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _command_name(argv: list[str]) -> str | None:
    """The module name of the command ``argv`` starts with (``ocr-cache`` -> ``ocr_cache``), if any."""
    if not argv or argv[0].startswith("-"):
        return None
    name = argv[0].replace("-", "_")
    return name if name in COMMANDS else None

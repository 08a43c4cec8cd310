"""``python -m evaluator generate``: make a bundle by asking a model endpoint for each task's page.

The API key is read from an environment variable (``--api-key-env``, default
OPENAI_API_KEY), never from the command line, where other users and shell histories
would see it. Writes OUT/<task id>/index.html and OUT/generation.json; the exit status
is 0 when every task got a page, 1 when some did not (each with its reason).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from pathlib import Path

from evaluator.cli import UsageError

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def register(subparsers) -> None:
    from evaluator import generation as gen

    # allow_abbrev=False: "--api-key sk-..." must not pass as an abbreviation of --api-key-env.
    parser = subparsers.add_parser(
        "generate", allow_abbrev=False, help="generate a bundle of pages from an OpenAI-compatible model endpoint",
        description="Ask a chat-completions endpoint for every task's page following the benchmark's generation "
                    "settings (stitched assets first, then video frames at 1 fps, temperature 0). Writes "
                    "OUT/<task id>/index.html and OUT/generation.json (per-task status, reason and token usage).",
    )
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--out", required=True, type=Path, help="output folder: the bundle (created)")
    parser.add_argument("--base-url", required=True, help="endpoint base URL, e.g. https://api.example.com/v1")
    parser.add_argument("--model", required=True, help="model id sent with each request")
    parser.add_argument("--api-key-env", default=DEFAULT_KEY_ENV, metavar="NAME",
                        help=f"environment variable holding the API key (default {DEFAULT_KEY_ENV}; "
                             "set it to an empty value for endpoints without keys)")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    parser.add_argument("--max-images", type=int, default=gen.PROTOCOL_MAX_IMAGES,
                        help=f"images per request, stitched assets included (1-{gen.PROTOCOL_MAX_IMAGES})")
    parser.add_argument("--max-frames", type=int, default=gen.PROTOCOL_MAX_FRAMES,
                        help=f"video frames per request (1-{gen.PROTOCOL_MAX_FRAMES})")
    parser.add_argument("--max-tokens", type=int, default=16000, help="answer length limit (default 16000)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request (default 600)")
    parser.add_argument("--retries", type=int, default=3,
                        help="extra attempts on rate limits, server errors and timeouts (default 3)")
    parser.add_argument("--workers", type=int, default=1, help="requests in flight at once (default 1)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds for the whole run")
    parser.add_argument("--resume", action="store_true", help="keep pages an earlier run into OUT generated")
    parser.add_argument("--default-temperature", action="store_true",
                        help="send no temperature, so the model runs at its default (reasoning models refuse the "
                             "protocol's 0; the report records it either way; also chosen on its own on refusal)")
    parser.add_argument("--length-parameter", choices=gen.LENGTH_PARAMETERS, default="max_tokens",
                        help="how the answer-length limit is sent first (default max_tokens; a refusal switches)")
    parser.add_argument("--no-stream", action="store_true",
                        help="read each answer whole instead of as server-sent events")
    parser.add_argument("--allow-plain-http", action="store_true",
                        help="development only: send the API key over plain http to this machine (localhost)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from evaluator import generation as gen
    from evaluator.dataset import DatasetError

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = _config(args)
    _check_paths(args)
    if not gen.ffmpeg_available():
        raise UsageError("ffmpeg is not installed; it is needed to sample video frames")
    deadline = time.monotonic() + args.time_limit if args.time_limit else None
    try:
        report = gen.generate(args.data, args.out, config, _task_keys(args), workers=args.workers,
                              resume=args.resume, deadline=deadline, on_task=_print_outcome)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    summary = report["summary"]
    for note in report.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    print(f"{summary['ok']} of {summary['tasks']} task(s) got a page; report: {args.out / gen.REPORT_NAME}")
    return 0 if summary["failed"] == 0 else 1


def _config(args: argparse.Namespace):
    from evaluator.generation import ConfigError, EndpointConfig

    if not ENV_NAME.fullmatch(args.api_key_env):  # maybe the key itself: never echo it
        raise UsageError("--api-key-env takes the NAME of an environment variable holding the key, not the key")
    if args.api_key_env not in os.environ:
        raise UsageError(f"environment variable {args.api_key_env} is not set; put the API key there "
                         "(or set it empty for an endpoint without keys)")
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError("--time-limit must be positive")
    try:
        return EndpointConfig(
            base_url=args.base_url, model=args.model, api_key=os.environ[args.api_key_env].strip(),
            max_tokens=args.max_tokens, max_images=args.max_images, max_frames=args.max_frames,
            timeout=args.timeout, retries=args.retries, default_temperature=args.default_temperature,
            length_parameter=args.length_parameter, stream=not args.no_stream,
            **({"allow_plain_http": True} if args.allow_plain_http else {}),  # else the environment decides
        )
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def _check_paths(args: argparse.Namespace) -> None:
    if not args.data.is_file():
        raise UsageError(f"--data {args.data}: no such file")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")
    if args.out.is_dir() and any(args.out.iterdir()) and not args.resume:
        raise UsageError(f"--out {args.out}: folder is not empty (use --resume to continue an earlier run)")


def _task_keys(args: argparse.Namespace) -> list[str] | None:
    if not args.tasks:
        return None
    keys = [key.strip() for key in args.tasks.split(",") if key.strip()]
    if not keys:
        raise UsageError("--tasks lists no task id")
    return keys


def _print_outcome(outcome) -> None:
    if outcome.ok:
        print(f"task {outcome.key}: page written", file=sys.stderr)
    else:
        print(f"task {outcome.key}: no page: {outcome.reason}", file=sys.stderr)

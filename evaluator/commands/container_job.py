"""``python -m evaluator container-job JOB_DIR``: run JOB_DIR's job in a fresh evaluator container.

The launcher of the container sandbox's jobs: :mod:`evaluator.container` gives the container every
flag, and the container runs ``python -m evaluator job /job`` (:mod:`evaluator.commands.job`).

For protocol iwr-official it is what ``score`` is to the bubblewrap sandbox (evaluator/official/launch.py):
it checks the judge settings and asks the endpoint once before any container starts (an unusable
configuration stops it with one line), runs the judge relay, which alone holds the key, in this
process, writes job.json's ``official`` object (the relay's socket and the weights as the container
sees them, under /judge and /weights), binds the socket's folder and the weights read-only into the
container, and once the container has ended writes the relay's counters into results.json's ``judge``
record. The container's environment is ``CONTAINER_ENV`` alone, and the engine's client runs without
the key's variable.

Exit status: the container's (124 at its wall clock); 2 for unusable inputs; 1 when no container ran.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from evaluator.cli import UsageError

MAX_SOCKET_PATH = 107  # a Unix socket's path, in bytes, less the final NUL (Linux sockaddr_un)


def register(subparsers) -> None:
    from evaluator import container
    from evaluator.commands.score import official_arguments

    defaults = container.ContainerLimits()
    parser = subparsers.add_parser(
        "container-job", help="run JOB_DIR's job in a fresh evaluator container (with the judge relay beside it "
                              "for protocol iwr-official)",
        description="Run python -m evaluator job on JOB_DIR in a fresh evaluator container (no network, read-only, "
                    "non-root). For protocol iwr-official the judge relay, holding the key, runs in this process "
                    "and only its socket's folder is mounted into the container.")
    parser.add_argument("job_dir", type=Path, help="job directory: job.json, the task data, the bundle, out/")
    parser.add_argument("--image", default=container.DEFAULT_IMAGE, help=f"evaluator image ({container.DEFAULT_IMAGE})")
    parser.add_argument("--engine", default="docker", help="container engine: docker (default) or podman")
    parser.add_argument("--name", default=None, help="the container's name (default: iwr-job-<random>)")
    parser.add_argument("--label", action="append", default=[], metavar="NAME=VALUE", help="a label of the container")
    parser.add_argument("--stop-timeout", type=int, default=None, help="seconds the engine waits when stopping it")
    parser.add_argument("--memory", default=defaults.memory, help=f"memory limit ({defaults.memory})")
    parser.add_argument("--cpus", type=float, default=defaults.cpus, help=f"CPU limit ({defaults.cpus})")
    parser.add_argument("--pids", type=int, default=defaults.pids, help=f"process limit ({defaults.pids})")
    parser.add_argument("--time-limit", type=float, default=defaults.wall_clock_s,
                        help=f"the container's own wall clock, seconds ({defaults.wall_clock_s:.0f})")
    parser.add_argument("--ocr-cache", type=Path, default=None, help="reference OCR cache, mounted read-only")
    parser.add_argument("--judge-dir", type=Path, default=None,
                        help="a new folder for the judge relay's socket, at the same path for the container engine "
                             "(default: a private temporary folder); removed afterwards")
    parser.add_argument("--keep-container", action="store_true",
                        help="leave the ended container to the caller, who inspects and removes it")
    official_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    protocol = _job_protocol(args.job_dir)
    args.labels = dict(_label(word) for word in args.label)
    # A stopped launcher still ends its container and its relay (``finally`` and ``with`` run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if not (protocol == "iwr-official" or protocol.startswith("iwr-official-")):
        return _run_container(args)
    from evaluator.official.launch import run_official

    args.out = args.job_dir / "out"
    folder = _judge_folder(args.judge_dir)
    try:
        return run_official(args, _run_container, socket_folder=folder, here=False)
    finally:
        if folder is not None and folder.is_dir():
            folder.rmdir()  # the relay removed its socket


def _job_protocol(job_dir: Path) -> str:
    """job.json's protocol; the container checks the rest of it (its paths are the container's)."""
    path = job_dir / "job.json"
    try:
        job = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(job, dict):
        raise UsageError(f"{path}: expected a JSON object")
    return str(job.get("protocol") or "iwr-det")


def _judge_folder(folder: Path | None) -> Path | None:
    from evaluator.official.relay import SOCKET_NAME

    if folder is None:
        return None  # the relay makes a private temporary folder and removes it
    folder = folder.resolve()
    if len(os.fsencode(folder / SOCKET_NAME)) > MAX_SOCKET_PATH:
        raise UsageError(f"--judge-dir {folder}: the socket's path would be longer than a Unix socket's "
                         f"{MAX_SOCKET_PATH} bytes; name a shorter folder")
    try:
        folder.mkdir(mode=0o700)
    except OSError as exc:
        raise UsageError(f"--judge-dir {folder}: {exc.strerror} (a new folder is needed)") from None
    return folder


def _run_container(args: argparse.Namespace) -> int:
    from evaluator import container

    name = args.name or f"iwr-job-{uuid.uuid4().hex[:12]}"
    limits = container.ContainerLimits(memory=args.memory, cpus=args.cpus, pids=args.pids,
                                       wall_clock_s=args.time_limit)
    judge_dir = weights = None
    if args.judge_socket:
        official, weights = container_official(args)
        _write_official(args.job_dir / "job.json", official)
        socket = Path(args.judge_socket)
        judge_dir = socket.parent
        container.prepare_judge_folder(judge_dir, socket)
    try:
        container.prepare_job_dir(args.job_dir)
        command = container.run_command(args.job_dir, args.image, name, limits, args.engine, args.ocr_cache,
                                        judge_dir=judge_dir, weights_dir=weights)
    except (OSError, container.ContainerSandboxError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stop = ["--stop-timeout", str(args.stop_timeout)] if args.stop_timeout is not None else []
    command = [*command[:2], *container.label_args(args.labels), *stop, *command[2:]]
    try:
        code = subprocess.run(command, stdin=subprocess.DEVNULL, env=engine_environment(args.judge_key_env)).returncode
        _say_why_it_ended(name, code, args.engine)
    finally:
        if not args.keep_container:
            subprocess.run([container.engine_binary(args.engine), "rm", "--force", name], capture_output=True)
    return code


def container_official(args: argparse.Namespace) -> tuple[dict, Path | None]:
    """job.json's ``official`` object (the relay's socket and the weights as the container sees them: plain
    data, never a key) and the weights folder of this machine to mount, if any."""
    from urllib.parse import urlsplit

    from evaluator import container

    visual = json.loads(args.official_visual or "{}")
    weights = Path(visual["weights"]) if visual.get("weights") else None
    if weights is not None:
        visual["weights"] = container.WEIGHTS_MOUNT
    official = {"socket": f"{container.JUDGE_MOUNT}/{Path(args.judge_socket).name}", "judge_model": args.judge_model,
                "grounding_model": args.grounding_model or None,
                "host": urlsplit(args.judge_base_url or "").hostname or "", "visual": visual}
    return official, weights


def _write_official(path: Path, official: dict) -> None:
    job = json.loads(path.read_text(encoding="utf-8"))
    job["official"] = official
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(job), encoding="utf-8")
    os.replace(tmp, path)


def engine_environment(key_env: str | None, environ=None) -> dict[str, str]:
    """The engine client's environment: this process's, without the judge's key (only the relay needs it)."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if name != key_env}


def _label(word: str) -> tuple[str, str]:
    name, sep, value = word.partition("=")
    if not sep or not name:
        raise UsageError(f"--label {word!r}: expected NAME=VALUE")
    return name, value


def _say_why_it_ended(name: str, code: int, engine: str) -> None:
    """A limit that ended the container, in one line (the job said why it failed otherwise)."""
    from evaluator import container

    if code in (0, None):
        return
    state = container.inspect_state(name, engine) or {}
    outcome = container.ContainerOutcome(exit_code=code, oom_killed=bool(state.get("OOMKilled")),
                                         timed_out=code == container.TIMED_OUT_STATUS)
    if outcome.timed_out or outcome.oom_killed:
        print(f"error: {outcome.reason}", file=sys.stderr)

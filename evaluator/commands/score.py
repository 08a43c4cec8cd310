"""``python -m evaluator score``: replay and score a bundle against a task set.

The job runs inside the process sandbox (bubblewrap by default): this command re-runs
itself inside it, with only the output folder writable, its inputs and this evaluator's package
read-only, and an allow-listed environment (nothing of this process's own: see
:mod:`evaluator.isolation`). The OCR cache, if given, is filled
before the job, outside the sandbox, and the job only reads it (see ``OcrCache``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from evaluator.cli import UsageError

log = logging.getLogger("evaluator.score")
FILL_NICENESS = 10  # the reference cache fill beside a job: about a tenth of a core's share when both compete


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "score", help="replay and score a bundle of generated pages",
        description="Replay every task's actions on the bundle's pages in headless Chromium and score them. "
                    "Writes OUT/results.json, OUT/progress.jsonl and per-task artifacts under OUT/tasks/<id>/.",
    )
    parser.add_argument("--data", type=Path, default=None, help="the task set's data.jsonl (required)")
    parser.add_argument("--bundle", type=Path, default=None,
                        help="bundle zip or folder (<id>/index.html) (required)")
    parser.add_argument("--out", required=True, type=Path, help="output folder (created)")
    parser.add_argument("--tasks", default=None, help="comma-separated task ids (default: all)")
    parser.add_argument("--protocol", default="iwr-det", help="scoring protocol (default: iwr-det)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel workers (default: two per usable core, as memory allows)")
    parser.add_argument("--sandbox", choices=("bubblewrap", "none", "container"),
                        default=os.environ.get("IWR_SANDBOX", "bubblewrap"),
                        help="process sandbox for the job (default: $IWR_SANDBOX or bubblewrap)")
    parser.add_argument("--allow-unsandboxed", action="store_true",
                        help="development only: permit --sandbox none and a fallback when bubblewrap is missing")
    parser.add_argument("--ocr-cache", type=Path, default=None,
                        help="folder that keeps reference OCR results between runs (filled before the job "
                             "outside its sandbox; read-only to the job)")
    parser.add_argument("--no-video", action="store_true", help="skip replay videos (faster)")
    parser.add_argument("--time-limit", type=float, default=None, help="hard limit of the whole job, seconds")
    parser.add_argument("--memory-limit-mb", type=int, default=None, help="hard memory limit of the whole job")
    parser.add_argument("--profile", action="store_true",
                        help="write where each task's replay spends its time, phase by phase, to "
                             "OUT/tasks/<id>/profile.json (bench/evaluator reads it)")
    parser.add_argument("--standby", type=Path, default=None, metavar="FOLDER",
                        help="start the job before its inputs exist, instead of --data/--bundle/--tasks: the "
                             "sandbox, the imports and the workers' browsers start now; the job starts when one "
                             'JSON line on standard input names its inputs inside FOLDER ({"data": PATH, '
                             '"bundle": PATH, "tasks": "K1,K2" or null}); FOLDER is read-only to the job, and the '
                             "time limit counts from that line. End of input before it: the job ends unused")
    official_arguments(parser)
    parser.set_defaults(func=run)


def official_arguments(parser) -> None:
    group = parser.add_argument_group("protocol iwr-official (the paper's LLM judge)")
    group.add_argument("--judge-base-url", default=None, help="the judge's OpenAI-compatible API (…/v1)")
    group.add_argument("--judge-model", default=None, help="model id of the assertion judge and visual rubric")
    group.add_argument("--grounding-model", default=None, help="model id of the grounding agent (default: the judge)")
    group.add_argument("--judge-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the judge's key (default OPENAI_API_KEY); the key stays "
                            "in the judge relay, outside the job's sandbox")
    group.add_argument("--official-weights", type=Path, default=None, help="folder of the DINOv2-base weights")
    group.add_argument("--official-weights-sha256", type=Path, default=None,
                       help="sha256sum-style file pinning the weights' files (when this evaluator pins none)")
    group.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the visual models run")
    group.add_argument("--judge-cache", type=Path, default=None,
                       help="folder keeping judge answers between runs (default: ~/.cache/iwr-bench/judge)")
    group.add_argument("--judge-budget-requests", type=int, default=None, help="judge requests one job may make")
    group.add_argument("--judge-budget-tokens", type=int, default=None, help="judge tokens one job may use")
    # Set by the launcher for the sandboxed job: where the relay listens and the visual models' settings.
    group.add_argument("--judge-socket", default=None, help=argparse.SUPPRESS)
    group.add_argument("--official-visual", default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.standby is not None:
        return _run_standby(args)
    _check_inputs(args)
    if _is_official(args.protocol) and not args.judge_socket:
        from evaluator.official.launch import run_official

        return run_official(args, _run_protocol_job)
    return _run_protocol_job(args)


def _is_official(name: str) -> bool:
    return name == "iwr-official" or name.startswith("iwr-official-")


def _run_protocol_job(args: argparse.Namespace) -> int:
    from evaluator import sandbox

    if sandbox.inside_sandbox() or args.sandbox == "none" and sandbox.unsandboxed_allowed(args.allow_unsandboxed):
        if args.sandbox == "none":
            sandbox.resolve_backend("none", allow_unsandboxed=True)  # logs the loud warning
        return _score_here(args)
    return _score_in_sandbox(args)


def _check_inputs(args: argparse.Namespace) -> None:
    for name in ("data", "bundle"):
        if getattr(args, name) is None:
            raise UsageError(f"--{name} is required (or --standby FOLDER, which names it later)")
    if not args.data.is_file():
        raise UsageError(f"--data {args.data}: no such file")
    if not args.bundle.exists():
        raise UsageError(f"--bundle {args.bundle}: no such file or folder")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")


def _task_keys(args) -> list[str] | None:
    if not args.tasks:
        return None
    keys = [k.strip() for k in args.tasks.split(",") if k.strip()]
    if not keys:
        raise UsageError("--tasks lists no task id")
    return keys


def _score_here(args: argparse.Namespace, standby=None) -> int:
    from evaluator.runner import JobError, WorkerError, score

    try:
        results = score(args.data, args.bundle, args.out, task_keys=_task_keys(args), protocol=args.protocol,
                        workers=args.workers, ocr_cache_dir=args.ocr_cache, record_video=not args.no_video,
                        progress=_print_progress, official=_official_job(args),
                        judge_stats=getattr(args, "judge_stats", None), standby=standby,
                        profile=args.profile)
    except JobError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:  # the machine, not the input: nothing scored, exit 1 (retryable)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if results is None:
        print("standby ended: no job was given", file=sys.stderr)
        return 0
    _print_bundle_notes(args.out / "job.json")
    summary = results["summary"]
    print(json.dumps({k: summary.get(k) for k in ("final", "ifs", "vfs", "n_tasks")}))
    return 0


def _official_job(args: argparse.Namespace) -> dict | None:
    """The judge settings of the job (socket, model ids, visual models), when scoring iwr-official."""
    if not args.judge_socket:
        return None
    from urllib.parse import urlsplit

    from evaluator.official.config import job_settings

    return job_settings(args.judge_socket, args.judge_model, args.grounding_model,
                        urlsplit(args.judge_base_url or "").hostname or "", json.loads(args.official_visual or "{}"))


def _print_bundle_notes(job_json: Path) -> None:
    """Say which bundle folders matched no task and which tasks had no page (neither is fatal)."""
    try:
        bundle = json.loads(job_json.read_text(encoding="utf-8")).get("bundle", {})
    except (OSError, ValueError):
        return
    if bundle.get("unmatched"):
        print(f"note: bundle folder(s) matching no task being scored, ignored: {', '.join(bundle['unmatched'])}",
              file=sys.stderr)
    if bundle.get("missing"):
        print(f"note: no page in the bundle for task(s), scored 0: {', '.join(bundle['missing'])}",
              file=sys.stderr)


def _print_progress(event: dict) -> None:
    error = f" ({event['error']})" if event.get("error") else ""
    print(f"[{event['done']}/{event['total']}] task {event['task']}: final {event.get('final', 0):.3f}{error}",
          file=sys.stderr)


def _score_in_sandbox(args: argparse.Namespace) -> int:
    from evaluator import sandbox

    _precheck(args)
    args.out.mkdir(parents=True, exist_ok=True)
    limits = _job_limits(args)
    filling = _start_ocr_cache_fill(args, limits) if args.ocr_cache else None
    try:
        result = sandbox.run_job(_inner_argv(args), [args.out], backend=args.sandbox, limits=limits,
                                 allow_unsandboxed=args.allow_unsandboxed, cwd=args.out.resolve(),
                                 readable=_inputs(args))
    except sandbox.SandboxError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if filling is not None:
            filling.join()
    if result.timed_out or result.memory_exceeded:
        print(f"error: {result.reason}", file=sys.stderr)
        return 1
    return result.returncode if result.returncode >= 0 else 1  # the job printed its own reason


def _start_ocr_cache_fill(args: argparse.Namespace, limits) -> threading.Thread:
    """Add the task set's reference readings to the cache from here, from the task set alone: the job runs
    untrusted pages and gets the cache read-only.

    The fill runs beside the job, not before it: on a kept cache it only checks (a quarter of a
    second that the job's start-up hides), and a reading the job needs before the fill has stored it
    is simply read by the job itself, the same way. No new picture after a tenth of the job's time.
    The thread runs at a lower CPU priority: the job's start-up keeps every core busy, and the
    check fits in the moments the job waits for its pages.
    """
    args.ocr_cache.mkdir(parents=True, exist_ok=True)
    thread = threading.Thread(target=_fill_ocr_cache, args=(args, limits.time_s / 10), name="iwr-ocr-fill")
    thread.start()
    return thread


def _fill_ocr_cache(args: argparse.Namespace, time_limit: float) -> None:
    from evaluator.commands.ocr_cache import fill

    with contextlib.suppress(OSError):  # this thread only (Linux: a thread is a task of its own)
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, max(os.getpriority(os.PRIO_PROCESS, me), FILL_NICENESS))

    try:
        read, total = fill(args.data, args.ocr_cache, args.protocol, _task_keys(args), args.workers,
                           time_limit=time_limit)
    except Exception as exc:  # the cache only saves time: the job reads what is missing itself
        log.warning("OCR cache %s not filled: %s", args.ocr_cache, exc)
    else:
        if read:
            log.info("OCR cache: %d of %d reference checkpoint(s) read", read, total)


def _precheck(args: argparse.Namespace) -> None:
    """Refuse unusable inputs here, with one line, before a sandbox is started for them."""
    from evaluator.bundle import validate_bundle
    from evaluator.dataset import DatasetError, load_dataset
    from evaluator.runner import JobError, check_protocol

    try:
        check_protocol(args.protocol, configured=bool(args.judge_socket))
        dataset = load_dataset(args.data)
    except (JobError, DatasetError) as exc:
        raise UsageError(str(exc)) from None
    keys = _task_keys(args) or dataset.keys
    unknown = [k for k in keys if k not in set(dataset.keys)]
    if unknown:
        raise UsageError(f"unknown task id(s) {', '.join(unknown)} in {args.data}")
    problems = validate_bundle(args.bundle, set(keys))
    if problems:
        raise UsageError(f"bundle rejected ({len(problems)} problem(s)): " + "; ".join(problems[:5]))


def _inner_argv(args: argparse.Namespace, standby: bool = False) -> list[str]:
    """The same command, with absolute paths, for the process inside the sandbox (``standby``: its inputs
    come later, on its standard input)."""
    argv = [sys.executable, "-m", "evaluator", "score", "--out", str(args.out.resolve()),
            "--protocol", args.protocol, "--sandbox", args.sandbox]
    if standby:
        argv += ["--standby", str(args.standby.resolve())]
    else:
        argv += ["--data", str(args.data.resolve()), "--bundle", str(args.bundle.resolve())]
    if args.tasks and not standby:
        argv += ["--tasks", args.tasks]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    if args.ocr_cache:
        argv += ["--ocr-cache", str(args.ocr_cache.resolve())]
    if args.no_video:
        argv.append("--no-video")
    if args.profile:
        argv.append("--profile")
    if args.judge_socket:  # the relay's socket and the public settings; never the key
        argv += ["--judge-socket", args.judge_socket, "--judge-base-url", args.judge_base_url,
                 "--judge-model", args.judge_model, "--official-visual", args.official_visual]
        if args.grounding_model:
            argv += ["--grounding-model", args.grounding_model]
    return argv


def _inputs(args: argparse.Namespace) -> list[Path]:
    """What the job reads besides this evaluator (added by the sandbox): the task set, the bundle, the OCR cache,
    and the real folders of task folders that are symbolic links (a task set made of links to another one's
    tasks): the sandbox shows only the paths it binds, so a link would otherwise point at nothing."""
    cache = [args.ocr_cache.resolve()] if args.ocr_cache else []
    judge = [Path(args.judge_socket).parent] if args.judge_socket else []  # the relay's socket, nothing else
    weights = _official_weights(args)
    return [args.data.resolve().parent, args.bundle.resolve(), *cache, *judge, *weights,
            *_linked_task_folders(args)]


def _official_weights(args: argparse.Namespace) -> list[Path]:
    visual = json.loads(args.official_visual or "{}") if args.judge_socket else {}
    return [Path(visual["weights"]).resolve()] if visual.get("weights") else []


def _linked_task_folders(args: argparse.Namespace) -> list[Path]:
    folder = args.data.resolve().parent / args.data.stem
    wanted = set(args.tasks.split(",")) if getattr(args, "tasks", None) else None
    if not folder.is_dir():
        return []
    return [entry.resolve() for entry in sorted(folder.iterdir())
            if entry.is_symlink() and entry.is_dir() and (wanted is None or entry.name in wanted)]


def _job_limits(args: argparse.Namespace):
    from evaluator.protocols import get_protocol
    from evaluator.sandbox import JobLimits

    try:
        limits = get_protocol(args.protocol).params.get("limits", {})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from evaluator.capacity import default_workers

    workers = args.workers or default_workers(official=_is_official(args.protocol))
    time_s = args.time_limit or float(limits.get("job_timeout_s", 3600))
    memory = args.memory_limit_mb or int(limits.get("job_memory_mb_per_worker", 3072)) * workers + 1024
    return JobLimits(time_s=time_s, memory_mb=memory)


# --------------------------------------------------------------------------- a job on standby


def _run_standby(args: argparse.Namespace) -> int:
    """``score --standby FOLDER``: start now, take the job's inputs from one line of standard input later.

    A site's scoring worker keeps one such job ready between evaluations, so that no evaluation waits for
    the sandbox, the imports and the browsers to start. It is still one sandbox, one process tree per job:
    nothing of an earlier job's pages is in it, and it never serves a second job.
    """
    from evaluator import sandbox

    _check_standby(args)
    if sandbox.inside_sandbox() or args.sandbox == "none" and sandbox.unsandboxed_allowed(args.allow_unsandboxed):
        if args.sandbox == "none":
            sandbox.resolve_backend("none", allow_unsandboxed=True)  # logs the loud warning
        return _score_here(args, standby=lambda: _job_inputs(args, sys.stdin.readline()))
    return _standby_in_sandbox(args)


def _check_standby(args: argparse.Namespace) -> None:
    from evaluator.runner import JobError, check_protocol

    for name in ("data", "bundle", "tasks"):
        if getattr(args, name) is not None:
            raise UsageError(f"--standby takes the job's --{name} from its standard input, not from the command")
    if not args.standby.is_dir():
        raise UsageError(f"--standby {args.standby}: no such folder")
    if _is_official(args.protocol) or args.judge_base_url or args.judge_socket:
        raise UsageError("--standby does not serve the LLM-judged protocols: their judge relay starts with the job")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")
    try:
        check_protocol(args.protocol)
    except JobError as exc:
        raise UsageError(str(exc)) from None


def _given_inputs(args: argparse.Namespace, line: str) -> dict | None:
    """The job's inputs from the line that starts a job on standby (None: input ended, no job); checks that
    they lie inside the standby folder, the only one the job can read, and sets them on ``args``."""
    if not line.strip():
        return None
    try:
        given = json.loads(line)
    except ValueError:
        raise UsageError("--standby: the job line is not JSON") from None
    if not isinstance(given, dict) or not all(isinstance(given.get(k), str) for k in ("data", "bundle")):
        raise UsageError('--standby: the job line must be an object with "data" and "bundle" paths')
    tasks = given.get("tasks")
    if tasks is not None and not isinstance(tasks, str):
        raise UsageError('--standby: "tasks" must be a comma-separated string of task ids, or null')
    folder = args.standby.resolve()
    for name in ("data", "bundle"):
        path = Path(given[name]).resolve()
        if not path.is_relative_to(folder):
            raise UsageError(f"--standby: the job's {name} {given[name]} is outside the standby folder {folder}, "
                             "which is all the job can read")
        setattr(args, name, path)
    args.tasks = tasks
    outside = [str(p) for p in _linked_task_folders(args) if not p.is_relative_to(folder)]
    if outside:
        raise UsageError(f"--standby: task folder(s) linked from outside the standby folder: {', '.join(outside)}")
    return {"data": str(args.data), "bundle": str(args.bundle), "tasks": tasks}


def _job_inputs(args: argparse.Namespace, line: str) -> dict | None:
    """What :func:`evaluator.runner.score` takes from the job line (its task ids as a list)."""
    given = _given_inputs(args, line)
    return None if given is None else {**given, "tasks": _task_keys(args)}


def _standby_in_sandbox(args: argparse.Namespace) -> int:
    from evaluator import sandbox

    args.out.mkdir(parents=True, exist_ok=True)
    if args.ocr_cache:
        args.ocr_cache.mkdir(parents=True, exist_ok=True)
    limits = _job_limits(args)
    filling: list[threading.Thread] = []

    waiting = time.monotonic()

    def job_line() -> str | None:  # blocks until the job is given; checked here, before the sandbox sees it
        given = _given_inputs(args, sys.stdin.readline())
        if given is None:
            return None
        log.info("job given to the evaluator on standby after %.1f s", time.monotonic() - waiting)
        _check_inputs(args)
        _precheck(args)
        if args.ocr_cache:
            filling.append(_start_ocr_cache_fill(args, limits))
        return json.dumps(given) + "\n"

    readable = [args.standby.resolve(), *([args.ocr_cache.resolve()] if args.ocr_cache else [])]
    try:
        result = sandbox.run_job(_inner_argv(args, standby=True), [args.out], backend=args.sandbox, limits=limits,
                                 allow_unsandboxed=args.allow_unsandboxed, cwd=args.out.resolve(),
                                 readable=readable, standby=job_line)
    except sandbox.SandboxError as exc:
        raise UsageError(str(exc)) from None
    finally:
        for thread in filling:
            thread.join()
    if result.unused:
        print("standby ended: no job was given", file=sys.stderr)
        return 0
    if result.timed_out or result.memory_exceeded:
        print(f"error: {result.reason}", file=sys.stderr)
        return 1
    return result.returncode if result.returncode >= 0 else 1

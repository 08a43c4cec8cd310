"""Score a bundle against a task set: the job behind ``python -m evaluator score``.

``score()`` reads the task set, takes in the bundle, replays the tasks in parallel worker
processes and writes::

    OUT/results.json            the contract (protocol, evaluator_version, ocr_engine, browser, tasks, summary)
    OUT/progress.jsonl          one JSON line per finished task, appended as they finish
    OUT/job.json                how the job ran (bundle warnings, workers, timings)
    OUT/tasks/<key>/result.json one task's result, written as soon as it finishes
    OUT/tasks/<key>/step_<k>.png, replay.mp4, console.json, blocked.json

Each worker process runs ONE Chromium and gives every task a fresh context. A worker
that dies or hangs is killed and replaced; its task is recorded with the reason and the
rest of the run goes on. Missing pages score 0 with error "missing".
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import multiprocessing
import os
import queue
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

SCORE_KEYS = ("ifs", "vfs", "final", "low_level", "high_level")
BUNDLE_DIR = ".bundle"
STARTUP_GRACE_S = 60.0  # a worker's start (imports + Chromium launch) must fit in this
VIDEO_DRAIN_S = 120.0  # a stopping worker finishes its last video conversions within this
MAX_FAILED_STARTS = 3  # workers dying before their first task: the environment is broken, stop
STANDBY_TASKS = 1 << 20  # a job on standby starts as many workers as it may use: its task count is not known yet


# What a worker imports before its first task (:func:`_warm_up`); the server that forks workers holds it.
WORKER_MODULES = ("evaluator.runner", "evaluator.browser", "evaluator.dataset", "evaluator.replay",
                  "evaluator.agents.actions", "evaluator.agents.targeting", "evaluator.bundle",
                  "evaluator.judges.assertion", "evaluator.judges.reference", "evaluator.metrics.checkpoint",
                  "evaluator.metrics.ocr", "evaluator.metrics.reference", "evaluator.scoring",
                  "playwright.sync_api")


class JobError(ValueError):
    """The job's inputs cannot be used; the message is one line."""


class WorkerError(RuntimeError):
    """The evaluator itself cannot run here (workers fail to start); nothing was scored."""


@dataclass
class Job:
    """Everything a worker needs to replay tasks (sent to worker processes, so plain data)."""

    data_path: Path
    out_dir: Path
    protocol: str
    pages: dict[str, str]  # task key -> index.html path
    ocr_cache_dir: str | None = None
    record_video: bool = True
    limits_override: dict = field(default_factory=dict)
    # Protocol iwr-official: the judge relay's socket, the model ids and the visual models' settings
    # (evaluator.official.config; plain data, never a key).
    official: dict | None = None
    profile: bool = False  # ``score --profile``: each task writes OUT/tasks/<id>/profile.json


# --------------------------------------------------------------------------- entry point


def score(data_path, bundle_path, out_dir, task_keys=None, protocol: str = "iwr-det", workers: int | None = None,
          progress: Callable[[dict], None] | None = None, ocr_cache_dir=None, record_video: bool = True,
          limits: dict | None = None, official: dict | None = None, judge_stats=None,
          standby: Callable[[], dict | None] | None = None, profile: bool = False) -> dict | None:
    """Score ``bundle_path`` on the tasks of ``data_path``; write OUT/results.json and return it.

    Raises JobError (one line) when the inputs cannot be used. ``official``: the judge settings protocol
    iwr-official needs (see evaluator.official.config); ``judge_stats``: a callable giving the relay's
    counters, when the relay runs in this process.

    ``standby``: the job starts before its inputs exist (``score --standby``). The workers import the
    scoring stack and launch their browsers at once; then ``standby()`` blocks until the job is given and
    returns its inputs (``data``, ``bundle``, ``tasks``), or None when it never comes (None is returned).
    """
    from evaluator import __version__

    out_dir = Path(out_dir)
    proto = _protocol(protocol, configured=official is not None)
    official_job = official is not None
    _start_worker_server()
    warm = _Pool.standing(proto.full_name, _worker_count(workers, STANDBY_TASKS, official_job)) if standby else None
    try:
        if warm is not None:
            given = standby()
            if given is None:
                return None
            data_path, bundle_path, task_keys = given["data"], given["bundle"], given.get("tasks")
        started = time.monotonic()
        dataset, tasks = _tasks(Path(data_path), task_keys)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "progress.jsonl").write_text("")
        bundle = _bundle(Path(bundle_path), out_dir, tasks)
        job = Job(Path(data_path).resolve(), out_dir.resolve(), proto.full_name,
                  {k: str(p) for k, p in bundle.pages.items()}, str(ocr_cache_dir) if ocr_cache_dir else None,
                  record_video, dict(limits or {}), official, profile)
        workers = _worker_count(workers, len(tasks), official_job)
        results, engines = _run_all(job, tasks, workers, progress, warm)
    finally:
        if warm is not None:
            warm.stop_all()  # a no-op once the job's pool has stopped them
        shutil.rmtree(out_dir / BUNDLE_DIR, ignore_errors=True)
    ordered = {t.key: results[t.key] for t in tasks}
    # What scored: as the workers reported it, else (no worker ran) as this process finds it.
    document = {"protocol": proto.full_name, "evaluator_version": __version__,
                "ocr_engine": engines.get("ocr_engine") or _ocr_engine(),
                "browser": engines.get("browser") or _browser(),
                "tasks": ordered, "summary": _summary(ordered, tasks)}
    if official is not None:
        from evaluator.official.record import judge_record

        document["judge"] = judge_record(official, ordered, judge_stats() if judge_stats else None)
    _write_json(out_dir / "results.json", document)
    _write_json(out_dir / "job.json", _job_info(bundle, dataset, workers, started))
    return document


def check_protocol(name: str, configured: bool = False):
    """The protocol called ``name`` if this evaluator can score with it; JobError otherwise."""
    return _protocol(name, configured)


def _protocol(name: str, configured: bool = False):
    from evaluator.protocols import get_protocol

    try:
        proto = get_protocol(name)
    except ValueError as exc:
        raise JobError(str(exc)) from None
    if proto.requires_llm and not configured:
        raise JobError(f"protocol {proto.full_name} needs a judge endpoint: set --judge-base-url URL and "
                       f"--judge-model ID")
    return proto


def _tasks(data_path: Path, task_keys):
    from evaluator.dataset import DatasetError, load_dataset

    try:
        dataset = load_dataset(data_path)
    except DatasetError as exc:
        raise JobError(str(exc)) from None
    if not task_keys:
        return dataset, list(dataset.tasks)
    wanted = [str(k) for k in task_keys]
    unknown = [k for k in wanted if k not in set(dataset.keys)]
    if unknown:
        raise JobError(f"unknown task id(s) {', '.join(unknown)} in {data_path}")
    return dataset, [t for t in dataset.tasks if t.key in set(wanted)]


def _bundle(bundle_path: Path, out_dir: Path, tasks):
    from evaluator.bundle import BundleError, extract_bundle

    if not bundle_path.exists():
        raise JobError(f"bundle {bundle_path} does not exist")
    dest = out_dir / BUNDLE_DIR
    shutil.rmtree(dest, ignore_errors=True)
    try:
        return extract_bundle(bundle_path, dest, {t.key for t in tasks})
    except BundleError as exc:
        raise JobError(str(exc)) from None


def _worker_count(workers: int | None, n_tasks: int, official: bool = False) -> int:
    from evaluator.capacity import default_workers

    wanted = workers if workers and workers > 0 else default_workers(official=official)
    return max(1, min(wanted, n_tasks))


def _summary(results: dict, tasks) -> dict:
    from evaluator.scoring import summarize

    return summarize(results, tasks)


def _ocr_engine() -> str:
    """The OCR engine and its version (another version may read a few words differently)."""
    from evaluator.metrics.ocr import ocr_engine

    try:
        return ocr_engine()
    except Exception as exc:  # no engine: every checkpoint recorded its own error already
        return f"unavailable: {str(exc)[:200]}"


def _browser() -> str:
    """The browser that rendered the pages and its version (another one draws a few pixels differently)."""
    from evaluator.browser import BrowserError, browser_version

    try:
        return browser_version()
    except BrowserError as exc:  # no browser: every task recorded its own error already
        return f"unavailable: {exc}"


def _job_info(bundle, dataset, workers, started: float) -> dict:
    from evaluator.sandbox import ACTIVE_ENV

    layout = bundle.layout.as_dict() if bundle.layout else None
    return {"bundle": {"missing": bundle.missing, "unmatched": bundle.unmatched, "warnings": bundle.warnings,
                       "layout": layout},
            "numbering": dataset.numbering, "workers": workers, "sandbox": os.environ.get(ACTIVE_ENV) or "none",
            "elapsed_s": round(time.monotonic() - started, 2)}


# --------------------------------------------------------------------------- the pool


@dataclass
class _Slot:
    """One worker process and the task it is busy with."""

    process: multiprocessing.Process
    inbox: object
    task: str | None = None
    since: float = 0.0
    ready: bool = False


def _run_all(job: Job, tasks, n_workers: int, progress, warm: _Pool | None = None
             ) -> tuple[dict[str, dict], dict[str, str]]:
    """Run every task; missing pages are scored at once, the rest by worker processes.

    Returns the results and what the workers scored with (browser and OCR engine, as they
    reported them when ready; empty when no worker ran). ``warm``: the pool a job on standby started.
    """
    results: dict[str, dict] = {}
    engines: dict[str, str] = {}
    reporter = _Progress(job.out_dir, len(tasks), progress)
    todo = []
    for task in tasks:
        if task.key in job.pages:
            todo.append(task.key)
        else:
            results[task.key] = _finish(job, task.key, _missing(task), reporter)
    if todo:
        pool_results, engines = _pool(job, todo, n_workers, reporter, {t.key: t for t in tasks}, warm)
        results.update(pool_results)
    return results, engines


def _pool(job: Job, todo: list[str], n_workers: int, reporter, by_key: dict, warm: _Pool | None = None
          ) -> tuple[dict[str, dict], dict]:
    if warm is not None:
        pool = warm
        pool.begin(job, reporter, by_key, n_workers)
    else:
        ctx = worker_context()
        pool = _Pool(ctx, job, ctx.Queue(), reporter, by_key)
        pool.slots = [pool.start() for _ in range(n_workers)]
    # Longest tasks first: the run ends when its last task does, so long ones should not come last.
    pending = sorted(todo, key=lambda key: -len(by_key[key].actions))
    try:
        while len(pool.results) < len(todo):
            for slot in pool.slots:
                if slot.ready and slot.task is None and pending:
                    slot.task, slot.since = pending.pop(0), time.monotonic()
                    slot.inbox.put(slot.task)
            _collect(pool.outbox, pool, timeout=0.2)
            for i, slot in enumerate(pool.slots):
                reason = _broken(slot, pool.task_limit)
                if reason:
                    pool.replace(i, reason)
            if pool.failed_starts >= MAX_FAILED_STARTS:
                raise WorkerError(f"evaluator workers could not start: {pool.last_fatal or 'see the job log'}")
    finally:
        pool.stop_all()  # all at once: the workers wind down (videos, Chromium) in parallel
    return pool.results, pool.engines


class _Pool:
    """Worker bookkeeping: start, replace, give up after repeated start failures."""

    def __init__(self, ctx, job: Job | None, outbox, reporter, by_key: dict, protocol: str | None = None):
        self.ctx, self.job, self.outbox, self.reporter, self.by_key = ctx, job, outbox, reporter, by_key
        self.slots: list[_Slot] = []
        self.spare: list[_Slot] = []  # standing workers the job had no task for: stopping
        self.results: dict[str, dict] = {}
        self.failed_starts = 0
        self.last_fatal: str | None = None
        self.engines: dict[str, str] = {}  # browser and OCR engine, from the first worker ready
        self.protocol = job.protocol if job else protocol
        self.task_limit = _task_limit(job) if job else 0.0
        self._next = 0

    @classmethod
    def standing(cls, protocol: str, n_workers: int) -> _Pool:
        """Workers started before their job: each imports, launches its browser, then waits for the job."""
        ctx = worker_context()
        pool = cls(ctx, None, ctx.Queue(), None, {}, protocol)
        pool.slots = [pool.start() for _ in range(n_workers)]
        return pool

    def begin(self, job: Job, reporter, by_key: dict, n_workers: int) -> None:
        """Give the standing workers their job; those beyond ``n_workers`` (fewer tasks) are stopped."""
        self.job, self.reporter, self.by_key, self.task_limit = job, reporter, by_key, _task_limit(job)
        self.slots, self.spare = self.slots[:n_workers], self.slots[n_workers:]
        for slot in self.spare:
            _request_stop(slot)
        now = time.monotonic()
        for slot in self.slots:
            slot.inbox.put(job)
            slot.since = now  # the start-up grace counts from the job: the standby may have been long

    def stop_all(self) -> None:
        for slot in [*self.slots, *self.spare]:
            _request_stop(slot)
        for slot in [*self.slots, *self.spare]:
            _stop(slot, ask=False)
        self.slots, self.spare = [], []

    def start(self) -> _Slot:
        self._next += 1
        if self.job is None:  # standing: the worker knows its protocol only, and waits for the job
            return _start(self.ctx, None, self.outbox, self._next, self.protocol)
        return _start(self.ctx, self.job, self.outbox, self._next)

    def replace(self, i: int, reason: str) -> None:
        slot = self.slots[i]
        log.warning("worker %s: %s (task %s)", slot.process.name, reason, slot.task)
        self.failed_starts += 0 if slot.ready else 1
        _stop(slot)
        if slot.task is not None and slot.task not in self.results:
            self.fail(slot.task, reason)
        self.slots[i] = self.start()

    def fail(self, key: str, reason: str) -> None:
        self.results[key] = _finish(self.job, key, _failed(self.by_key[key], reason), self.reporter)


def worker_context():
    """How workers start: forked from one server process that imported the scoring stack once.

    A fresh interpreter per worker (``spawn``) imports NumPy, SciPy, Playwright and the judge again in every
    worker, about 0.8 CPU seconds each, four times per job at two workers per core. The server is a single
    thread started on first use (the ``forkserver`` method, safe beside this process's threads); each worker
    it forks starts with those modules loaded, and adopts the environment and directory of the moment it
    is started (:func:`_start`), as a spawned one would.
    """
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(WORKER_MODULES))
    return ctx


def _start_worker_server() -> None:
    """Start the server now: it imports the scoring stack while this process reads the tasks and takes in the
    bundle (a no-op once it runs)."""
    from multiprocessing import forkserver

    worker_context()
    forkserver.ensure_running()


def _start(ctx, job: Job | None, outbox, index: int, protocol: str | None = None) -> _Slot:
    inbox = ctx.Queue()
    process = ctx.Process(target=_worker_main,
                          args=(job, inbox, outbox, index, protocol, dict(os.environ), os.getcwd()),
                          name=f"iwr-worker-{index}", daemon=False)
    process.start()
    return _Slot(process, inbox, since=time.monotonic())


def _collect(outbox, pool: _Pool, timeout: float) -> None:
    """Handle one message from the workers: ready, fatal (cannot start) or a finished task."""
    try:
        kind, index, payload = outbox.get(timeout=timeout)
    except queue.Empty:
        return
    slot = next((s for s in pool.slots if s.process.name == f"iwr-worker-{index}"), None)
    if kind == "ready" and slot is not None:
        slot.ready = True
        pool.engines = pool.engines or dict(payload or {})
    elif kind == "fatal":
        pool.last_fatal = payload
    elif kind == "done":
        key, result = payload
        if key not in pool.results:
            pool.results[key] = _finish(pool.job, key, result, pool.reporter)
        if slot is not None and slot.task == key:
            slot.task = None


def _broken(slot: _Slot, task_limit: float) -> str | None:
    """Why a worker must be replaced, or None while it is healthy."""
    if not slot.process.is_alive():
        return "worker process died"
    if not slot.ready and time.monotonic() - slot.since > STARTUP_GRACE_S:
        return "worker did not start"
    if slot.task is not None and time.monotonic() - slot.since > task_limit:
        return "task time limit exceeded; worker killed"
    return None


def _request_stop(slot: _Slot) -> None:
    with contextlib.suppress(Exception):
        slot.inbox.put(None)


def _stop(slot: _Slot, ask: bool = True) -> None:
    """Ask a worker to stop; kill its whole process group (Chromium included) if it does not."""
    if ask:
        _request_stop(slot)
    # An idle worker may still be finishing replay videos; a busy one is killed at once.
    slot.process.join(timeout=0 if slot.task else VIDEO_DRAIN_S)
    if slot.process.is_alive() and slot.process.pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(slot.process.pid, signal.SIGKILL)
        slot.process.join(timeout=5)


def _limits(job: Job) -> dict:
    from evaluator.protocols import get_protocol

    return {**get_protocol(job.protocol).params.get("limits", {}), **job.limits_override}


def _task_limit(job: Job) -> float:
    limits = _limits(job)
    # The worker enforces the task limit itself; this is the backstop for a worker that cannot.
    return float(limits.get("task_timeout_s", 120)) + 3 * float(limits.get("kill_grace_s", 5)) + 30


def _finish(job: Job, key: str, result: dict, reporter) -> dict:
    task_dir = job.out_dir / "tasks" / key
    task_dir.mkdir(parents=True, exist_ok=True)
    for leftover in task_dir.glob(".video-*"):  # the recording folder of a worker killed mid-task
        shutil.rmtree(leftover, ignore_errors=True)
    _write_json(task_dir / "result.json", result)
    reporter.done(key, result)
    return result


def _missing(task) -> dict:
    from evaluator.replay import missing_result

    return missing_result(task)


def _failed(task, reason: str) -> dict:
    return {**_missing(task), "error": reason}


class _Progress:
    """Appends one line per finished task to OUT/progress.jsonl and calls the hook."""

    def __init__(self, out_dir: Path, total: int, hook):
        self.path = out_dir / "progress.jsonl"
        self.total = total
        self.count = 0
        self.hook = hook

    def done(self, key: str, result: dict) -> None:
        self.count += 1
        event = {"task": key, "done": self.count, "total": self.total, "error": result.get("error"),
                 **{k: result.get(k) for k in SCORE_KEYS}}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(event) + "\n")
        if self.hook is not None:
            self.hook(event)


def _write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- worker process


def _worker_main(job: Job | None, inbox, outbox, index: int, protocol: str | None = None,
                 environ: dict[str, str] | None = None, cwd: str | None = None) -> None:
    """A worker: one Chromium, a fresh context per task, relaunched if a hostile page killed it.

    Without ``job`` (a job on standby) it imports the scoring stack and launches its browser for
    ``protocol`` first, then takes the job as the first message of its inbox (None: stop).
    ``environ`` and ``cwd``: the starting process's, which a worker forked from the server adopts.
    """
    if environ is not None:
        os.environ.clear()
        os.environ.update(environ)
    if cwd is not None:
        os.chdir(cwd)
    os.setpgrp()  # the parent can kill this worker together with its Chromium
    _die_with_parent()
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    logging.basicConfig(level=logging.WARNING)
    from evaluator.browser import BrowserError, launch

    try:
        worker = _Worker(job) if job is not None else None
        if worker is None:
            from evaluator.protocols import get_protocol

            _warm_up()
            limits, ocr_engine = get_protocol(protocol).params.get("limits", {}), _ocr_engine()
        else:
            limits, ocr_engine = worker.limits, worker.ocr_engine
        while True:
            with launch(sandbox=True, heap_mb=limits.get("js_heap_mb")) as browser:
                outbox.put(("ready", index, {"browser": browser.description, "ocr_engine": ocr_engine}))
                if worker is None:
                    given = inbox.get()
                    if given is None:
                        break
                    worker = _Worker(given, ocr_engine)
                if not worker.serve(browser, inbox, outbox, index):
                    break
    except BrowserError as exc:  # the parent stops the job with this reason after repeated failures
        outbox.put(("fatal", index, str(exc)))
        raise SystemExit(3) from None
    _exit_quickly(outbox)


def _die_with_parent() -> None:
    """End this worker and its Chromium as soon as the process that started it is gone.

    A worker is forked from the server, not from the job, and leads a process group of its own, so
    nothing else ends it: a job killed outright (SIGKILL, the kernel's out-of-memory killer, a closed
    terminal under ``--sandbox none``) would leave it waiting on its inbox for ever with Chromium running.
    The starting process holds a pipe open for as long as it lives; its end, whatever killed it, wakes a
    thread here that kills this worker's group.
    """
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="iwr-parent-watch", daemon=True).start()


def _exit_quickly(outbox) -> None:
    """End a worker that stopped cleanly without tearing its interpreter down.

    Everything it owes is done by now: results sent, videos converted, Chromium closed and its
    files removed. What is left is unloading numpy, SciPy, Tesseract and Playwright's modules
    one by one, a sixth of a second the whole job would wait for at its very end.
    """
    outbox.close()
    outbox.join_thread()  # the last message is in the pipe, not in this process's buffer
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class _Worker:
    """State a worker keeps across tasks: dataset, protocol parameters, OCR cache."""

    def __init__(self, job: Job, ocr_engine: str | None = None):
        from evaluator.dataset import load_dataset
        from evaluator.metrics.ocr import OcrCache
        from evaluator.metrics.reference import KeptReferences
        from evaluator.protocols import get_protocol

        _warm_up()
        self.job = job
        self.dataset = load_dataset(job.data_path)
        self.params = get_protocol(job.protocol).params
        self.params["limits"] = _limits(job)
        self.limits = self.params["limits"]
        self.cache = OcrCache()  # generated screenshots: this worker's memory only
        self.reference_cache = OcrCache(directory=job.ocr_cache_dir) if job.ocr_cache_dir else None
        self.kept_references = KeptReferences(job.ocr_cache_dir) if job.ocr_cache_dir else None
        self.videos: list = []  # conversions still running while the next task replays
        self.official = None
        if job.official:
            from evaluator.official.judge import OfficialJudge

            self.official = OfficialJudge.from_settings(job.official)
        self.ocr_engine = "easyocr (official)" if self.official else ocr_engine or _ocr_engine()

    def serve(self, browser, inbox, outbox, index: int) -> bool:
        """Run tasks until told to stop (False) or the browser died (True: relaunch)."""
        from evaluator.replay import reap_video_conversions

        while True:
            key = inbox.get()
            if key is None:
                reap_video_conversions(self.videos, wait=True)
                return False
            result = self.run(browser, key)
            outbox.put(("done", index, (key, result)))
            reap_video_conversions(self.videos)
            if not browser.pw_browser.is_connected():
                return True

    def run(self, browser, key: str) -> dict:
        from evaluator.replay import Profile, TaskRun, replay_task

        task = self.dataset.task(key)
        run = TaskRun(task, Path(self.job.pages[key]), self.job.out_dir / "tasks" / key, self.params,
                      self.dataset.numbering, cache=self.cache, reference_cache=self.reference_cache,
                      kept_references=self.kept_references, record_video=self.job.record_video,
                      pending_videos=self.videos, official=self.official,
                      profile=Profile() if self.job.profile else None)
        if self.official is not None:
            self.official.start_task()
        try:
            result = replay_task(browser, run)
        except Exception as exc:  # a bug or broken input must cost this task only, not the run
            log.exception("task %s failed", key)
            from evaluator.outputs import strip_server_paths

            why = strip_server_paths(str(exc))  # shown to the submitter: a file by its name, not its server path
            return {**_missing(task), "error": f"internal error: {type(exc).__name__}: {why[:200]}"}
        if self.official is not None and self.official.error:
            from evaluator.official.record import incomplete

            return incomplete(result, self.official.error)
        return result


def _warm_up() -> None:
    """Import the scoring stack before the first task, so no task pays for it inside its limits (a worker
    forked from the server has it already: then this costs nothing)."""
    for name in WORKER_MODULES:
        importlib.import_module(name)

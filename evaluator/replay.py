"""Replay one task's actions on a generated page and score what happened.

The skeleton is the official judge's: open the page at the task's resolution, take
screenshot 0, then for each action in order find the element, perform the action, let the
page settle, advance the page clock one fixed step, settle, take a screenshot and judge the
action's assertion; stop at the first failed action or failed assertion. Visual
checkpoints are screenshot 0 and every flagged step reached, each scored against the
task's reference checkpoint.

Hostile pages are expected. Every browser call runs under a :class:`Watchdog` that kills
the page's renderers when an action outlives its limit or the renderers' memory passes
its limit (a stuck Playwright call then fails at once), and kills the whole browser if
even that does not free the worker. The step records why it ended.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.browser import Browser, rss_bytes
from evaluator.outputs import ABSOLUTE_PATH, strip_server_paths
from evaluator.page_session import JsonPage, SiteMap, page_session

log = logging.getLogger(__name__)

STEP_SHOT = "step_{k}.png"
REPLAY_VIDEO = "replay.mp4"
LOAD_STEP = "Load"
TARGETED = ("Click", "Type")
# Replay videos are for people watching, not for scoring: a long side of 960 px keeps the
# live encoding cheap (a quarter of the pixels of a 1920x1080 task).
VIDEO_LONG_SIDE = 960
# Evidence keys that would copy held-out ground truth (the assertion text) into results.
HELD_OUT_KEYS = ("assertion",)


# --------------------------------------------------------------------------- limits and watchdog


@dataclass(frozen=True)
class ReplayLimits:
    """Hard limits of one task (from the protocol's "limits" section)."""

    load_timeout_s: float = 15
    action_timeout_s: float = 10
    task_timeout_s: float = 120
    kill_grace_s: float = 5
    renderer_memory_mb: int = 2048

    @classmethod
    def from_params(cls, limits: dict) -> ReplayLimits:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in limits.items() if k in names})


class Watchdog:
    """Background thread that unblocks a worker stuck on a hostile page.

    ``guard(seconds)`` arms a deadline around browser work. Past the deadline (or when the
    renderers use too much memory) the page's renderers are killed, which makes the stuck
    Playwright call fail at once; if the call is still stuck ``kill_grace_s`` later, the
    whole browser is killed. ``tripped`` says what happened ("timeout", "memory").
    """

    def __init__(self, browser: Browser, limits: ReplayLimits, poll_s: float = 0.05):
        self.browser = browser
        self.limits = limits
        self.poll_s = poll_s
        self.tripped: str | None = None
        self.browser_killed = False
        self._deadline: float | None = None
        self._killed_at: float | None = None
        self._renderers: list[int] = []
        self._renderers_until = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="iwr-watchdog", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def guard(self, seconds: float):
        self.tripped, self._killed_at = None, None
        self._renderers_until = 0.0  # a new step may run in a new renderer: look it up again
        self._deadline = time.monotonic() + max(0.0, seconds)
        try:
            yield self
        finally:
            self._deadline = None

    @contextlib.contextmanager
    def paused(self):
        """Stop the clock while the page is not the one working (the official judge's calls, with the
        relay's retries and back-off): the deadline moves on by the time spent, so a slow or rate-limited
        endpoint never becomes the page's timeout. Outside a guard this does nothing."""
        deadline, began = self._deadline, time.monotonic()
        if deadline is None:
            yield
            return
        self._deadline = None
        try:
            yield
        finally:
            if self._deadline is None and self.tripped is None:
                self._deadline = deadline + (time.monotonic() - began)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        next_memory_check = 0.0
        while not self._stop.wait(self.poll_s):
            deadline, now = self._deadline, time.monotonic()
            if deadline is None:
                continue
            if self._killed_at is not None:
                if now - self._killed_at > self.limits.kill_grace_s and not self.browser_killed:
                    log.warning("browser did not recover from a killed page: killing the browser")
                    self.browser_killed = True
                    self.browser.kill()
                continue
            if now > deadline:
                self._trip("timeout")
            elif now >= next_memory_check:
                next_memory_check = now + 0.25
                if self._renderer_rss(now) > self.limits.renderer_memory_mb * 2**20:
                    self._trip("memory")

    def _renderer_rss(self, now: float) -> int:
        """Renderers' resident memory; the renderer list is looked up in /proc at most once a second."""
        if now >= self._renderers_until:
            self._renderers, self._renderers_until = self.browser.renderer_pids(), now + 1.0
        return sum(rss_bytes(pid) for pid in self._renderers)

    def _trip(self, reason: str) -> None:
        self.tripped = reason
        self._killed_at = time.monotonic()
        self.browser.kill_renderers()


# --------------------------------------------------------------------------- task run


@dataclass
class TaskRun:
    """What a replay needs besides the browser: the task, its page, where to write, how to score."""

    task: object  # evaluator.dataset Task
    page: Path | None  # the bundle's index.html for this task; None = missing
    out_dir: Path
    params: dict  # protocol params by section
    numbering: str = "after_action"
    seed: int = 0
    cache: object | None = None  # OcrCache shared by the checkpoints of a worker
    # OcrCache kept between runs (on disk) for the reference checkpoints only: they are the same for
    # every submission, while generated screenshots are not worth keeping beyond the worker.
    reference_cache: object | None = None
    # KeptReferences beside it: what the visual metrics derive from each reference checkpoint alone.
    kept_references: object | None = None
    record_video: bool = True
    ref_cache: dict = field(default_factory=dict)  # reference OCR text by checkpoint path
    # When a list is given, video conversions are left running and their handles appended here:
    # the caller finishes them later (finish_video_conversion) while the next task runs.
    pending_videos: list | None = None
    # Protocol iwr-official: the LLM judge (evaluator.official.judge.OfficialJudge) that grounds actions,
    # judges assertions and scores checkpoints where the deterministic parts do otherwise.
    official: object | None = None
    # ``score --profile``: wall time per phase of the replay, written to OUT/tasks/<id>/profile.json.
    profile: Profile | None = None


class Profile:
    """Where one task's replay spends its time, phase by phase (``score --profile``; bench/evaluator).

    Phases of the replay's own thread: ``load`` (navigation), ``search`` (element search), ``action``,
    ``settle`` (after the action: network and DOM quiet, the page clock), ``screenshot``, ``state`` (the
    page state the judge reads), ``judge`` (the assertion judge), ``visual_wait`` (waiting at the end for
    the checkpoints' scores); ``visual`` is the background thread's busy time scoring checkpoints, which
    overlaps the others. What no phase covers (a fresh context and page, logs, closing) is the task's
    elapsed time minus the phases of its own thread.
    """

    THREAD_PHASES = ("load", "search", "action", "settle", "screenshot", "state", "judge", "visual_wait")

    def __init__(self):
        self.ms: dict[str, float] = dict.fromkeys((*self.THREAD_PHASES, "visual"), 0.0)
        self.started = time.time()

    @contextlib.contextmanager
    def phase(self, name: str):
        begin = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] += (time.perf_counter() - begin) * 1000

    def write(self, out_dir: Path, key: str, steps: list[dict], elapsed_s: float) -> None:
        actions = sum(1 for step in steps[1:] if step.get("executed"))
        own = sum(self.ms[name] for name in self.THREAD_PHASES)
        document = {"task": key, "actions": actions, "started": self.started, "ended": time.time(),
                    "elapsed_ms": round(elapsed_s * 1000, 1),
                    "phases_ms": {**{k: round(v, 1) for k, v in self.ms.items()},
                                  "context_and_other": round(max(0.0, elapsed_s * 1000 - own), 1)}}
        (out_dir / "profile.json").write_text(json.dumps(document, indent=1))


def _phase(run: TaskRun, name: str):
    return run.profile.phase(name) if run.profile is not None else contextlib.nullcontext()


def replay_task(browser: Browser, run: TaskRun) -> dict:
    """Replay ``run.task`` on its page; write screenshots and logs into ``run.out_dir``; return its result."""
    started = time.monotonic()
    run.out_dir.mkdir(parents=True, exist_ok=True)
    if run.page is None:
        return missing_result(run.task)
    limits = ReplayLimits.from_params(run.params.get("limits", {}))
    watchdog = Watchdog(browser, limits)
    with Visuals(run) as visuals:
        try:
            steps, error, session = _drive(browser, run, limits, watchdog, started, visuals)
        finally:
            watchdog.close()
        _write_logs(run.out_dir, session)
        video = start_video_conversion(session.video_path, run.out_dir / REPLAY_VIDEO) if session else None
        result = _score(run, steps, error, visuals)
    if run.pending_videos is None:
        finish_video_conversion(video)
    elif video is not None:
        run.pending_videos.append(video)
    result["elapsed_s"] = round(time.monotonic() - started, 3)
    if run.profile is not None:
        run.profile.write(run.out_dir, run.task.key, result["steps"], result["elapsed_s"])
    return result


def video_size(width: int, height: int) -> tuple[int, int]:
    """Replay video frame size: the viewport scaled down to VIDEO_LONG_SIDE, even dimensions (H.264)."""
    scale = min(1.0, VIDEO_LONG_SIDE / max(width, height))
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def missing_result(task) -> dict:
    """A task whose page is not in the bundle: scored 0 over the fixed task set."""
    return {"ifs": 0.0, "vfs": 0.0, "final": 0.0, "low_level": 0.0, "high_level": 0.0,
            "steps_passed": 0, "steps_total": len(task.actions), "steps": [], "error": "missing"}


def _drive(browser: Browser, run: TaskRun, limits: ReplayLimits, watchdog: Watchdog, started: float, visuals):
    """Open the page, run the actions; returns (steps, error, session)."""
    from evaluator.bundle import read_page

    # The official post-processing (answer block, no iframes, asset placeholder) happens here.
    site = SiteMap.for_page(run.page, run.task.assets_dir, index_text=read_page(run.page))
    steps: list[dict] = []
    error = None
    session = None
    # The recording goes to a folder beside the artifacts, not to /tmp: inside the job sandbox
    # /tmp is its own file system, from which the finished video could not be renamed into place.
    with tempfile.TemporaryDirectory(prefix=".video-", dir=run.out_dir) as video_tmp:
        try:
            with page_session(browser, site, run.task.width, run.task.height,
                              video_dir=Path(video_tmp) if run.record_video else None, seed=run.seed,
                              settle_params=run.params.get("settle"), url=None,
                              video_size=video_size(run.task.width, run.task.height)) as session:
                # Playwright timeouts are the backstop: the watchdog ends hung actions first.
                session.context.set_default_timeout((limits.action_timeout_s + limits.kill_grace_s) * 1000)
                error = _run_steps(session, run, limits, watchdog, started, steps, visuals)
                _read_page_counts(session, watchdog, steps)
        except ReferenceUnreadable as exc:  # the assertion judge could not read the task set's checkpoint
            error = f"task data: {exc}"
            log.info("task %s ended early: %s", run.task.key, error)
        except Exception as exc:  # the page or browser broke outside a step: the task still gets a result
            error = error or _failure_reason(exc, watchdog, session)
            log.info("task %s ended early: %s", run.task.key, error)
        if session is not None and session.video_path:
            session.video_path = _keep(session.video_path, run.out_dir)
    return steps, error, session


def _read_page_counts(session, watchdog: Watchdog, steps: list[dict]) -> None:
    """The dialogs and window.open calls the page made (counted in the page), unless it is hung or gone."""
    if session.crashed or watchdog.tripped or any("imeout" in step.get("reason", "") for step in steps):
        return
    with contextlib.suppress(Exception), watchdog.guard(2):
        session.page_counts = session.counts()


def _keep(video: Path, out_dir: Path) -> Path | None:
    """Move the WebM out of the temporary folder before it is removed (copied across file systems)."""
    target = out_dir / "replay.webm"
    try:
        shutil.move(video, target)
    except OSError as exc:
        log.warning("replay video lost: %s", exc)
        return None
    return target


def _run_steps(session, run: TaskRun, limits: ReplayLimits, watchdog: Watchdog, started: float,
               steps: list[dict], visuals: Visuals) -> str | None:
    """Load + every action until the first failure.

    Returns the task's error, which is set only when the page could not be evaluated at all
    (it never loaded): an error makes the task count 0. A step that fails (not found, hung,
    crashed, assertion not met) keeps its reason in its own record and the task keeps the
    credit of the steps before it, like the official judge.
    """
    load = _load_step(session, run, limits, watchdog)
    steps.append(load)
    visuals.submit(load)
    if not load["passed"]:
        return f"load: {load['reason']}"
    state = load.pop("_state")
    for k, action in enumerate(run.task.actions, 1):
        remaining = limits.task_timeout_s - (time.monotonic() - started)
        if remaining <= 0:
            steps.append(_not_run(k, action, "task time limit reached"))
            return None
        step = _action_step(session, run, k, action, state, min(limits.action_timeout_s, remaining), watchdog)
        state = step.pop("_state", None)
        steps.append(step)
        visuals.submit(step)
        if not step["passed"]:
            return None
    return None


def _load_step(session, run: TaskRun, limits: ReplayLimits, watchdog: Watchdog) -> dict:
    step = {"index": 0, "type": LOAD_STEP, "executed": False, "reason": "", "passed": False,
            "screenshot": None, "flagged": True}
    begin = time.monotonic()
    try:
        # The watchdog fires first (and kills the hung renderer); Playwright's timeout is the backstop.
        with watchdog.guard(limits.load_timeout_s):
            with _phase(run, "load"):
                session.goto("/", timeout_ms=int((limits.load_timeout_s + limits.kill_grace_s) * 1000))
            with _phase(run, "screenshot"):
                step["screenshot"] = _shot(session, run.out_dir, 0)
            with _phase(run, "state"):
                step["_state"] = _capture(session, run.out_dir / STEP_SHOT.format(k=0), run.params)
            step["_blocks"] = step["_state"].blocks
        step.update(executed=True, passed=True, reason="loaded", startup_steps=session.startup_steps)
    except Exception as exc:  # no screenshot of a page that did not load: the task counts 0 anyway
        step["reason"] = _failure_reason(exc, watchdog, session)
    step["elapsed_ms"] = int((time.monotonic() - begin) * 1000)
    return step


def _action_step(session, run: TaskRun, k: int, action, before, seconds: float, watchdog: Watchdog) -> dict:
    """One action: target, perform, settle, clock, screenshot, state (under the watchdog), then judge.

    Only the browser work is under the watchdog: judging is our own code and cannot hang on
    the page, so a slow machine does not turn it into a page timeout.
    """
    from evaluator.agents.actions import perform
    from evaluator.agents.targeting import find_target

    step = _step_record(k, action)
    begin = time.monotonic()
    official = run.official
    reached = None
    try:
        if official is not None:  # a missing Type text or Press key, inferred by the judge (no page involved)
            official.pause_clock = watchdog.paused  # the judge's waiting is not the page's time
            action = official.complete_action(action, step)
        with watchdog.guard(seconds):
            if official is not None:
                target = official.find_target(session.page, action, step, run.task.width, run.task.height) \
                    if action.type in TARGETED else None
            else:
                with _phase(run, "search"):
                    target = find_target(JsonPage(session.page), action, run.params) \
                        if action.type in TARGETED else None
            step.update(_target_record(target))
            with _phase(run, "action"):
                rules = run.params.get("assertion") or {}
                if official is None and action.type == "Click" and action.logical_assertion \
                        and rules.get("acting_scroll"):
                    reached = _reach(session, target, rules.get("reached_states"))
                executed, reason = perform(session.page, action, target, run.params)
            step.update(executed=bool(executed) and not watchdog.tripped, reason=reason)
            if step["executed"]:
                _after_action(session, run, k, step)
    except Exception as exc:
        step["executed"] = False
        step["reason"] = _failure_reason(exc, watchdog, session)
    if watchdog.tripped or session.crashed:
        step["executed"] = False
        step["reason"] = _failure_reason(None, watchdog, session)
    if step["executed"] and action.logical_assertion:
        with _phase(run, "judge"):
            step["assertion"] = _judge(run, k, action, before, step["_state"], reached) if official is None else \
                _official_judge(run, k, action, step)
    elif step["executed"] and official is None and _ignored(run, k, action, before, step.get("_state")):
        step["reacted"] = False
        step["reason"] = f"{step['reason']}, but the page did not react: its text, DOM, form state and URL " \
                         "stayed the same where the reference's text changed"
    step["passed"] = bool(step["executed"]) and step.get("reacted", True) and \
        (step["assertion"] is None or step["assertion"]["passed"])
    step["elapsed_ms"] = int((time.monotonic() - begin) * 1000)
    return step


def _after_action(session, run: TaskRun, k: int, step: dict) -> None:
    with _phase(run, "settle"):
        settled = session.after_action() or {}
    if "layout_steps" in settled:  # iwr-det-3: how long the layout took to hold still (page-time steps)
        step["layout_steps"] = settled["layout_steps"]
    with _phase(run, "screenshot"):
        step["screenshot"] = _shot(session, run.out_dir, k)
    with _phase(run, "state"):
        after = _capture(session, run.out_dir / step["screenshot"], run.params)
    step["_state"] = after
    step["_blocks"] = after.blocks


def _reach(session, target, states: bool = False):
    """iwr-det-8 (``acting_scroll``): scroll the click's target into view as the click itself would, and when
    that moved the window, the view reached (screenshot, scroll, the target's box) for the judge. None when
    the target was in view already or the view could not be read (the click then scrolls as before).
    ``states`` (iwr-det-11, ``reached_states``): also the states of the named elements in that view."""
    from evaluator.judges.state import Reached, element_states

    handle = getattr(target, "handle", None)
    if handle is None:
        return None
    try:
        start = session.page.evaluate(WINDOW_SCROLL_JS)
        handle.scroll_into_view_if_needed(timeout=REACH_TIMEOUT_MS)
        now = session.page.evaluate(WINDOW_SCROLL_JS)
        if max(abs(a - b) for a, b in zip(start, now, strict=True)) <= 1:
            return None
        box = handle.bounding_box()
        if not box:
            return None
        shot = session.screenshot()
    except Exception:  # detached, hidden: the click reports what is wrong with its target
        return None
    return Reached(shot, (now[0], now[1]), (box["x"], box["y"], box["width"], box["height"]),
                   element_states(session.page) if states else None)


WINDOW_SCROLL_JS = "() => [scrollX, scrollY]"
REACH_TIMEOUT_MS = 2000


def _judge(run: TaskRun, k: int, action, before, after, reached=None) -> dict:
    from evaluator.judges.assertion import judge

    verdict = judge(action, before, after, _reference_delta(run, k), run.params, reached=reached)
    evidence = {key: value for key, value in (verdict.evidence or {}).items() if key not in HELD_OUT_KEYS}
    return {"passed": bool(verdict.passed), "reason": getattr(verdict, "reason", ""),
            "evidence": _jsonable(evidence)}


def _ignored(run: TaskRun, k: int, action, before, after) -> bool:
    """An action with no assertion that the page did not react to where the reference did (protocol
    parameter ``unasserted_reaction``; the reference's change is read only where the protocol asks)."""
    from evaluator.judges.assertion import reaction_missing
    from evaluator.judges.reference import checkpoint_pair, reference_text_delta

    if before is None or after is None or not (run.params.get("assertion") or {}).get("unasserted_reaction"):
        return False
    pair = checkpoint_pair(run.task, k, run.numbering)
    if pair is None or action.type == "Scroll":  # a Scroll is meant to change only what is in view
        return False
    with _phase(run, "judge"):
        return reaction_missing(action, before, after, reference_text_delta(run.task, pair[1], pair[0]), run.params)


def _official_judge(run: TaskRun, k: int, action, step: dict) -> dict:
    """The LLM judge's verdict on the screenshots before (step k-1, which passed) and after action k."""
    try:
        return run.official.judge_assertion(action.logical_assertion, run.out_dir / STEP_SHOT.format(k=k - 1),
                                            run.out_dir / step["screenshot"], step)
    except Exception as exc:  # no answer: the step fails here and the runner marks the task incomplete
        return {"passed": False, "reason": f"judge error: {str(exc)[:200]}", "evidence": {}}


def _reference_delta(run: TaskRun, k: int):
    """The reference's change at action k, mapped through the dataset's checkpoint numbering."""
    from evaluator.judges.reference import checkpoint_pair, reference_delta

    pair = checkpoint_pair(run.task, k, run.numbering)
    if pair is None:
        return None  # no reference checkpoint pair for this action: the judge uses the page alone
    kept = getattr(run.reference_cache, "directory", None)  # pixel changes are kept beside the reference OCR
    try:
        return reference_delta(run.task, pair[1], run.ref_cache, run.params, before_k=pair[0], cache_dir=kept)
    except (OSError, ValueError) as exc:  # MetricError included: a checkpoint of the task set is unreadable
        raise _unreadable(exc, f"of action {k}") from exc


def _step_record(k: int, action) -> dict:
    return {"index": k, "type": action.type, "flagged": bool(action.visual_evaluation_flag),
            "target": None, "runner_up": None, "ambiguous": False, "executed": False, "reason": "",
            "assertion": None, "passed": False, "screenshot": None}


def _not_run(k: int, action, reason: str) -> dict:
    return {**_step_record(k, action), "reason": reason, "elapsed_ms": 0}


def _target_record(target) -> dict:
    if target is None:
        return {}
    return {"target": _jsonable(getattr(target, "chosen", None)),
            "runner_up": _jsonable(getattr(target, "runner_up", None)),
            "ambiguous": bool(getattr(target, "ambiguous", False))}


def _capture(session, screenshot: Path, params: dict | None = None):
    """The page state the assertion judge compares (DOM text, blocks, focus, values, screenshot;
    the named elements' states when the protocol judges visible-state clauses on them)."""
    from evaluator.judges.state import capture_state

    rules = (params or {}).get("assertion") or {}
    return capture_state(JsonPage(session.page), screenshot=screenshot, element_states=bool(rules.get("element_state")),
                         covered_hidden=bool(rules.get("covered_text")))


def _shot(session, out_dir: Path, k: int) -> str:
    name = STEP_SHOT.format(k=k)
    session.screenshot(out_dir / name)
    return name


def _failure_reason(exc: BaseException | None, watchdog: Watchdog, session) -> str:
    """One line for a step or task that ended by an exception."""
    if watchdog.tripped == "timeout":
        return "timeout: the page did not respond within the limit (renderer killed)"
    if watchdog.tripped == "memory":
        return "memory: the page's renderer exceeded the memory limit (renderer killed)"
    if session is not None and session.crashed:
        return "crashed: the page's renderer crashed"
    text = strip_server_paths(str(exc or "")).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    if "Timeout" in type(exc).__name__ or "Timeout" in first:
        return f"timeout: {first[:200]}"
    return f"{type(exc).__name__}: {first[:200]}"


# --------------------------------------------------------------------------- scoring


def _score(run: TaskRun, steps: list[dict], error: str | None, visuals: Visuals) -> dict:
    from evaluator.scoring import task_score, zero_score

    passed = 0
    for step in steps[1:]:
        if not step["passed"]:
            break
        passed += 1
    with _phase(run, "visual_wait"):
        checkpoints = visuals.collect(steps)
    if visuals.reference_errors and not error:  # the task set's fault: the task is not scored, and says why
        error = f"task data: {visuals.reference_errors[0]}"
    scores = zero_score() if error else task_score(passed, len(run.task.actions), checkpoints)
    for step in steps:
        step.pop("_state", None)
        step.pop("_blocks", None)
    return {**{k: scores[k] for k in ("ifs", "vfs", "final", "low_level", "high_level")},
            "steps_passed": passed, "steps_total": len(run.task.actions), "steps": steps, "error": error}


class Visuals:
    """Scores visual checkpoints in a background thread while the browser goes on.

    Checkpoints are screenshot 0 and every flagged step reached, each against the task's
    reference checkpoint. OCR runs in a Tesseract subprocess, so it overlaps the browser's
    waiting (settle, clock) instead of adding to it.
    """

    def __init__(self, run: TaskRun):
        self.run = run
        self.futures: dict[int, Future] = {}
        self.reference_errors: list[str] = []  # reference checkpoints that could not be read
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="iwr-visual")

    def __enter__(self) -> Visuals:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, step: dict) -> None:
        if not _counts_visually(step):
            return
        ref = self.run.task.checkpoint_for_step(step["index"], self.run.numbering)
        if ref is None or not Path(ref).is_file():
            step["visual"] = {"skipped": "no reference checkpoint"}
            return
        gen = self.run.out_dir / step["screenshot"]
        self.futures[step["index"]] = self.pool.submit(self._timed, Path(ref), gen, step.get("_blocks"))

    def _timed(self, ref: Path, gen: Path, blocks: list | None) -> dict:
        with _phase(self.run, "visual"):
            return _score_one(self.run, ref, gen, blocks)

    def collect(self, steps: list[dict]) -> list[dict]:
        """Scores of the checkpoints that still count, in step order (failures recorded, not raised)."""
        checkpoints = []
        for step in steps:
            future = self.futures.get(step["index"])
            if future is None or not _counts_visually(step):
                continue
            try:
                scores = future.result()
            except ReferenceUnreadable as exc:  # no score can be given against a reference nobody can read
                step["visual"] = {"error": str(exc)}
                self.reference_errors.append(str(exc))
                scores = {"low_level": 0.0, "high_level": 0.0}
            except Exception as exc:  # an unreadable screenshot costs this checkpoint, not the task
                step["visual"] = {"error": f"{type(exc).__name__}: {strip_server_paths(str(exc))[:200]}"}
                scores = {"low_level": 0.0, "high_level": 0.0}
            else:
                step["visual"] = _jsonable(scores)
            checkpoints.append(scores)
        return checkpoints


class ReferenceUnreadable(RuntimeError):
    """A reference checkpoint of the task set could not be read (a broken or truncated file)."""


def _unreadable(exc: BaseException, fallback: str) -> ReferenceUnreadable:
    """The checkpoint named by the file the error names (else ``fallback``), never by its path on the server."""
    why = (str(exc).splitlines() or [type(exc).__name__])[0]
    named = ABSOLUTE_PATH.search(why)
    name = named.group(0).rstrip("/").rpartition("/")[2] if named else fallback
    return ReferenceUnreadable(f"the reference checkpoint {name} could not be read ({strip_server_paths(why)[:200]})")


def _counts_visually(step: dict) -> bool:
    return bool(step.get("flagged") and step.get("screenshot") and (step["index"] == 0 or step["executed"]))


def _score_one(run: TaskRun, ref: Path, gen: Path, gen_blocks: list | None) -> dict:
    if run.official is not None:
        return run.official.score_checkpoint(ref, gen)
    from evaluator.metrics.checkpoint import score_checkpoint

    ref_blocks = _reference_blocks(run.task, ref)
    use_blocks = ref_blocks is not None and gen_blocks is not None
    try:
        reference = _reference(run, ref)  # kept, or decoded once for the kept cache's reading and every metric
    except Exception as exc:  # noqa: BLE001 - whatever the decoder says, the reference is unusable
        raise _unreadable(exc, ref.name) from exc
    scores = score_checkpoint(reference, gen, reference.settings, ref_blocks=ref_blocks if use_blocks else None,
                              gen_blocks=gen_blocks if use_blocks else None, cache=_ocr_cache(run, reference))
    reference.keep()  # what it derived, where the folder may be written (never by a sandboxed job)
    return scores


def _reference(run: TaskRun, path: Path):
    """The reference checkpoint for the visual metrics: what they derive from it alone read from the kept folder
    when it is there, else the picture decoded now."""
    from evaluator.metrics import load_image, visual_params
    from evaluator.metrics.reference import Reference

    settings = visual_params(run.params.get("visual"))
    if run.kept_references is not None:
        return run.kept_references.open(path, settings)
    return Reference(load_image(path), settings)


def _ocr_cache(run: TaskRun, ref):
    """The cache a checkpoint is scored with: the reference read through the kept cache, the rest in memory."""
    if run.reference_cache is None:
        return run.cache
    from evaluator.metrics.ocr import OcrCache, ocr_page

    if not ref.was_kept:  # a kept reference brings its text and blocks
        ocr_page(ref.image, ref.settings, run.reference_cache)  # OCR'd once per task set
    return ReferenceFirstCache(run.cache if run.cache is not None else OcrCache(), run.reference_cache)


class ReferenceFirstCache:
    """OCR results in ``memory``, falling back to ``reference`` (read only): generated pictures are never kept.

    A generated screenshot identical to its reference checkpoint finds the reference's reading.
    """

    def __init__(self, memory, reference):
        self.memory, self.reference = memory, reference

    def get(self, key: str):
        hit = self.memory.get(key)
        return hit if hit is not None else self.reference.get(key)

    def put(self, key: str, result) -> None:
        self.memory.put(key, result)


def _reference_blocks(task, checkpoint: Path) -> list | None:
    """Text blocks of the reference checkpoint when the task was authored with them (DOM, not OCR)."""
    try:
        number = int(checkpoint.stem.rsplit("_", 1)[1])
        reference = task.load_reference(number)
    except (ValueError, IndexError, AttributeError):
        return None
    blocks = reference.get("blocks") if isinstance(reference, dict) else None
    return blocks if isinstance(blocks, list) else None


# --------------------------------------------------------------------------- artifacts


def _write_logs(out_dir: Path, session) -> None:
    console = session.console_errors if session is not None else []
    blocked = session.blocked if session is not None else []
    counts = {} if session is None else {**session.page_counts, "dialogs": session.dialogs,
                                         "popups": session.popups, "downloads": session.downloads,
                                         "websockets": session.websockets, "not_found": session.not_found,
                                         "crashed": session.crashed}
    (out_dir / "console.json").write_text(json.dumps({"errors": console, "events": counts}, indent=1))
    (out_dir / "blocked.json").write_text(json.dumps(blocked, indent=1))


def start_video_conversion(webm: Path | None, mp4: Path):
    """Start converting Playwright's WebM to MP4/H.264 (plays in every browser); returns a handle."""
    if webm is None or not Path(webm).is_file():
        return None
    # nice: the conversion yields the CPU to the browser work of the next task. 10 frames per
    # second show every UI change a person follows and halve the encoding cost of 25.
    cmd = ["nice", "-n", "10", "ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", str(webm), "-r", "10",
           "-c:v", "libx264", "-preset", "veryfast", "-crf", "30", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
           "-threads", "1", "-an", str(mp4)]
    try:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), Path(webm)
    except OSError as exc:
        log.warning("video conversion failed: %s", exc)
        return None


def finish_video_conversion(handle, timeout_s: float = 300) -> bool:
    """Wait for the conversion; the WebM is removed once the MP4 exists."""
    if handle is None:
        return False
    proc, webm = handle
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        log.warning("video conversion timed out")
        return False
    if proc.returncode != 0:
        log.warning("video conversion failed: %s", err.decode(errors="replace")[-300:])
        return False
    webm.unlink(missing_ok=True)
    return True


def reap_video_conversions(handles: list, wait: bool = False) -> None:
    """Finish the conversions in ``handles`` that are done (all of them with ``wait``); removes them."""
    for handle in list(handles):
        if wait or handle[0].poll() is not None:
            finish_video_conversion(handle)
            handles.remove(handle)


def convert_video(webm: Path, mp4: Path) -> bool:
    """WebM to MP4 in one call."""
    return finish_video_conversion(start_video_conversion(webm, mp4))


def _jsonable(value):
    """Plain JSON data (dataclasses, tuples, numpy scalars and paths turned into basic types)."""
    return json.loads(json.dumps(value, default=_default))


def _default(value):
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, set | frozenset):
        return sorted(value)
    return str(value)

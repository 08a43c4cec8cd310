"""Hostile pages (tests/evaluator/hostile/*.html) end within their limits, and the run goes on normally.

One scoring run holds every hostile page plus normal tasks placed after them, on two
workers with small limits: each hostile task must end in time with a recorded reason, the
workers must survive, and the normal tasks must score exactly as in a run of their own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from evaluator.runner import score
from tests.evaluator.test_replay import GOOD_PAGE
from tests.evaluator.test_runner import make_bundle, make_task_set, scores_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = Path(__file__).resolve().parent / "hostile"
LIMITS = {"load_timeout_s": 4, "action_timeout_s": 4, "task_timeout_s": 25, "kill_grace_s": 2,
          "renderer_memory_mb": 700, "js_heap_mb": 256}
ACTIONS = [
    {"type": "Click", "parameters": {"description": "Click the 'Start' button"},
     "visual_evaluation_flag": True, "logical_assertion": "The heading shows 'Started'"},
]
# Pages whose hostility must be contained while the page itself keeps working.
STILL_WORKS = ("dialog_storm", "popup_storm", "beacons", "service_worker", "download", "beforeunload_trap")
# Pages whose action can only end by the watchdog, a crash or a timeout.
HANGS_OR_DIES = {"loop_on_click": ("timeout", "click failed"), "dialog_loop": ("timeout", "click failed"),
                 "memory_bomb": ("crashed", "memory", "timeout", "click failed"),
                 "renderer_crash": ("crashed", "memory", "timeout", "click failed")}
NORMAL_KEYS = ("normal_a", "normal_b")


def hostile_pages() -> dict[str, str]:
    return {path.stem: path.read_text() for path in sorted(HOSTILE.glob("*.html"))}


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    pages = hostile_pages()
    keys = ["normal_a", *pages, "normal_b"]
    data = make_task_set(root / "set", keys, ACTIONS)
    bundle = make_bundle(root / "bundle", {**pages, "normal_a": GOOD_PAGE, "normal_b": GOOD_PAGE})
    begin = time.monotonic()
    results = score(data, bundle, root / "out", workers=2, limits=LIMITS, record_video=False)
    elapsed = time.monotonic() - begin
    alone = score(data, bundle, root / "alone", task_keys=["normal_a"], workers=1, limits=LIMITS,
                  record_video=False)
    return {"results": results, "out": root / "out", "elapsed": elapsed, "alone": alone, "pages": pages}


def first_failure(task: dict) -> dict | None:
    return next((s for s in task["steps"] if not s["passed"]), None)


def test_the_corpus_covers_the_known_attacks(hostile_run):
    """At least twelve hostile pages, including every kind the evaluator must survive."""
    names = set(hostile_run["pages"])
    assert len(names) >= 12
    assert set(STILL_WORKS) | set(HANGS_OR_DIES) | {"loop_at_load", "huge_dom", "external_navigation",
                                                    "navigate_at_load"} <= names


def test_every_hostile_task_ends_within_its_limit_with_a_reason(hostile_run):
    """No task outlives the task limit; a task that did not pass says why (error or failed step)."""
    for key in hostile_run["pages"]:
        task = hostile_run["results"]["tasks"][key]
        assert task["elapsed_s"] <= LIMITS["task_timeout_s"] + 10, key
        failed = first_failure(task)
        assert task["error"] or failed is None or failed["reason"], key
    assert hostile_run["elapsed"] < 240


def test_pages_that_hang_or_explode_fail_their_step_with_the_cause(hostile_run):
    """Infinite loops, dialog loops and memory bombs end their step with a timeout, crash or memory reason."""
    tasks = hostile_run["results"]["tasks"]
    for key, causes in HANGS_OR_DIES.items():
        step = tasks[key]["steps"][1]
        assert step["passed"] is False and step["reason"].startswith(causes), (key, step["reason"])
    assert tasks["loop_at_load"]["error"].startswith("load: timeout")
    # A page that never stops changing gets bounded settles: it passes, or (on a slow machine) times out.
    settles = tasks["never_settles"]
    assert settles["ifs"] == 1.0 or first_failure(settles)["reason"].startswith("timeout")
    huge = tasks["huge_dom"]  # slow to build and lay out: passes, or its load ends at a limit with the cause
    assert huge["error"] is None or huge["error"].startswith(("load: timeout", "load: memory", "load: crashed"))


def test_contained_pages_keep_working_and_their_attempts_are_recorded(hostile_run):
    """Dialogs, popups, beacons, service workers, downloads and unload traps do not stop the page."""
    tasks, out = hostile_run["results"]["tasks"], hostile_run["out"]
    for key in STILL_WORKS:
        assert tasks[key]["ifs"] == 1.0, (key, first_failure(tasks[key]))
    blocked = {key: json.loads((out / "tasks" / key / "blocked.json").read_text()) for key in hostile_run["pages"]}
    kinds = {b["type"] for b in blocked["beacons"]}
    assert {"fetch", "xhr", "image", "websocket", "script", "stylesheet"} <= kinds, kinds
    assert any("example.com" in b["url"] for b in blocked["external_navigation"])
    assert any("phish.example" in b["url"] for b in blocked["navigate_at_load"])
    events = {key: json.loads((out / "tasks" / key / "console.json").read_text())["events"]
              for key in ("popup_storm", "download", "dialog_storm")}
    assert events["popup_storm"]["popups"] >= 1 and events["popup_storm"]["open"] == 250
    assert events["download"]["downloads"] >= 1
    assert (events["dialog_storm"]["alert"], events["dialog_storm"]["prompt"]) == (400, 300)


def test_normal_tasks_after_hostile_ones_score_as_they_do_alone(hostile_run):
    """The workers survive: normal tasks before and after the hostile pages score exactly as alone."""
    tasks = scores_of(hostile_run["results"])
    alone = scores_of(hostile_run["alone"])["normal_a"]
    for key in NORMAL_KEYS:
        assert tasks[key] == alone and tasks[key]["ifs"] == 1.0, key

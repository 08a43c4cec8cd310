"""Replaying one task: steps in order, stop at the first failure, per-step records, artifacts, limits."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from PIL import Image

from evaluator.dataset import load_dataset
from evaluator.protocols import get_protocol
from evaluator.replay import TaskRun, replay_task
from tests.evaluator.fixtures.dataset_builder import build_dataset, record

pytestmark = pytest.mark.browser

ASSERTION = "The heading shows 'Started'"
ACTIONS = [
    {"type": "Click", "parameters": {"description": "Click the 'Start' button"},
     "visual_evaluation_flag": True, "logical_assertion": ASSERTION},
    {"type": "Type", "parameters": {"description": "Type 'milk' into the Name field", "text": "milk"},
     "visual_evaluation_flag": False, "logical_assertion": None},
    {"type": "Scroll", "parameters": {"description": "Scroll down the page", "direction": "down"},
     "visual_evaluation_flag": True, "logical_assertion": None},
]
GOOD_PAGE = """<!doctype html><html><body style="height: 3000px; font-family: sans-serif">
<h1 id="status">Ready</h1>
<button class="btn" id="start"
  onclick="setTimeout(() => document.getElementById('status').textContent = 'Started', 300)">Start</button>
<input name="name" placeholder="Name"></body></html>"""


def task_record(task_id: str) -> dict:
    return record(task_id, action_sequence=ACTIONS, recording_details={"resolution": "640x400",
                                                                       "environment": "desktop"})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("replay-set")
    return load_dataset(build_dataset(root, [task_record("t1")]))


def replay(browser, dataset, tmp_path: Path, html: str | None, limits: dict | None = None, video=False) -> dict:
    params = get_protocol().params
    params["limits"].update(limits or {})
    page = None
    if html is not None:
        page = tmp_path / "bundle" / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html)
    run = TaskRun(dataset.task("t1"), page, tmp_path / "out", params, dataset.numbering, record_video=video)
    return replay_task(browser, run)


def test_it_passes_every_step_of_a_page_that_does_the_task(browser, dataset, tmp_path: Path):
    """A faithful page passes all actions; every step says what it clicked and where its screenshot is."""
    result = replay(browser, dataset, tmp_path, GOOD_PAGE, video=True)
    out = tmp_path / "out"
    assert result["error"] is None and result["ifs"] == 1.0
    assert (result["steps_passed"], result["steps_total"]) == (3, 3)
    steps = result["steps"]
    assert [s["index"] for s in steps] == [0, 1, 2, 3] and all(s["passed"] for s in steps)
    assert steps[1]["target"]["tag"] == "button" and "Start" in steps[1]["target"]["text"]
    assert steps[1]["assertion"]["passed"] is True
    assert [s["screenshot"] for s in steps] == ["step_0.png", "step_1.png", "step_2.png", "step_3.png"]
    assert all((out / s["screenshot"]).is_file() for s in steps)
    assert {"ocr", "global", "low_level", "high_level"} <= set(steps[0]["visual"])
    assert steps[2].get("visual") is None  # unflagged: no visual checkpoint
    assert (out / "replay.mp4").stat().st_size > 0 and not (out / "replay.webm").exists()
    assert json.loads((out / "blocked.json").read_text()) == []
    assert "errors" in json.loads((out / "console.json").read_text())


def test_it_keeps_only_reference_ocr_between_runs(browser, dataset, tmp_path: Path, monkeypatch):
    """With a kept reference cache the reference checkpoints are read once and stored, generated screenshots
    never are; a later run reads only its own screenshots and scores the same."""
    from evaluator.metrics import image_key, ocr
    from evaluator.metrics.ocr import OcrCache

    read = []
    real = ocr._run_tesseract
    monkeypatch.setattr(ocr, "_run_tesseract", lambda image, *config: read.append(image_key(image)) or
                        real(image, *config))
    reference = image_key(Image.open(dataset.task("t1").checkpoint_path(0)).convert("RGB"))
    kept = tmp_path / "ocr-cache"
    results = []
    for run in range(2):
        page = tmp_path / "bundle" / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(GOOD_PAGE)
        task_run = TaskRun(dataset.task("t1"), page, tmp_path / f"out{run}", get_protocol().params, dataset.numbering,
                           cache=OcrCache(), reference_cache=OcrCache(directory=kept), record_video=False)
        read.clear()
        results.append(replay_task(browser, task_run))
        stored = sorted(path.name.split("-")[0] for path in kept.iterdir())
        assert stored == [reference], stored  # every checkpoint of this task set is the same picture
        assert (reference in read) == (run == 0) and len(set(read) - {reference}) >= 2, read
    assert [r["vfs"] for r in results] == [results[0]["vfs"]] * 2
    assert results[0]["steps"][0]["visual"] == results[1]["steps"][0]["visual"]


def test_it_keeps_held_out_text_out_of_the_result(browser, dataset, tmp_path: Path):
    """Neither the assertion nor the action descriptions are copied into the result."""
    text = json.dumps(replay(browser, dataset, tmp_path, GOOD_PAGE))
    assert ASSERTION not in text and "Click the 'Start' button" not in text


def test_it_serves_a_raw_model_answer_after_official_post_processing(browser, dataset, tmp_path: Path):
    """A fenced answer is unwrapped, its iframes stripped and the asset placeholder served from the assets."""
    answer = ("Here is the page:\n```html\n" + GOOD_PAGE.replace(
        "<input", '<iframe src="https://evil.example/"></iframe>'
                  '<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png" width="8" height="8"><input')
        + "\n```\nHope this helps.")
    result = replay(browser, dataset, tmp_path, answer)
    blocked = json.loads((tmp_path / "out" / "blocked.json").read_text())
    events = json.loads((tmp_path / "out" / "console.json").read_text())["events"]
    assert result["ifs"] == 1.0 and blocked == [] and events["not_found"] == []


def test_it_stops_at_the_first_action_that_finds_no_element(browser, dataset, tmp_path: Path):
    """Without a Start button the click fails, the run stops there and IFS is 0."""
    result = replay(browser, dataset, tmp_path, "<h1>Ready</h1><p>No buttons here.</p>")
    assert result["error"] is None and result["ifs"] == 0.0 and result["steps_passed"] == 0
    assert [s["index"] for s in result["steps"]] == [0, 1]
    failed = result["steps"][1]
    assert failed["executed"] is False and failed["passed"] is False and failed["reason"]


def test_it_stops_when_an_assertion_does_not_hold(browser, dataset, tmp_path: Path):
    """A Start button that changes nothing executes, fails its assertion and ends the run."""
    html = '<h1 id="status">Ready</h1><button class="btn">Start</button><input placeholder="Name">'
    result = replay(browser, dataset, tmp_path, html)
    step = result["steps"][1]
    assert step["executed"] is True and step["assertion"]["passed"] is False and step["passed"] is False
    assert len(result["steps"]) == 2 and result["steps_passed"] == 0


def test_it_ends_a_hung_action_within_its_limit(browser, dataset, tmp_path: Path):
    """A click handler that never returns fails its step as a timeout, well within the limits."""
    html = '<h1>Ready</h1><button class="btn" onclick="while (true) {}">Start</button>'
    begin = time.monotonic()
    result = replay(browser, dataset, tmp_path, html, {"action_timeout_s": 2, "kill_grace_s": 2})
    assert time.monotonic() - begin < 2 + 2 + 10
    step = result["steps"][1]
    assert step["passed"] is False and "timeout" in step["reason"].lower()


def test_it_records_a_page_that_never_loads_as_an_error(browser, dataset, tmp_path: Path):
    """A script looping at load makes the task an error (counts 0) with the reason."""
    result = replay(browser, dataset, tmp_path, "<script>while (true) {}</script>",
                    {"load_timeout_s": 2, "kill_grace_s": 2})
    assert result["error"].startswith("load: timeout") and result["final"] == 0.0


def test_it_scores_a_missing_page_zero(browser, dataset, tmp_path: Path):
    """No page in the bundle: zero scores, error 'missing', all steps counted."""
    result = replay(browser, dataset, tmp_path, None)
    assert result["error"] == "missing" and result["final"] == 0.0 and result["steps_total"] == 3


def test_an_unreadable_reference_checkpoint_is_a_task_error_that_names_it(browser, tmp_path: Path):
    """A broken checkpoint of the task set is not a page scoring 0 in silence: the task says which file."""
    data = build_dataset(tmp_path / "set", [task_record("t1")])
    broken = data.parent / "data" / "t1" / "checkpoints" / "step_3.png"  # the scroll: no assertion reads it
    assert broken.is_file()
    broken.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    broken_set = load_dataset(data)
    run = TaskRun(broken_set.task("t1"), _page(tmp_path, GOOD_PAGE), tmp_path / "out", get_protocol().params,
                  broken_set.numbering, record_video=False)
    result = replay_task(browser, run)
    assert result["error"] is not None and result["error"].startswith("task data: the reference checkpoint step_3.png")
    assert "could not be read" in result["error"] and str(tmp_path) not in result["error"]
    assert result["final"] == 0.0 and result["steps_total"] == 3
    assert [s["index"] for s in result["steps"] if "error" in (s.get("visual") or {})] == [3]  # only that one


def test_an_unreadable_reference_checkpoint_of_an_assertion_names_it_without_a_server_path(browser, tmp_path: Path):
    """The assertion judge reads the reference checkpoints of step 1 too: a broken one is the task set's
    fault, said with the file's name in the task, and no absolute path reaches the task's result."""
    data = build_dataset(tmp_path / "set", [task_record("t1")])
    broken = data.parent / "data" / "t1" / "checkpoints" / "step_1.png"  # the Click, with an assertion
    broken.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    broken_set = load_dataset(data)
    run = TaskRun(broken_set.task("t1"), _page(tmp_path, GOOD_PAGE), tmp_path / "out", get_protocol().params,
                  broken_set.numbering, record_video=False)
    result = replay_task(browser, run)
    assert result["error"].startswith("task data: the reference checkpoint step_1.png could not be read"), result
    assert str(tmp_path) not in json.dumps(result) and "/step_1.png" not in json.dumps(result)
    assert result["final"] == 0.0


def _page(tmp_path: Path, html: str) -> Path:
    page = tmp_path / "bundle" / "index.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(html)
    return page

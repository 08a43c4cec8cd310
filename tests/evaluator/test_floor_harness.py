"""The speed benchmark's floor harness (bench/evaluator/floor.py): an action it cannot carry out stops that task,
says where, and leaves the other tasks and the run alone (one failed click used to end the whole benchmark)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.evaluator.pages import PAGES_DIR

FLOOR = Path(__file__).resolve().parents[2] / "bench" / "evaluator" / "floor.py"


def _floor():
    spec = importlib.util.spec_from_file_location("floor_harness", FLOOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _job(tmp_path: Path, actions: list[dict], selectors: list) -> dict:
    return {"key": "short", "page": str(PAGES_DIR / "short.html"), "assets": None, "width": 400, "height": 300,
            "actions": actions, "selectors": selectors, "shots": str(tmp_path / "shots")}


@pytest.mark.browser
def test_an_action_the_page_refuses_stops_the_task_and_says_where(browser, tmp_path):
    floor = _floor()
    scroll = {"type": "Scroll", "text": None, "key": None}
    typed = {"type": "Type", "text": "hello", "key": None}  # into a paragraph: refused at once
    result = floor.replay(browser, _job(tmp_path, [scroll, typed, scroll], [None, "p", None]))
    assert result["actions_run"] == 1
    assert result["failed"].startswith("action 2: ")
    assert (tmp_path / "shots" / "step_1.png").exists() and not (tmp_path / "shots" / "step_2.png").exists()


@pytest.mark.browser
def test_a_task_whose_actions_all_run_reports_no_failure(browser, tmp_path):
    floor = _floor()
    scroll = {"type": "Scroll", "text": None, "key": None}
    result = floor.replay(browser, _job(tmp_path, [scroll, scroll], [None, None]))
    assert result["actions_run"] == 2 and "failed" not in result

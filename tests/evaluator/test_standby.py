"""``score --standby FOLDER``: a job started before its inputs exist scores exactly as a cold start does,
refuses bad job lines with one clear line, and ends quietly when no job comes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.evaluator.standby_support import reference_job_folder, timeless_results

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev"
TASKS = "2048-first-moves,todomvc-vanillajs-list"


def evaluator(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evaluator", "score", *args], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.fixture
def folder(tmp_path) -> Path:
    """A standby folder holding a copy of the sample's dev split and its reference pages as a bundle."""
    if not (SAMPLE / "data.jsonl").is_file():
        pytest.skip("the sample benchmark is not built (scripts/setup.sh builds it)")
    root = reference_job_folder(tmp_path / "standby", TASKS.split(","))
    (root / "out").mkdir()
    return root


def job_line(folder: Path, **changes) -> str:
    return json.dumps({"data": str(folder / "dev" / "data.jsonl"), "bundle": str(folder / "bundle"),
                       "tasks": TASKS, **changes}) + "\n"


@pytest.mark.slow
@pytest.mark.browser
def test_a_job_on_standby_scores_exactly_as_a_cold_start(folder, tmp_path):
    cold = subprocess.run([sys.executable, "-m", "evaluator", "score", "--data", str(folder / "dev" / "data.jsonl"),
                           "--bundle", str(folder / "bundle"), "--tasks", TASKS, "--out", str(tmp_path / "cold"),
                           "--no-video", "--workers", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert cold.returncode == 0, cold.stderr[-2000:]
    waiting = evaluator("--standby", str(folder), "--out", str(folder / "out"), "--no-video", "--workers", "2")
    time.sleep(3)  # part of its start-up is over; the job must not care how much
    assert waiting.poll() is None, waiting.stderr.read()
    out, err = waiting.communicate(job_line(folder), timeout=600)
    assert waiting.returncode == 0, err[-2000:]
    assert "job given to the evaluator on standby after" in err
    assert timeless_results(folder / "out") == timeless_results(tmp_path / "cold")
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["n_tasks"] == 2 and summary["ifs"] == 1.0


@pytest.mark.browser
def test_a_standby_that_gets_no_job_ends_quietly_and_writes_nothing(folder):
    waiting = evaluator("--standby", str(folder), "--out", str(folder / "out"), "--no-video", "--workers", "1")
    _out, err = waiting.communicate("", timeout=120)
    assert waiting.returncode == 0, err[-2000:]
    assert "standby ended: no job was given" in err
    assert list((folder / "out").iterdir()) == []


@pytest.mark.browser
@pytest.mark.parametrize(("line", "said"), [
    ("not json\n", "the job line is not JSON"),
    ('{"data": 3}\n', 'must be an object with "data" and "bundle" paths'),
    ("outside", "is outside the standby folder"),
    ("unknown-task", "unknown task id(s) no-such-task"),
    ("tasks-list", '"tasks" must be a comma-separated string'),
])
def test_a_bad_job_line_is_refused_with_one_line_and_nothing_scored(folder, tmp_path, line, said):
    if line == "outside":
        line = job_line(folder, data=str(SAMPLE / "data.jsonl"))
    elif line == "unknown-task":
        line = job_line(folder, tasks="no-such-task")
    elif line == "tasks-list":
        line = job_line(folder, tasks=["2048-first-moves"])
    waiting = evaluator("--standby", str(folder), "--out", str(folder / "out"), "--no-video", "--workers", "1")
    _out, err = waiting.communicate(line, timeout=120)
    assert waiting.returncode == 2, err[-2000:]
    assert said in err
    assert not (folder / "out" / "results.json").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["--data", "x.jsonl"], "--standby takes the job's --data from its standard input"),
    (["--protocol", "iwr-official"], "does not serve the LLM-judged protocols"),
    (["--protocol", "iwr-nope"], "iwr-nope"),
])
def test_standby_options_that_cannot_work_are_refused_before_anything_starts(folder, args, said):
    done = subprocess.run([sys.executable, "-m", "evaluator", "score", "--standby", str(folder), "--out",
                           str(folder / "out"), *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_a_cold_start_still_needs_its_data_and_bundle(tmp_path):
    done = subprocess.run([sys.executable, "-m", "evaluator", "score", "--out", str(tmp_path / "out")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--data is required (or --standby FOLDER" in done.stderr, done.stderr

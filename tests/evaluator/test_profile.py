"""``score --profile``: each task says where its replay's time went, phase by phase, and the phases add up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.replay import Profile

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev"
TASK = "2048-first-moves"


@pytest.mark.browser
def test_each_task_writes_its_phases_and_they_fit_in_its_time(tmp_path):
    if not (SAMPLE / "data.jsonl").is_file():
        pytest.skip("the sample benchmark is not built (scripts/setup.sh builds it)")
    bundle = tmp_path / "bundle" / TASK
    bundle.mkdir(parents=True)
    (bundle / "index.html").write_text((SAMPLE / "data" / TASK / "reference" / "site" / "index.html").read_text())
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "evaluator", "score", "--data", str(SAMPLE / "data.jsonl"),
                           "--bundle", str(tmp_path / "bundle"), "--tasks", TASK, "--out", str(out), "--no-video",
                           "--workers", "1", "--profile"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((out / "results.json").read_text())["tasks"][TASK]
    profile = json.loads((out / "tasks" / TASK / "profile.json").read_text())
    assert profile["task"] == TASK and profile["actions"] == len(result["steps"]) - 1 == 12
    phases = profile["phases_ms"]
    assert set(phases) == {*Profile.THREAD_PHASES, "visual", "context_and_other"}
    for name in ("load", "action", "settle", "screenshot", "state", "judge", "visual"):
        assert phases[name] > 0, name  # every phase this task has was timed
    assert phases["search"] >= 0  # 2048 is all key presses but the New Game click
    own = sum(phases[name] for name in Profile.THREAD_PHASES)
    assert own + phases["context_and_other"] == pytest.approx(profile["elapsed_ms"], abs=1.0)
    assert profile["elapsed_ms"] == pytest.approx(result["elapsed_s"] * 1000, abs=1.0)
    assert profile["started"] < profile["ended"]


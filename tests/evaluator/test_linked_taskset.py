"""A task set whose task folders are symbolic links to another task set's scores like the original inside the
sandbox: the job sees the real folders of the linked tasks it scores (and only those)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.commands.score import _linked_task_folders

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev" / "data.jsonl"
TASK = "todomvc-vanillajs-list"


def linked_taskset(root: Path, keys: list[str]) -> Path:
    records = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    (root / "data").mkdir(parents=True)
    lines = []
    for record in records:
        if str(record["id"]) in keys:
            (root / "data" / str(record["id"])).symlink_to(SAMPLE.parent / "data" / str(record["id"]))
            lines.append(json.dumps(record))
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    return root / "data.jsonl"


def test_only_the_linked_folders_of_the_tasks_scored_are_bound(tmp_path):
    if not SAMPLE.is_file():
        pytest.skip("the sample benchmark is not built (scripts/setup.sh builds it)")
    keys = [TASK, "2048-first-moves"]
    data = linked_taskset(tmp_path / "linked", keys)
    every = _linked_task_folders(argparse.Namespace(data=data, tasks=None))
    assert every == sorted((SAMPLE.parent / "data" / key).resolve() for key in keys)
    only = _linked_task_folders(argparse.Namespace(data=data, tasks=TASK))
    assert only == [(SAMPLE.parent / "data" / TASK).resolve()]


@pytest.mark.browser
def test_a_linked_task_scores_its_visual_checkpoints_in_the_sandbox(tmp_path):
    """The reference page on a linked task: every checkpoint is read (VFS 1.0), not lost behind a dangling link."""
    if not SAMPLE.is_file():
        pytest.skip("the sample benchmark is not built (scripts/setup.sh builds it)")
    data = linked_taskset(tmp_path / "linked", [TASK])
    bundle = tmp_path / "bundle"
    (bundle / TASK).mkdir(parents=True)
    reference = SAMPLE.parent / "data" / TASK / "reference" / "site" / "index.html"
    (bundle / TASK / "index.html").write_text(reference.read_text())
    run = subprocess.run([sys.executable, "-m", "evaluator", "score", "--data", str(data), "--bundle", str(bundle),
                          "--out", str(tmp_path / "out"), "--no-video", "--workers", "1"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    task = json.loads((tmp_path / "out" / "results.json").read_text())["tasks"][TASK]
    assert task["error"] is None and task["vfs"] == 1.0 and task["ifs"] == 1.0, task

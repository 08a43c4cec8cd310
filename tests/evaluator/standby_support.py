"""A cold start and a job on standby (``score --standby``) compared on the sample: their inputs in one folder
(a standby can read nothing outside it) and their results without timings. Used by
tests/evaluator/test_standby.py and bench/standby/run.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "var" / "benchmark" / "dev"


def reference_job_folder(root: Path, keys: list[str]) -> Path:
    """``root/dev/data.jsonl`` (with the tasks' folders) holding ``keys`` only, and ``root/bundle/<key>/index.html``
    their reference pages."""
    records = [json.loads(line) for line in (SAMPLE / "data.jsonl").read_text().splitlines() if line.strip()]
    (root / "dev" / "data").mkdir(parents=True)
    (root / "dev" / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records if r["id"] in keys))
    for key in keys:
        shutil.copytree(SAMPLE / "data" / key, root / "dev" / "data" / key)
        (root / "bundle" / key).mkdir(parents=True)
        shutil.copy(SAMPLE / "data" / key / "reference" / "site" / "index.html", root / "bundle" / key)
    return root


def timeless_results(out: Path) -> dict:
    """``out/results.json`` without the timings, which differ between any two runs."""
    document = json.loads((out / "results.json").read_text())
    for task in document["tasks"].values():
        task.pop("elapsed_s", None)
        for step in task["steps"]:
            step.pop("elapsed_ms", None)
    return document

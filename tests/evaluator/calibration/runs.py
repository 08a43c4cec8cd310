"""Run the evaluator's own commands, exactly as a user would, and read what they wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.evaluator.calibration.taskset import REPO

RUN_TIMEOUT_S = 900


def evaluator(*args: str, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``python -m evaluator ARGS`` from the repository root; raises with its output when it fails."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    proc = subprocess.run([sys.executable, "-m", "evaluator", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"evaluator {' '.join(args[:1])} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def sandbox_args() -> list[str]:
    """The job sandbox the evaluator uses by default; none (loudly allowed) where bubblewrap cannot run.

    The calibration judges the judge, not the isolation, which has its own tests.
    """
    from evaluator.sandbox import bubblewrap_problem

    return [] if bubblewrap_problem() is None else ["--sandbox", "none", "--allow-unsandboxed"]


def build_baselines(data: Path, out: Path, kinds: str = "reference,snapshot,empty") -> Path:
    """``evaluator baselines``: OUT/<kind>/<task>/index.html for each kind."""
    evaluator("baselines", "--data", str(data), "--out", str(out), "--kinds", kinds)
    return out


def score(data: Path, bundle: Path, out: Path, ocr_cache: Path | None = None, workers: int | None = None,
          protocol: str | None = None) -> dict:
    """``evaluator score --no-video`` on ``bundle``; returns results.json.

    ``protocol`` names the scoring protocol and ``workers`` the worker count (default: the evaluator's own).
    ``ocr_cache`` keeps OCR results (keyed by pixels) between runs: the reference checkpoints
    are read once per session instead of once per run.
    """
    args = ["score", "--data", str(data), "--bundle", str(bundle), "--out", str(out), "--no-video",
            *sandbox_args(), *(["--workers", str(workers)] if workers else [])]
    if ocr_cache is not None:
        args += ["--ocr-cache", str(ocr_cache)]
    if protocol:
        args += ["--protocol", protocol]
    evaluator(*args)
    return json.loads((Path(out) / "results.json").read_text(encoding="utf-8"))

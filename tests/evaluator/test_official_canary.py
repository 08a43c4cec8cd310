"""The judge's key never reaches an official job: scored in bubblewrap, with the key (a canary) only in the relay.

The score command holds the key (OPENAI_API_KEY carries the canary, like every secret of the site),
starts the judge relay beside the job and the job in bubblewrap. Every process of the job is
inspected while it runs: none has the key in its environment or sees a canary file, yet the job
was judged (its requests reached the local endpoint with the key, through the relay's socket).
"""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.browser import driver_settings
from evaluator.dataset import load_dataset
from evaluator.outputs import read_results
from tests.evaluator import canary, fake_judge
from tests.evaluator.test_canary import host_paths_a_job_must_not_see
from tests.evaluator.test_official_replay import ASSERTIONS, VERDICTS, task_set
from tests.evaluator.test_replay import GOOD_PAGE
from tests.evaluator.test_runner import make_bundle, needs_bwrap

pytestmark = [pytest.mark.browser, needs_bwrap]
ROOT = Path(__file__).resolve().parents[2]


def test_an_official_job_holds_no_key_and_is_still_judged(tmp_path: Path):
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    shutil.copytree(ROOT / "evaluator", checkout / "evaluator", ignore=shutil.ignore_patterns("__pycache__"))
    # The fixed visual models must be importable inside the job, which sees only the evaluator package.
    (checkout / "evaluator" / "fixed_models.py").write_text(inspect.getsource(fake_judge.FixedModels).join(
        ["from __future__ import annotations\n\n\n", ""]))
    planted = canary.plant_files(checkout, home)
    data = task_set(tmp_path / "set")
    bundle = make_bundle(tmp_path / "bundle", dict.fromkeys(ASSERTIONS, GOOD_PAGE))
    out = tmp_path / "out"
    with fake_judge.ScriptedJudge(VERDICTS) as judge:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONPATH": str(checkout),
               **driver_settings(), **canary.SECRET_ENV, "IWR_GENERATION_ALLOW_PLAIN_HTTP": "1",
               "IWR_OFFICIAL_VISUAL_FACTORY": "evaluator.fixed_models:FixedModels"}
        command = [sys.executable, "-m", "evaluator", "score", "--data", str(data), "--bundle", str(bundle),
                   "--out", str(out), "--tasks", "a", "--workers", "1", "--no-video", "--sandbox", "bubblewrap",
                   "--protocol", "iwr-official", "--judge-base-url", judge.base_url, "--judge-model", "judge-1",
                   "--judge-cache", str(tmp_path / "cache")]
        proc = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            seen = canary.watch(proc, [*planted, *host_paths_a_job_must_not_see(checkout)], timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
            _stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert seen.leaks == [], seen.summary()
    assert seen.sandboxed and seen.browsers and seen.browsers & seen.sandboxed, seen.summary()
    scored = [task for task in load_dataset(data).tasks if task.key == "a"]
    results = read_results(out / "results.json", scored)  # passes the checks a worker applies
    assert results["tasks"]["a"]["final"] == pytest.approx(0.97)  # judged through the socket, as by hand
    assert results["judge"]["requests"] >= 5 and results["judge"]["complete"]
    assert all(r.headers["Authorization"] == f"Bearer {canary.SECRET_ENV['OPENAI_API_KEY']}" for r in judge.requests)
    for path in out.rglob("*.json*"):
        assert canary.CANARY not in path.read_text(errors="replace"), path

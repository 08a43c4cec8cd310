"""No secret reaches a job: a real page scored in bubblewrap with canaries everywhere the site keeps secrets.

The scoring command is started the way the leaderboard's worker starts it, with the worker's
secrets in its environment, from a checkout whose var/ and whose user's home hold canary files.
Every process of the job (bubblewrap, the sandboxed evaluator and its workers, Playwright's
driver, Chromium and its children) is inspected while it runs: none has a canary in its
environment, and none can see a canary file, the checkout beyond the evaluator, the home
folder, /run or the Docker socket.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.browser import driver_settings
from evaluator.dataset import load_dataset
from evaluator.outputs import read_results
from tests.evaluator import canary
from tests.evaluator.test_replay import GOOD_PAGE
from tests.evaluator.test_runner import ACTIONS, make_bundle, make_task_set, needs_bwrap

pytestmark = [pytest.mark.browser, needs_bwrap]
ROOT = Path(__file__).resolve().parents[2]


def host_paths_a_job_must_not_see(checkout: Path) -> list[Path]:
    """Host paths that exist here and that no job may see: sockets, the real checkout's other parts, home."""
    paths = [Path("/run"), Path("/var/run/docker.sock"), ROOT / "var", ROOT / "leaderboard", ROOT / "manage.py",
             checkout / "var", Path("/etc/shadow"), Path("/etc/ssl/private")]
    home = Path(os.path.expanduser("~"))
    paths += [entry for entry in sorted(home.iterdir()) if entry.name != ".pyenv"][:5] if home.is_dir() else []
    return [path for path in paths if path.exists()]


@pytest.mark.parametrize("start", ["cold", "standby"])
def test_a_scored_job_holds_no_secret_and_sees_no_secret_file(tmp_path: Path, start: str):
    """The same whether the job starts with its inputs or waits for them on standby (``score --standby``)."""
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    shutil.copytree(ROOT / "evaluator", checkout / "evaluator", ignore=shutil.ignore_patterns("__pycache__"))
    planted = canary.plant_files(checkout, home)
    inputs = tmp_path / "inputs"
    data = make_task_set(inputs / "set", ["1"], ACTIONS)
    bundle = make_bundle(inputs / "bundle", {"1": GOOD_PAGE})
    out = tmp_path / "out"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONPATH": str(checkout),
           **driver_settings(), **canary.SECRET_ENV}
    given = ["--standby", str(inputs)] if start == "standby" else ["--data", str(data), "--bundle", str(bundle)]
    command = [sys.executable, "-m", "evaluator", "score", *given, "--out", str(out), "--workers", "1",
               "--sandbox", "bubblewrap"]
    proc = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if start == "standby" else subprocess.DEVNULL, start_new_session=True)
    if start == "standby":  # the job line, as the site's worker sends it (communicate() closes the input)
        proc.stdin.write(json.dumps({"data": str(data), "bundle": str(bundle), "tasks": None}).encode() + b"\n")
        proc.stdin.flush()
    try:
        seen = canary.watch(proc, [*planted, *host_paths_a_job_must_not_see(checkout)], timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr.decode()[-3000:]
    assert seen.leaks == [], seen.summary()
    assert seen.sandboxed and seen.browsers and seen.browsers & seen.sandboxed, seen.summary()
    assert seen.roots_checked >= 2, seen.summary()
    assert seen.chromium_sandboxed(), seen.summary()  # Chromium's own sandbox works inside bubblewrap
    # The job really scored the page, and its output passes the checks a worker applies.
    results = read_results(out / "results.json", load_dataset(data).tasks)
    assert results["tasks"]["1"]["ifs"] == 1.0 and json.loads(stdout.decode().splitlines()[-1])["n_tasks"] == 1
    assert canary.CANARY not in (out / "job.json").read_text()

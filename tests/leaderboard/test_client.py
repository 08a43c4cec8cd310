"""The command-line client (scripts/iwr-submit) against a live site: every command and its errors."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, Submission

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "iwr-submit"
PAGE = "<!doctype html><html><body><button class='btn'>Go</button></body></html>"


@pytest.fixture
def site(transactional_db, live_server, imported_sample, owner, settings, tmp_path, monkeypatch):
    """A live site with the sample tasks, and the environment the client reads."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SUBMISSION_QUOTAS = {"dev": 20, "test": 3}
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: True)
    token = Token.objects.create(user=owner)
    return {**os.environ, "IWR_URL": live_server.url, "IWR_TOKEN": token.key}


def client(environ: dict, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=environ, capture_output=True, text=True,
                          timeout=timeout)


def bundle(tmp_path: Path, members: dict[str, str] | None = None) -> Path:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in (members or {"101/index.html": PAGE}).items():
            archive.writestr(name, data)
    return path


def test_the_client_imports_only_the_standard_library():
    """The client must run on a machine with nothing but Python: no Django, no third-party package."""
    tree = ast.parse(SCRIPT.read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules


@pytest.mark.django_db(transaction=True)
def test_submit_list_status_and_quota(site, tmp_path):
    """Submitting prints the id and the missing-task note; list, status and quota show it."""
    done = client(site, "submit", str(bundle(tmp_path)), "--split", "dev", "--model-name", "CLI-Model",
                  "--open-weights", "--private")
    assert done.returncode == 0, done.stderr
    submission = Submission.objects.get()
    assert f"submission #{submission.pk} accepted: queued" in done.stdout and "dev-b" in done.stdout
    assert (submission.public, submission.open_weights) == (False, True)
    listing = client(site, "list")
    assert f"#{submission.pk}" in listing.stdout and "CLI-Model" in listing.stdout
    assert "queued" in client(site, "status", str(submission.pk)).stdout
    quota = client(site, "quota").stdout
    assert "dev  19 of 20 left today" in quota and "test 3 of 3 left today" in quota


@pytest.mark.django_db(transaction=True)
def test_status_wait_shows_progress_until_scored_and_download_writes_results(site, tmp_path, owner):
    """--wait draws the progress bar while running and ends with the scores; download saves the JSON."""
    from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation

    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="running",
                                        tasks_done=1)
    waiting = subprocess.Popen([sys.executable, str(SCRIPT), "status", str(evaluation.submission_id), "--wait"],
                               env=site, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    Evaluation.objects.filter(pk=evaluation.pk).update(status="scored", tasks_done=2, final=0.4321, ifs=0.3,
                                                       vfs=0.7, final_ci_low=0.3, final_ci_high=0.5, n_tasks=2)
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0, err
    assert "[###############...............] 1/2 tasks  running" in err
    assert "2/2 tasks  scored" in err and "Final 43.21  IFS 30.00  VFS 70.00" in out
    target = tmp_path / "results.json"
    assert client(site, "download", str(evaluation.submission_id), "-o", str(target)).returncode == 0
    assert json.loads(target.read_text())["scores"]["final"] == 0.4321


@pytest.mark.django_db(transaction=True)
def test_errors_are_one_clear_line_each(site, tmp_path):
    """Bad bundle, bad token, missing settings and an unreachable site: messages, exit codes, no traceback."""
    refused = client(site, "submit", str(bundle(tmp_path, {"notes.txt": "hello"})), "--split", "dev",
                     "--model-name", "X")
    assert refused.returncode == 1 and "bundle: no task page found" in refused.stderr
    bad_token = client({**site, "IWR_TOKEN": "wrong"}, "list")
    assert bad_token.returncode == 1 and "refused (401)" in bad_token.stderr
    unset = client({key: value for key, value in site.items() if key != "IWR_URL"}, "list")
    assert unset.returncode == 2 and "IWR_URL" in unset.stderr
    down = client({**site, "IWR_URL": "http://127.0.0.1:9"}, "quota")
    assert down.returncode == 2 and "cannot reach" in down.stderr
    for result in (refused, bad_token, unset, down):
        assert "Traceback" not in result.stderr

"""What a job sees and what is kept of what it writes: the worker distrusts the evaluator's job.

The stand-in evaluator of ``pipeline_support`` runs through the real worker code (``run_claimed``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.leaderboard.test_pipeline import fake_evaluator, queued, run, steer  # noqa: F401 - fixture

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.usefixtures("fake_evaluator")


@pytest.mark.django_db
def test_the_score_command_never_sees_the_workers_secrets(owner, imported_sample, monkeypatch, tmp_path, settings,
                                                          django_capture_on_commit_callbacks):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "canary-xyz")
    monkeypatch.setenv("DATABASE_URL", "postgres://board:canary-pw@db/board")
    monkeypatch.setenv("DOCKER_HOST", "tcp://engine:2375")
    dump = tmp_path / "env.json"
    steer(monkeypatch, f"--fake-dump-env {dump}")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    seen = json.loads(dump.read_text())
    assert "canary" not in json.dumps(seen)
    assert "DJANGO_SECRET_KEY" not in seen and "DATABASE_URL" not in seen
    assert "DOCKER_HOST" not in seen  # only the container backend talks to the engine
    job_tmp = Path(seen["TMPDIR"])
    assert seen["HOME"] == seen["TMPDIR"] and job_tmp.name == "tmp"
    assert Path(settings.JOBS_ROOT) in job_tmp.parents  # private to the attempt, inside its folder
    assert seen["PATH"] == "/usr/local/bin:/usr/bin:/bin"

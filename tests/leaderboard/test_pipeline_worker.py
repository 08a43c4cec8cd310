"""The pipeline with real Celery worker processes and the real evaluator, on both deployments:
the embedded default (SQLite file + filesystem broker) and PostgreSQL + Redis.

The kill test SIGKILLs a worker's whole process group while it is scoring, starts another
worker node, and checks that the evaluation finishes exactly once (one result per task,
scored, two claims) with the same scores as an undisturbed run of the same bundle. The
database here is a real file or server database that the worker processes share, so the
test drives it through a harness process (``pipeline_support harness``) instead of the
in-process test database.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.leaderboard.pipeline_support import Worker, harness, wait_for, worker_environ

N_TASKS = 6  # killed after the first result, five tasks are left: the kill lands mid-run even on a fast machine
PG_URL = "postgres://postgres@127.0.0.1:5432/{name}"
REDIS_URL = "redis://127.0.0.1:6379/13"


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def embedded(tmp_path) -> dict:
    """The embedded default: SQLite in the data folder, filesystem broker."""
    return {}


@pytest.fixture
def services() -> dict:
    """PostgreSQL (a fresh database) + Redis as broker and result backend."""
    if not (reachable(5432) and reachable(6379)):
        pytest.skip("PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 are needed for this configuration")
    import psycopg
    import redis

    name = f"iwr_pipeline_{os.getpid()}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    broker = redis.Redis.from_url(REDIS_URL)
    broker.flushdb()
    yield {"DATABASE_URL": PG_URL.format(name=name), "CELERY_BROKER_URL": REDIS_URL,
           "CELERY_RESULT_BACKEND": REDIS_URL}
    broker.flushdb()
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["embedded", pytest.param("services", marks=pytest.mark.services)])
def deployment(request, tmp_path):
    """The environment of one deployment, shared by the harness and the workers."""
    extra = request.getfixturevalue(request.param)
    # Jobs live outside /tmp: the evaluator's bubblewrap sandbox mounts a fresh /tmp.
    jobs = Path(tempfile.mkdtemp(prefix="iwr-test-jobs-", dir="/var/tmp"))
    yield worker_environ(tmp_path / "data", jobs, {
        "IWR_REAPER_STALE_SECONDS": "5", "IWR_REAPER_INTERVAL_SECONDS": "2",
        "IWR_EVALUATOR_WORKERS": "1", "IWR_EVALUATOR_EXTRA_ARGS": "--no-video", **extra,
    })
    subprocess.run(["chmod", "-R", "u+w", str(jobs)], check=False)
    subprocess.run(["rm", "-rf", str(jobs)], check=False)


def job_processes(jobs_root: str) -> list[str]:
    """Command lines of processes still working on something under the jobs folder."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and jobs_root in cmdline:
            found.append(cmdline)
    return found


def scored(environ: dict, evaluation_id: int):
    state = harness(environ, "state", evaluation_id)
    return state if state["status"] in ("scored", "failed") else None


@pytest.mark.slow
@pytest.mark.browser
def test_a_worker_killed_mid_run_loses_nothing_and_scores_exactly_once(deployment, tmp_path):
    """SIGKILL the worker while it scores; a new worker finishes it once, with the undisturbed run's scores.

    The workers keep an evaluator on standby (leaderboard/worker/standby.py): each evaluation starts on
    one, and none outlives its worker, killed or stopped."""
    deployment = {**deployment, "IWR_EVALUATOR_STANDBY": "1"}
    killed_id, undisturbed_id = harness(deployment, "setup", N_TASKS, 2)["evaluations"]
    first = Worker(deployment, "w1", tmp_path / "w1.log")
    try:
        def partly_done():
            state = harness(deployment, "state", killed_id)
            return state if state["status"] == "running" and state["result_rows"] >= 1 else None

        wait_for(partly_done, 240, "the first task result", first)
    finally:
        first.kill()
    state = harness(deployment, "state", killed_id)
    assert state["status"] == "running" and state["result_rows"] < N_TASKS, state  # killed mid-run
    time.sleep(1)
    assert job_processes(deployment["IWR_JOBS_ROOT"]) == []  # the evaluator died with its worker

    second = Worker(deployment, "w2", tmp_path / "w2.log")
    try:
        again = wait_for(lambda: scored(deployment, killed_id), 300, "the killed evaluation to finish", second)
        clean = wait_for(lambda: scored(deployment, undisturbed_id), 300, "the undisturbed evaluation", second)
    finally:
        second.stop()
    time.sleep(1)
    assert job_processes(deployment["IWR_JOBS_ROOT"]) == []  # the next job's standby ended with its worker
    assert again["status"] == "scored", again["failure_reason"] + second.log()
    assert again["on_standby"] and clean["on_standby"]
    assert again["attempts"] == 2 and clean["attempts"] == 1
    assert again["result_rows"] == N_TASKS and again["tasks_done"] == N_TASKS
    assert again["results"] == clean["results"]
    assert (again["final"], again["ifs"], again["vfs"]) == (clean["final"], clean["ifs"], clean["vfs"])
    assert again["final_ci_low"] <= again["final"] <= again["final_ci_high"]
    assert again["charged"] is True and again["worker"].startswith("w2@")

"""Page generation with real Celery worker processes on the embedded deployment (SQLite file +
filesystem broker) against the fake OpenAI-compatible endpoint.

The test SIGKILLs the worker's whole process group while it waits on the endpoint, starts
another worker node, and checks that the job is re-queued by the reaper, resumed (pages
generated before the kill are not asked for again) and finished exactly once: one bundle,
one queued evaluation, the key erased. Each answer takes longer than the staleness limit,
so the first worker keeps its claim only through its heartbeat thread.

The database is a file the worker processes share, so the test drives it through a harness
process (``pipeline_support harness generation-setup`` and ``generation-state``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluator.fake_endpoint import FakeEndpoint, Reply, completion
from tests.leaderboard.pipeline_support import Worker, harness, wait_for, worker_environ

N_TASKS = 3
API_KEY = "sk-worker-test-5e6f7a8b9c0d-KEY"
REPLY_DELAY = 3.5  # longer than IWR_REAPER_STALE_SECONDS below: only the heartbeat thread keeps the claim
QUEUES = "generate,default,housekeeping"
POLL_SECONDS = 0.2


@pytest.fixture
def environ(tmp_path) -> dict:
    """The embedded deployment in a fresh data folder, shared by the harness and the workers."""
    return worker_environ(tmp_path / "data", tmp_path / "jobs", {
        "IWR_REAPER_STALE_SECONDS": "3", "IWR_REAPER_INTERVAL_SECONDS": "1",
        "IWR_GENERATION_ALLOW_PRIVATE_ENDPOINTS": "true", "IWR_GENERATION_CONCURRENCY": "1",
        "IWR_GENERATION_REQUEST_TIMEOUT": "30",
    })


def generated_pages(report: Path) -> int:
    """Pages the running job's report lists as generated so far (0 before it exists)."""
    try:
        tasks = json.loads(report.read_text())["tasks"]
    except (FileNotFoundError, ValueError, KeyError):
        return 0
    return sum(1 for outcome in tasks.values() if outcome.get("status") == "ok")


@pytest.mark.slow
def test_a_generation_worker_killed_mid_run_resumes_and_finishes_exactly_once(environ, tmp_path):
    """SIGKILL mid-generation; the reaper re-queues, a new worker resumes and hands over to scoring once."""
    script = [Reply(body=completion(), delay=REPLY_DELAY) for _ in range(2 * N_TASKS)]
    with FakeEndpoint(script) as endpoint:
        job_id = harness(environ, "generation-setup", endpoint.base_url, N_TASKS, API_KEY)["job"]
        report = Path(environ["IWR_JOBS_ROOT"]) / f"generation-{job_id}" / "out" / "generation.json"
        first = Worker(environ, "w1", tmp_path / "w1.log", queues=QUEUES, concurrency=2)
        try:
            wait_for(lambda: generated_pages(report) >= 1, 60, "the first generated page", first, interval=POLL_SECONDS)
        finally:
            first.kill()
        kept, asked_before = generated_pages(report), len(endpoint.requests)
        assert 1 <= kept < N_TASKS  # killed mid-run, its folder kept for the resume

        second = Worker(environ, "w2", tmp_path / "w2.log", queues=QUEUES, concurrency=2)
        try:  # the job folder goes once the job has ended (watching it is cheaper than asking the database)
            wait_for(lambda: not report.parent.parent.exists(), 60, "the resumed job to end", second,
                     interval=POLL_SECONDS)
        finally:
            second.kill()  # nothing left to finish: no need to wait for a warm shutdown
        asked_after = len(endpoint.requests) - asked_before
    state = harness(environ, "generation-state", job_id)
    assert state["status"] == "done", state["failure_reason"] + second.log()
    # Two claims only: the first worker's heartbeat thread kept its claim through answers slower than
    # the staleness limit (its own reaper would otherwise have re-queued the job under it).
    assert state["attempts"] == 2 and state["worker"].startswith("w2@")
    assert asked_after == N_TASKS - kept  # pages generated before the kill were kept, not asked for again
    assert state["pages"] == [f"dev{n}/index.html" for n in range(1, N_TASKS + 1)]
    assert state["evaluations"] == ["queued"] and state["tasks_done"] == N_TASKS and state["task_errors"] == {}
    assert not state["key_stored"] and state["charged"] is True
    for request in endpoint.requests:
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"


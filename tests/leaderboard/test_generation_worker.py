"""Page generation with real Celery worker processes on the embedded deployment (SQLite file +
filesystem broker) against the fake OpenAI-compatible endpoint.

The test SIGKILLs the worker's whole process group while it waits on the endpoint, starts
another worker node, and checks that the job is re-queued by the reaper, resumed (pages
generated before the kill are not asked for again) and finished exactly once: one bundle,
one queued evaluation, the key erased. Each answer takes longer than the staleness limit,
so the first worker keeps its claim only through its heartbeat thread.

The database is a file the worker processes share, so the test drives it through a harness
process: ``python -m tests.leaderboard.test_generation_worker setup BASE_URL`` accepts an
endpoint submission through the product's form (its wake-up goes to the broker);
``... state JOB_ID`` prints the job's state as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.evaluator.fake_endpoint import FakeEndpoint, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 3
API_KEY = "sk-worker-test-5e6f7a8b9c0d-KEY"
REPLY_DELAY = 3.5  # longer than IWR_REAPER_STALE_SECONDS below: only the heartbeat thread keeps the claim
DEPLOYMENT_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "IWR_DATA_DIR")


@pytest.fixture
def environ(tmp_path) -> dict:
    """The embedded deployment in a fresh data folder, shared by the harness and the workers."""
    inherited = {key: value for key, value in os.environ.items() if key not in DEPLOYMENT_VARIABLES}
    return {
        **inherited, "DJANGO_SETTINGS_MODULE": "tests.settings", "IWR_ENV": "test",
        "IWR_DATA_DIR": str(tmp_path / "data"), "IWR_JOBS_ROOT": str(tmp_path / "jobs"),
        "IWR_HEARTBEAT_SECONDS": "1", "IWR_REAPER_STALE_SECONDS": "3", "IWR_REAPER_INTERVAL_SECONDS": "1",
        "IWR_GENERATION_ALLOW_PRIVATE_ENDPOINTS": "true", "IWR_GENERATION_CONCURRENCY": "1",
        "IWR_GENERATION_REQUEST_TIMEOUT": "30",
    }


def harness(environ: dict, *args) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.leaderboard.test_generation_worker", *map(str, args)],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class Worker:
    """A real Celery worker node for the generate queue (prefork, embedded beat) in its own process group."""

    def __init__(self, environ: dict, node: str, log_path: Path):
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "leaderboard", "worker", "-Q", "generate,default", "-c", "2",
             "-B", "-s", str(log_path.with_suffix(".beat")), "-n", f"{node}@%h", "--without-mingle",
             "--without-gossip", "--loglevel=INFO"],
            cwd=ROOT, env=environ, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def wait_for(check, timeout: float, what: str, worker: Worker):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}\n--- worker log ---\n{worker.log()}")


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
        job_id = harness(environ, "setup", endpoint.base_url)["job"]
        report = Path(environ["IWR_JOBS_ROOT"]) / f"generation-{job_id}" / "out" / "generation.json"
        first = Worker(environ, "w1", tmp_path / "w1.log")
        try:
            wait_for(lambda: generated_pages(report) >= 1, 60, "the first generated page", first)
        finally:
            first.kill()
        kept, asked_before = generated_pages(report), len(endpoint.requests)
        assert 1 <= kept < N_TASKS  # killed mid-run, its folder kept for the resume

        second = Worker(environ, "w2", tmp_path / "w2.log")
        try:  # the job folder goes once the job has ended (watching it is cheaper than asking the database)
            wait_for(lambda: not report.parent.parent.exists(), 60, "the resumed job to end", second)
        finally:
            second.kill()  # nothing left to finish: no need to wait for a warm shutdown
        asked_after = len(endpoint.requests) - asked_before
    state = harness(environ, "state", job_id)
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


# --------------------------------------------------------------------------- harness (separate process)


def _setup(base_url: str) -> dict:
    import tempfile

    from django.core.management import call_command

    from leaderboard import generation, tasksets
    from tests.leaderboard.base import make_user
    from tests.leaderboard.pipeline_support import write_tiny_dataset

    call_command("migrate", verbosity=0)
    with tempfile.TemporaryDirectory() as tmp:
        tasksets.import_dataset(write_tiny_dataset(Path(tmp) / "tiny", "dev", N_TASKS), "dev", "tiny")
    user = make_user("endpoint-owner")
    form = generation.EndpointForm({
        "split": "dev", "protocol": "iwr-det", "model_name": "Worker-VL", "public": "on", "base_url": base_url,
        "model_id": "worker-vl", "api_key": API_KEY, "max_tokens": "1000", "max_images": "70", "max_frames": "64",
    }, user=user)
    if not form.is_valid():
        raise SystemExit(f"setup form refused: {form.errors.as_json()}")
    return {"job": generation.accept(form, user).pk}  # its wake-up is sent once the rows are committed


def _state(job_id: int) -> dict:
    import io
    import zipfile

    from leaderboard.models import GenerationJob

    job = GenerationJob.objects.select_related("submission").get(pk=job_id)
    submission = job.submission
    pages = []
    if submission.bundle:
        with submission.bundle.open("rb") as handle, zipfile.ZipFile(io.BytesIO(handle.read())) as archive:
            pages = sorted(archive.namelist())
    return {"status": job.status, "attempts": job.attempts, "worker": job.worker, "tasks_done": job.tasks_done,
            "task_errors": job.task_errors, "failure_reason": job.failure_reason,
            "key_stored": bool(bytes(job.api_key_encrypted)), "charged": submission.charged, "pages": pages,
            "evaluations": [e.status for e in submission.evaluations.order_by("pk")]}


def main(argv: list[str]) -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    command, argument = argv
    print(json.dumps(_setup(argument) if command == "setup" else _state(int(argument))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A job container ends at its own wall-clock limit inside the engine, with its dispatcher killed and no sweep.

The exact command the dispatcher uses (:func:`evaluator.container.run_command`), its job replaced by
a long ``sleep`` so only the container's own clock can end it, in seconds: on the project's base
image (small, so quick to start; it has no tini, so ``env`` stands in as the first process), and on
the existing evaluator image (never rebuilt here: a missing image skips), whose containers take
minutes to create on a vfs engine.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from datetime import datetime

import pytest

from evaluator import container

IMAGE = container.DEFAULT_IMAGE
BASE_IMAGE = "iwr/debian:bookworm"  # every image's base (docker/build-base-image.sh)
LIMIT_S = 3
START_TIMEOUT_S = 1200  # creating a container of the evaluator image copies it on a vfs engine: minutes


@pytest.fixture
def image(docker_engine, request, monkeypatch) -> str:
    if subprocess.run(["docker", "image", "inspect", request.param], capture_output=True).returncode != 0:
        pytest.skip(f"{request.param} is not built (docker/build-images.sh)")
    if request.param == BASE_IMAGE:
        monkeypatch.setattr(container, "INIT", "/usr/bin/env")  # runs `-- timeout ...` as tini would
    return request.param


def container_state(name: str) -> dict | None:
    done = subprocess.run(["docker", "inspect", "--format", "{{json .State}}", name], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else None


def wait_for(name: str, statuses: set[str], timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        state = container_state(name)
        if state and state["Status"] in statuses:
            return state
        assert time.monotonic() < deadline, f"container {name}: {state and state['Status']}, not one of {statuses}"
        time.sleep(0.5)


def moment(stamp: str) -> float:
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole + "+00:00").timestamp() + float(f"0.{fraction or 0}")


@pytest.mark.timeout(START_TIMEOUT_S + 900)
@pytest.mark.parametrize("image", [BASE_IMAGE, IMAGE], indirect=True)
def test_a_job_container_ends_at_its_own_wall_clock_after_its_dispatcher_is_killed(image, tmp_path, monkeypatch):
    """The dispatcher's ``docker run`` client is SIGKILLed and nothing sweeps: the job (a sleep of ten
    minutes) still ends at the container's limit, with timeout's status, and the container stops."""
    monkeypatch.setattr(container, "JOB_COMMAND", ("sleep", "600"))
    job = tmp_path / "job"
    container.prepare_job_dir(job)
    name = f"iwr-test-clock-{uuid.uuid4().hex[:10]}"
    command = container.run_command(job, image, name, container.ContainerLimits(wall_clock_s=LIMIT_S))
    client = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(name, {"running", "exited"}, START_TIMEOUT_S)
        client.kill()  # the dispatcher dies with its client; the engine keeps the container
        client.wait(30)
        state = wait_for(name, {"exited"}, LIMIT_S + container.WALL_CLOCK_GRACE_S + 60)
        ran = moment(state["FinishedAt"]) - moment(state["StartedAt"])
        assert state["ExitCode"] == container.TIMED_OUT_STATUS, state
        assert LIMIT_S - 0.5 <= ran < LIMIT_S + container.WALL_CLOCK_GRACE_S, state
    finally:
        if client.poll() is None:
            client.kill()
        subprocess.run(["docker", "rm", "--force", name], capture_output=True, timeout=900)

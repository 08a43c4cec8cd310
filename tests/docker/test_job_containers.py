"""Job containers and job folders after their dispatcher is gone, on a real container engine.

The containers here run the project's base image (``iwr/debian:bookworm``, which every image is
built from): what is tested is the engine's records and the files a container's user leaves, not
the evaluator. Every container carries this test's own jobs folder in its labels, so the sweeps
never touch another deployment's containers on the same engine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from evaluator.container import CONTAINER_UID

BASE_IMAGE = "iwr/debian:bookworm"
DISPATCHER_UID = 10000  # the `web` user of docker/Dockerfile.web, as the compose dispatcher runs
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine(docker_engine, settings, tmp_path):
    if subprocess.run(["docker", "image", "inspect", BASE_IMAGE], capture_output=True).returncode != 0:
        subprocess.run(["bash", "docker/build-base-image.sh"], cwd=ROOT, check=True, capture_output=True)
    settings.EVALUATOR_SANDBOX = "container"
    settings.CONTAINER_ENGINE = "docker"
    settings.JOBS_ROOT = tmp_path / f"jobs-{uuid.uuid4().hex[:8]}"
    names: list[str] = []
    yield names
    if names:
        subprocess.run(["docker", "rm", "--force", *names], capture_output=True)


def claimed(worker: str):
    from leaderboard.models import Evaluation
    from leaderboard.worker.claims import EVALUATIONS
    from tests.leaderboard.base import make_user
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    evaluation = make_queued_evaluation(make_submission(make_user(f"owner-{uuid.uuid4().hex[:6]}")))
    token = EVALUATIONS.claim(evaluation.pk, worker)
    return Evaluation.objects.get(pk=evaluation.pk), token


def job_container(names: list[str], evaluation, token, detach: bool = True, deadline: float | None = None):
    """A container labelled as the dispatcher labels the job it starts for ``evaluation`` (or with
    ``deadline`` instead of its own); a ``docker run`` client in the foreground (as the dispatcher
    runs it) unless ``detach``."""
    from leaderboard.worker import containers
    from leaderboard.worker.evaluator_run import EvaluatorRun

    name = f"iwr-test-{uuid.uuid4().hex[:10]}"
    names.append(name)
    labels = EvaluatorRun(evaluation, token).container_labels()
    if deadline is not None:
        node = evaluation.worker.rpartition(":")[0]
        own = containers.job_labels(node, evaluation.pk, evaluation.attempts, deadline)
        labels = [*(word for item in own.items() for word in ("--label", "=".join(item)))]
    command = ["docker", "run", *(["--detach"] if detach else []), "--name", name, "--network", "none",
               *labels, BASE_IMAGE, "sleep", "600"]
    if detach:
        subprocess.run(command, check=True, capture_output=True)
        return name, None
    client = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while state(name) != "running":
        assert time.monotonic() < deadline, f"container {name} did not start"
        time.sleep(0.2)
    return name, client


def state(name: str) -> str | None:
    done = subprocess.run(["docker", "inspect", "--format", "{{.State.Status}}", name], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def test_the_reaper_removes_the_container_of_a_killed_dispatcher_and_keeps_the_held_one(engine, settings):
    """A SIGKILLed dispatcher leaves its container running; the next periodic reap re-queues the
    evaluation and removes that container, and only that one."""
    from django.utils import timezone

    from leaderboard.models import Evaluation
    from leaderboard.worker import reaper

    dead, dead_token = claimed("dispatcher@host-a:11")
    alive, alive_token = claimed("dispatcher@host-b:12")
    orphan, client = job_container(engine, dead, dead_token, detach=False)
    watched, _ = job_container(engine, alive, alive_token)
    client.send_signal(signal.SIGKILL)  # the dispatcher process dies with its `docker run` client
    client.wait(30)
    assert state(orphan) == "running"  # the engine keeps it: nobody would ever stop it
    stale = timezone.now() - timedelta(seconds=settings.CLAIM_STALE_SECONDS + 5)
    Evaluation.objects.filter(pk=dead.pk).update(heartbeat_at=stale)
    counts = reaper.reap()
    assert counts["requeued"] == 1 and counts["containers_removed"] == 1, counts
    assert state(orphan) is None and state(watched) == "running"
    Evaluation.objects.filter(pk=alive.pk).update(status="failed", claim_token="")  # its attempt ends elsewhere
    assert reaper.reap()["containers_removed"] == 1
    assert state(watched) is None


def test_a_container_past_its_deadline_goes_and_another_sites_containers_stay(engine, settings, tmp_path):
    """The deadline label is the wall-clock limit whether or not its attempt is held; the attempt rule
    is this site's only."""
    from leaderboard.models import Evaluation
    from leaderboard.worker import containers

    # (Deadlines are real: the engine is shared, and a sweep "in the future" would remove others' jobs.)
    held, held_token = claimed("dispatcher@host-a:11")
    watched, _ = job_container(engine, held, held_token)
    overdue, _ = job_container(engine, held, held_token, deadline=time.time() - 1)  # held, but past its deadline
    ours = settings.JOBS_ROOT
    settings.JOBS_ROOT = tmp_path / "another-site-jobs"
    foreign, _ = job_container(engine, held, held_token)  # another site's evaluation of the same number
    settings.JOBS_ROOT = ours
    earlier = f"iwr-test-{uuid.uuid4().hex[:10]}"  # an earlier version's job container: a deadline label only
    engine.append(earlier)
    subprocess.run(["docker", "run", "--detach", "--name", earlier, "--network", "none", "--label",
                    f"{containers.LABEL_DEADLINE}={int(time.time()) - 1}", BASE_IMAGE, "sleep", "600"], check=True,
                   capture_output=True)
    assert containers.remove_stray_containers() == 2
    assert state(overdue) is None and state(earlier) is None and state(watched) == state(foreign) == "running"
    Evaluation.objects.filter(pk=held.pk).update(status="scored", claim_token="")
    assert containers.remove_stray_containers() == 1  # this site's, no longer held; the other site's stays
    assert state(watched) is None and state(foreign) == "running"


def test_a_restarted_dispatcher_removes_the_containers_its_dead_processes_left(engine):
    from leaderboard.worker import reaper

    mine, mine_token = claimed("dispatcher@host-a:11")
    other, other_token = claimed("dispatcher@host-b:12")
    left, _ = job_container(engine, mine, mine_token)
    kept, _ = job_container(engine, other, other_token)
    assert reaper.reap_node("dispatcher@host-a") == 1  # its evaluation re-queued
    assert state(left) is None and state(kept) == "running"


# --------------------------------------------------------------------------- job folders across users


def test_a_non_root_dispatcher_removes_a_job_folder_the_container_user_wrote_and_closed(engine, settings):
    """The compose dispatcher (uid 10000) removes what the evaluator container (uid 10001) wrote, even
    folders the job took every permission off; without the engine's help it could not."""
    base = Path(tempfile.mkdtemp(prefix="iwr-cross-user-", dir="/tmp"))  # noqa: S108 - reachable by both users
    try:
        base.chmod(0o755)
        folder = dispatcher_job_folder(base)
        write_as_job_user(engine, folder / "out")
        assert (folder / "out" / "tasks").stat().st_uid == CONTAINER_UID
        settings.EVALUATOR_IMAGE = BASE_IMAGE
        assert as_dispatcher(folder, "bubblewrap", settings) == {"removed": False}  # plain removal: stuck
        assert (folder / "out" / "closed").exists() and (folder / "out" / "tasks").exists()
        assert as_dispatcher(folder, "container", settings) == {"removed": True}
        assert not folder.exists()
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)  # as root here, whatever is left


def dispatcher_job_folder(base: Path) -> Path:
    """An attempt folder as a non-root dispatcher leaves it: read-only inputs, out/ open to the job's user."""
    from leaderboard.worker.evaluator_run import make_read_only

    folder = base / "jobs" / "7" / "attempt-1"
    (folder / "bundle" / "t1").mkdir(parents=True)
    (folder / "bundle" / "t1" / "index.html").write_text("<p>page</p>")
    (folder / "out").mkdir()
    for path in [base / "jobs", *(p for p in (base / "jobs").rglob("*"))]:
        os.chown(path, DISPATCHER_UID, DISPATCHER_UID)
    make_read_only(folder / "bundle")
    (folder / "out").chmod(0o777)  # evaluator.container.prepare_job_dir as a non-root dispatcher
    return folder


def write_as_job_user(names: list[str], out: Path) -> None:
    """What a job that escaped its browser may leave: nested files, folders with no permission left."""
    script = ("mkdir -p /out/tasks/t1 /out/closed/deeper && echo '{}' > /out/tasks/t1/result.json"
              " && touch /out/closed/deeper/f /out/results.json && chmod 0 /out/closed/deeper && chmod 0500 /out/closed"
              " && chmod 0 /out/tasks")
    name = f"iwr-test-{uuid.uuid4().hex[:10]}"
    names.append(name)
    subprocess.run(["docker", "run", "--rm", "--name", name, "--network", "none", "--user",
                    f"{CONTAINER_UID}:{CONTAINER_UID}", "--volume", f"{out}:/out", BASE_IMAGE, "sh", "-c", script],
                   check=True, capture_output=True)


@contextmanager
def effective_user(uid: int, groups: list[int] | None = None):
    """This process as user and group ``uid`` (effective ids) with only ``groups`` besides, then root again.

    (The interpreter of this machine lives in root's home: no process of another user could start it.)
    """
    kept = os.getgroups()
    os.setgroups(groups or [])
    os.setegid(uid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(kept)


def dispatcher_user():
    """This process as the dispatcher's user, with the engine's socket group, as in compose."""
    socket = os.environ["DOCKER_HOST"].removeprefix("unix://")
    return effective_user(DISPATCHER_UID, [os.stat(socket).st_gid])


def as_dispatcher(folder: Path, sandbox: str, settings) -> dict:
    """``remove_job_folder(folder)`` as the dispatcher's user, with the container sandbox configured or not."""
    from leaderboard.worker.containers import remove_job_folder

    settings.EVALUATOR_SANDBOX = sandbox
    with dispatcher_user():
        assert os.geteuid() == DISPATCHER_UID
        removed = remove_job_folder(folder)
    return {"removed": removed}

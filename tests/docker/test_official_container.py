"""Protocol iwr-official in the container sandbox: a sample task scored in a real evaluator container through
the judge relay of the ``container-job`` launcher, against a scripted OpenAI-style judge on this machine.

The official image needs torch (not built here); the job needs only the relay's socket to ground and
judge, so the image is iwr/evaluator with the test's fixed stand-in for the visual models
(tests.evaluator.fake_judge.FixedModels, copied in as a module of its own) named by
IWR_OFFICIAL_VISUAL_FACTORY, the way the browser tests score.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from evaluator import container
from evaluator.bundle import make_bundle_zip
from tests.docker.test_job_containers import DISPATCHER_UID, dispatcher_user, effective_user
from tests.evaluator import fake_judge
from tests.evaluator.fake_judge import ScriptedJudge

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(2700)]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev" / "data.jsonl"
KEY = "sk-official-container-9c4e"
KEY_ENV = "IWR_TEST_JUDGE_KEY"
STAND_IN = "iwr/evaluator-stand-in-models:test"
FACTORY = "iwr_fixed_models:FixedModels"


@pytest.fixture(scope="module")
def stand_in_image(evaluator_image, tmp_path_factory) -> str:
    """iwr/evaluator plus the fixed visual models, importable from the evaluator's folder (/opt/iwr)."""
    context = tmp_path_factory.mktemp("stand-in")
    (context / "iwr_fixed_models.py").write_text(inspect.getsource(fake_judge.FixedModels))
    (context / "Dockerfile").write_text(f"FROM {evaluator_image}\nCOPY iwr_fixed_models.py /opt/iwr/\n")
    result = subprocess.run(["docker", "build", "-q", "--network", "none", "-t", STAND_IN, str(context)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return STAND_IN


def sample_job(tmp_path: Path) -> tuple[Path, str]:
    """A job folder of the sample benchmark's first task and its reference page, as the dispatcher builds it."""
    if not SAMPLE.is_file():
        pytest.fail(f"the sample benchmark is missing at {SAMPLE}: scripts/setup.sh builds it")
    key = json.loads(SAMPLE.read_text().splitlines()[0])["id"]
    pages = tmp_path / "pages"
    result = subprocess.run([sys.executable, "-m", "evaluator", "baselines", "--data", str(SAMPLE), "--out", str(pages),
                             "--kinds", "reference"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    job = tmp_path / "job"
    (job / "data").mkdir(parents=True)
    (job / "data" / SAMPLE.name).write_text(SAMPLE.read_text().splitlines()[0] + "\n")
    shutil.copytree(SAMPLE.parent / SAMPLE.stem / key, job / "data" / SAMPLE.stem / key)
    make_bundle_zip({key: pages / "reference" / key}, job / "bundle.zip")
    (job / "job.json").write_text(json.dumps({"data": f"data/{SAMPLE.name}", "bundle": "bundle.zip", "tasks": [key],
                                              "protocol": "iwr-official", "workers": 1}))
    return job, key


def docker_inspect(name: str) -> dict:
    result = subprocess.run(["docker", "inspect", name], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)[0]


def test_a_sample_task_is_judged_through_the_relay_and_the_key_never_enters_the_container(
        stand_in_image, tmp_path, docker_engine):
    """The launcher asks the scripted judge once, then the container grounds, asserts and grades through the
    relay's socket (requests > 0 beyond the preflight), with no network and no trace of the key in its
    environment, its command or job.json; the relay's counters are in results.json's judge record."""
    job, key = sample_job(tmp_path)
    name = f"iwr-official-probe-{os.getpid()}"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "DOCKER_HOST": docker_engine, KEY_ENV: KEY,
           "IWR_GENERATION_ALLOW_PLAIN_HTTP": "1", "IWR_OFFICIAL_VISUAL_FACTORY": FACTORY}
    with ScriptedJudge() as judge:
        command = [sys.executable, "-m", "evaluator", "container-job", str(job), "--image", stand_in_image,
                   "--name", name, "--keep-container", "--judge-dir", str(tmp_path / "judge"),
                   "--judge-base-url", judge.base_url, "--judge-model", "judge-1", "--grounding-model", "grounder-1",
                   "--judge-key-env", KEY_ENV, "--judge-cache", str(tmp_path / "cache"), "--time-limit", "1500"]
        try:
            proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
            inspected = docker_inspect(name)
        finally:
            subprocess.run(["docker", "rm", "--force", name], capture_output=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((job / "out" / "results.json").read_text())
    record = results["judge"]
    assert record["requests"] > 1 and record["complete"], record  # the preflight, then the job's own calls
    assert record["models"] == {"judge": "judge-1", "grounding": "grounder-1"} and record["host"] == "127.0.0.1"
    assert set(record["by_purpose"]) - {"preflight"}, record["by_purpose"]
    assert results["tasks"][key]["error"] is None
    assert len(judge.requests) == record["requests"]
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in judge.requests)

    assert inspected["HostConfig"]["NetworkMode"] == "none"
    assert not any(KEY in variable or KEY_ENV in variable for variable in inspected["Config"]["Env"])
    assert KEY not in json.dumps(inspected)
    mounts = {mount["Destination"]: mount for mount in inspected["Mounts"]}
    assert set(mounts) == {"/job", "/job/out", "/judge"} and mounts["/judge"]["RW"] is False
    job_json = (job / "job.json").read_text()
    assert KEY not in job_json and json.loads(job_json)["official"]["socket"] == "/judge/judge.sock"
    assert not (tmp_path / "judge").exists()  # the relay's folder is gone with the relay


PROBE = """import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('/judge/judge.sock')
    s.sendall(b'ping\\n')
    print(s.makefile().readline().strip())
except OSError as error:
    print(type(error).__name__)
"""
OTHER_UID = 10002  # a user of this host who is neither the launcher nor the container's


class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"pong " + self.rfile.readline())


def probe(command: list[str], image: str, name: str) -> str:
    """What a process in the job's container gets from /judge/judge.sock (its reply or the error's name)."""
    at = command.index(image)
    try:
        result = subprocess.run([*command[:at], "--entrypoint", container.PYTHON, image, "-c", PROBE],
                                capture_output=True, text=True, timeout=300)
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
    return result.stdout.strip() or result.stderr.strip()[-500:]


def without_group(command: list[str]) -> list[str]:
    at = command.index("--group-add")
    return command[:at] + command[at + 2:]


def test_a_non_root_launcher_lets_the_container_user_and_nobody_else_reach_the_relay(evaluator_image, tmp_path):
    """The compose dispatcher is uid 10000: the relay's socket stays its own, for its group, which the job's
    container user joins; that user without the group, and another user of the host, are refused."""
    base = Path(tempfile.mkdtemp(prefix="iwr-judge-access-", dir="/tmp"))  # noqa: S108 - reachable by both users
    server = None
    try:
        base.chmod(0o755)
        job, folder = base / "job", base / "judge"
        (job / "out").mkdir(parents=True)
        folder.mkdir(mode=0o700)
        for path in (job, job / "out", folder):
            os.chown(path, DISPATCHER_UID, DISPATCHER_UID)
        name = f"iwr-judge-probe-{os.getpid()}"
        with dispatcher_user():
            server = socketserver.ThreadingUnixStreamServer(str(folder / "judge.sock"), Echo)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            container.prepare_judge_folder(folder, folder / "judge.sock")
            command = container.run_command(job, evaluator_image, name, container.ContainerLimits(), judge_dir=folder)
            assert command[command.index("--group-add") + 1] == str(DISPATCHER_UID)
            answers = [probe(command, evaluator_image, name), probe(without_group(command), evaluator_image, name)]
        assert answers == ["pong ping", "PermissionError"]
        with effective_user(OTHER_UID), socket.socket(socket.AF_UNIX) as other:
            with pytest.raises(PermissionError):
                other.connect(str(folder / "judge.sock"))
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        shutil.rmtree(base, ignore_errors=True)


def test_as_root_the_socket_is_the_container_users_alone(evaluator_image, tmp_path):
    """A root launcher hands folder and socket to the container's user: it connects, another uid does not."""
    job, folder = tmp_path / "job", tmp_path / "judge"
    (job / "out").mkdir(parents=True)
    folder.mkdir(mode=0o700)
    name = f"iwr-judge-probe-root-{os.getpid()}"
    with socketserver.ThreadingUnixStreamServer(str(folder / "judge.sock"), Echo) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        container.prepare_judge_folder(folder, folder / "judge.sock")
        container.prepare_job_dir(job)
        command = container.run_command(job, evaluator_image, name, container.ContainerLimits(), judge_dir=folder)
        assert "--group-add" not in command
        other = [f"{OTHER_UID}:{OTHER_UID}" if word == f"{container.CONTAINER_UID}:{container.CONTAINER_UID}" else word
                 for word in command]
        answers = [probe(command, evaluator_image, name), probe(other, evaluator_image, name)]
        server.shutdown()
    assert answers == ["pong ping", "PermissionError"]

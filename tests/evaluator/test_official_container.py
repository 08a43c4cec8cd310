"""Protocol iwr-official with the container sandbox, without a container engine: the judge mounts of the
container's command, job.json's ``official`` object, and the ``container-job`` launcher run against a
scripted judge and a stand-in engine that records what it was given (the real engine runs it in
tests/docker/test_official_container.py)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import container
from evaluator.cli import JUDGE_UNUSABLE_EXIT, UsageError
from evaluator.commands.container_job import container_official, engine_environment
from evaluator.commands.job import official_settings, read_job
from tests.evaluator.canary import CANARY, SECRET_ENV
from tests.evaluator.fake_endpoint import Reply
from tests.evaluator.fake_judge import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-container-relay-key-93b1"
KEY_ENV = "IWR_TEST_JUDGE_KEY"
FIXED_MODELS = "tests.evaluator.fake_judge:FixedModels"
SUMS = {"model.safetensors": "ab" * 32}
OFFICIAL = {"socket": "/judge/judge.sock", "judge_model": "judge-1", "grounding_model": None,
            "host": "judge.example.org", "visual": {"weights": "/weights", "sha256": SUMS, "device": "cpu"}}


def volumes(command: list[str]) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command) if word == "--volume"]


@pytest.fixture
def no_engine(monkeypatch):
    monkeypatch.setattr(container, "engine_binary", lambda engine: "/usr/bin/true")
    monkeypatch.setattr(container, "chromium_sandbox_problem", lambda: None)


# --------------------------------------------------------------------------- the container's command


def test_an_official_job_container_gets_the_relay_folder_and_the_weights_read_only_and_nothing_else(
        tmp_path, monkeypatch, no_engine):
    """Exactly the job folder, out/, the relay's folder at /judge and the weights at /weights, both read-only;
    no variable but CONTAINER_ENV, whatever the launcher's environment holds."""
    for name, value in {**SECRET_ENV, KEY_ENV: KEY}.items():
        monkeypatch.setenv(name, value)
    judge, weights = tmp_path / "judge", tmp_path / "dinov2"
    command = container.run_command(tmp_path / "job", "iwr/evaluator", "job", container.ContainerLimits(),
                                    judge_dir=judge, weights_dir=weights)
    job = (tmp_path / "job").resolve()
    assert volumes(command) == [f"{job}:/job:ro", f"{job / 'out'}:/job/out:rw", f"{judge.resolve()}:/judge:ro",
                                f"{weights.resolve()}:/weights:ro"]
    assert [command[i + 1] for i, word in enumerate(command) if word in ("--env", "-e")] == [
        f"{k}={v}" for k, v in container.CONTAINER_ENV.items()]
    assert command[command.index("--network") + 1] == "none"
    assert KEY not in " ".join(command) and CANARY not in " ".join(command)
    assert "--group-add" not in command  # as root the socket is handed to the container's user instead
    plain = container.run_command(tmp_path / "job", "iwr/evaluator", "job", container.ContainerLimits())
    assert volumes(plain) == volumes(command)[:2]


def test_the_relay_socket_is_for_the_containers_user_alone(tmp_path, monkeypatch):
    """As root: folder and socket belong to the container's user, 0700 and 0600. Otherwise: the launcher's own,
    open to its group (the folder can be entered, not listed), which the container's user joins."""
    folder = tmp_path / "judge"
    folder.mkdir(mode=0o700)
    path = folder / "judge.sock"
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(path))
        if os.geteuid() == 0:
            container.prepare_judge_folder(folder, path)
            assert (folder.stat().st_uid, path.stat().st_uid) == (container.CONTAINER_UID,) * 2
            assert (stat.S_IMODE(folder.stat().st_mode), stat.S_IMODE(path.stat().st_mode)) == (0o700, 0o600)
        monkeypatch.setattr(container.os, "geteuid", lambda: 1000)
        container.prepare_judge_folder(folder, path)
        assert (stat.S_IMODE(folder.stat().st_mode), stat.S_IMODE(path.stat().st_mode)) == (0o710, 0o660)
        assert container._judge_access() == ["--group-add", str(os.getegid())]


# --------------------------------------------------------------------------- job.json


def job_dir(tmp_path: Path, **fields) -> Path:
    (tmp_path / "data").mkdir(parents=True)
    (tmp_path / "data" / "data.jsonl").write_text("")
    (tmp_path / "bundle").mkdir()
    job = {"data": "data/data.jsonl", "bundle": "bundle", "protocol": "iwr-official", "official": OFFICIAL, **fields}
    (tmp_path / "job.json").write_text(json.dumps(job))
    return tmp_path


def test_a_well_formed_official_object_gives_the_judge_settings_the_job_scores_with(tmp_path):
    job = read_job(job_dir(tmp_path))
    settings = official_settings(job["official"])
    assert settings == {"socket": "/judge/judge.sock", "judge_model": "judge-1", "grounding_model": "judge-1",
                        "host": "judge.example.org", "models": {"judge": "judge-1", "grounding": "judge-1"},
                        "visual": {"weights": "/weights", "sha256": SUMS, "device": "cpu"}}
    factory = read_job(job_dir(tmp_path / "f", official={**OFFICIAL, "visual": {"factory": FIXED_MODELS}}))
    assert official_settings(factory["official"])["visual"] == {"factory": FIXED_MODELS}


def changed(**fields) -> dict:
    return {**OFFICIAL, **fields}


@pytest.mark.parametrize(("fields", "message"), [
    ({"protocol": "iwr-det"}, "field 'official' is only for protocol iwr-official, not iwr-det"),
    ({"official": None}, "protocol iwr-official needs the field 'official'"),
    ({"official": "judge.sock"}, "field 'official' must be an object or null"),
    ({"official": changed(api_key=KEY)}, "unknown field(s) official.api_key"),
    ({"official": changed(socket="/tmp/judge.sock")}, "'official.socket' must be an absolute path under /judge/"),
    ({"official": changed(socket="/judge/../job/out/x.sock")}, "'official.socket'"),
    ({"official": changed(socket="/judge")}, "'official.socket'"),
    ({"official": changed(socket="judge/judge.sock")}, "'official.socket'"),
    ({"official": changed(judge_model="")}, "'official.judge_model' must be the judge's model id"),
    ({"official": changed(grounding_model=7)}, "'official.grounding_model' must be a model id or null"),
    ({"official": {k: v for k, v in OFFICIAL.items() if k != "host"}}, "'official.host'"),
    ({"official": changed(visual=None)}, "'official.visual' must be an object"),
    ({"official": changed(visual={"weights": "/srv/dinov2"})}, "'official.visual.weights' must be /weights"),
    ({"official": changed(visual={"weights": "/weights", "sha256": {"model.safetensors": "12"}})},
     "'official.visual.sha256' must map file names to SHA-256 sums"),
    ({"official": changed(visual={"weights": "/weights", "device": "tpu"})}, "'official.visual.device'"),
    ({"official": changed(visual={"factory": "os.system('x')"})}, "'official.visual.factory' must read module"),
    ({"official": changed(visual={"weights": "/weights", "token": KEY})}, "unknown field(s) official.visual.token"),
])
def test_every_bad_official_field_is_one_line_naming_it(tmp_path, fields, message):
    with pytest.raises(UsageError) as caught:
        read_job(job_dir(tmp_path, **fields))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_job_whose_relay_socket_is_missing_stops_before_scoring(tmp_path, capsys):
    from evaluator.cli import main

    assert main(["job", str(job_dir(tmp_path))]) == 2
    assert "error: no judge relay listens at /judge/judge.sock" in capsys.readouterr().err
    assert not (tmp_path / "out" / "results.json").exists()


# --------------------------------------------------------------------------- the launcher


def test_the_launcher_tells_the_container_where_things_are_as_it_sees_them(tmp_path):
    """The weights are named by their mount point, the socket by /judge; the host folders are only mounted."""
    from argparse import Namespace

    args = Namespace(judge_socket=str(tmp_path / "j" / "judge.sock"), judge_model="judge-1", grounding_model="g-2",
                     judge_base_url="https://judge.example.org/v1", official_visual=json.dumps(
                         {"weights": "/srv/dinov2", "sha256": SUMS, "device": "cuda"}))
    official, weights = container_official(args)
    assert official == {"socket": "/judge/judge.sock", "judge_model": "judge-1", "grounding_model": "g-2",
                        "host": "judge.example.org", "visual": {"weights": "/weights", "sha256": SUMS,
                                                                "device": "cuda"}}
    assert weights == Path("/srv/dinov2")
    assert engine_environment(KEY_ENV, {KEY_ENV: KEY, "DOCKER_HOST": "unix:///d.sock"}) == {
        "DOCKER_HOST": "unix:///d.sock"}


STAND_IN_ENGINE = """#!/bin/sh
echo "$@" >> {calls}
if [ "$1" = run ]; then
  env > {env}
  echo '{{"protocol": "iwr-official-1", "judge": {{"host": "127.0.0.1"}}}}' > {out}/results.json
  exit {status}
fi
"""


def launch(tmp_path: Path, judge: ScriptedJudge | None, *extra: str, status: int = 0):
    """``container-job`` on a job folder, with an engine that records its calls and, as the container,
    writes a results.json without the relay's counters and exits with ``status``."""
    job = tmp_path / "job"
    (job / "out").mkdir(parents=True)
    (job / "job.json").write_text(json.dumps({"data": "data/data.jsonl", "bundle": "bundle",
                                              "protocol": "iwr-official"}))
    engine = tmp_path / "engine"
    engine.write_text(STAND_IN_ENGINE.format(calls=tmp_path / "calls", env=tmp_path / "engine-env",
                                             out=job / "out", status=status))
    engine.chmod(0o755)
    judge_flags = ["--judge-base-url", judge.base_url, "--judge-model", "judge-1"] if judge else []
    command = [sys.executable, "-m", "evaluator", "container-job", str(job), "--engine", str(engine),
               "--name", "iwr-eval-9", "--judge-dir", str(tmp_path / "j"), "--judge-key-env", KEY_ENV,
               "--judge-cache", str(tmp_path / "cache"), *judge_flags, *extra]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), KEY_ENV: KEY, "IWR_GENERATION_ALLOW_PLAIN_HTTP": "1",
           "IWR_OFFICIAL_VISUAL_FACTORY": FIXED_MODELS, **SECRET_ENV}
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    calls = tmp_path / "calls"
    return proc, calls.read_text() if calls.exists() else ""


def sandbox_works() -> None:
    problem = container.chromium_sandbox_problem()
    if problem:
        pytest.skip(f"the launcher refuses to start containers here: {problem}")


def test_the_launcher_runs_the_container_beside_the_relay_and_records_its_counters(tmp_path):
    """One preflight through the relay, then the engine: /judge mounted read-only, job.json's official object
    written, the key in neither the engine's arguments, its environment nor job.json; the relay's counters
    land in results.json; the container and the relay's folder are gone afterwards."""
    sandbox_works()
    with ScriptedJudge() as judge:
        proc, calls = launch(tmp_path, judge, "--label", "org.iwr-bench.evaluation=9", "--stop-timeout", "10")
    assert proc.returncode == 0, proc.stderr[-2000:]
    run, remove = calls.splitlines()
    assert run.startswith("run --label org.iwr-bench.evaluation=9 --stop-timeout 10 --name iwr-eval-9 ")
    assert f"--volume {(tmp_path / 'j').resolve()}:/judge:ro" in run and "/weights" not in run
    assert remove == "rm --force iwr-eval-9"
    engine_env = (tmp_path / "engine-env").read_text()
    job_json = (tmp_path / "job" / "job.json").read_text()
    for text in (calls, engine_env, job_json):
        assert KEY not in text and CANARY in engine_env  # the engine client has the launcher's other variables
    assert KEY_ENV not in engine_env
    assert json.loads(job_json)["official"] == {"socket": "/judge/judge.sock", "judge_model": "judge-1",
                                                "grounding_model": None, "host": "127.0.0.1",
                                                "visual": {"factory": FIXED_MODELS, "device": "cpu"}}
    record = json.loads((tmp_path / "job" / "out" / "results.json").read_text())["judge"]
    assert record["requests"] == 1 and record["by_purpose"] == {"preflight": {"asked": 1, "cache_hits": 0}}
    assert len(judge.requests) == 1 and judge.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert not (tmp_path / "j").exists()


def test_the_launcher_passes_the_containers_status_on_and_can_leave_it_to_the_caller(tmp_path):
    sandbox_works()
    with ScriptedJudge() as judge:
        proc, calls = launch(tmp_path, judge, "--keep-container", status=3)
    assert proc.returncode == 3 and "rm " not in calls


@pytest.mark.parametrize(("configure", "message"), [
    (None, "set --judge-base-url URL"),
    ([Reply(401, {"error": {"message": "bad key"}})], f"set {KEY_ENV} to a valid key"),
    ([Reply(503, {"error": "down"}, headers={"Retry-After": "0"})] * 5, "is not usable"),
])
def test_an_unusable_judge_stops_the_launcher_in_one_line_before_any_container(tmp_path, configure, message):
    if configure is None:
        proc, calls = launch(tmp_path, None)
    else:
        with ScriptedJudge(script=list(configure)) as judge:
            proc, calls = launch(tmp_path, judge, "--judge-budget-requests", "9")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == JUDGE_UNUSABLE_EXIT and len(errors) == 1 and message in errors[0], proc.stderr
    assert calls == ""  # the engine was never called
    assert "official" not in json.loads((tmp_path / "job" / "job.json").read_text())
    assert not (tmp_path / "j").exists()

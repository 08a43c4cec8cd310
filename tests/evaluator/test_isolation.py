"""The allow-lists of evaluator/isolation.py and how bubblewrap, Chromium and the container use them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluator import container, isolation, sandbox
from evaluator.browser import BrowserError, check_sandbox_wanted
from tests.evaluator.canary import CANARY, SECRET_ENV

ROOT = Path(__file__).resolve().parents[2]


def test_the_job_environment_is_the_allow_list_whatever_the_caller_holds():
    source = {**SECRET_ENV, "PATH": "/root/bin:/usr/bin", "LANG": "de_DE.UTF-8", "PYTHONPATH": "/elsewhere",
              "IWR_CHROMIUM": "/usr/lib/chromium/chromium", "SHELL": "/bin/bash", "LD_PRELOAD": "/tmp/x.so"}
    env = isolation.job_environment("/tmp/home", "/tmp", "bubblewrap", source=source, extra=dict(source))
    assert set(env) <= set(isolation.FIXED_ENV) | set(isolation.PASSED_ENV) | set(isolation.JOB_ENV)
    assert CANARY not in repr(env)
    assert env["PATH"] == isolation.PATH and env["LANG"] == "C.UTF-8" and env["PYTHONPATH"] == str(ROOT)
    assert env["IWR_CHROMIUM"] == "/usr/lib/chromium/chromium" and "TESSDATA_PREFIX" not in env  # password in URL
    assert (env["HOME"], env["TMPDIR"], env["IWR_SANDBOX_ACTIVE"]) == ("/tmp/home", "/tmp", "bubblewrap")
    browser = isolation.browser_environment("/p/home", "/p/home")
    assert set(browser) == {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR"}


def test_the_launcher_environment_holds_nothing_secret_and_does_not_claim_a_sandbox():
    source = {**SECRET_ENV, "IWR_SANDBOX": "bubblewrap", "DOCKER_HOST": "unix:///run/docker.sock", "HOME": "/root"}
    env = isolation.launcher_environment("/tmp/x", source=source)
    assert CANARY not in repr(env) and "IWR_SANDBOX_ACTIVE" not in env
    assert env["IWR_SANDBOX"] == "bubblewrap" and env["DOCKER_HOST"] == "unix:///run/docker.sock"
    assert env["HOME"] == env["TMPDIR"] == "/tmp/x" and env["PYTHONPATH"] == str(ROOT)


def test_every_allow_list_entry_has_a_reason_and_secrets_are_refused():
    for reasons in (isolation.PASSED_ENV, isolation.SYSTEM_PATHS, isolation.LAUNCHER_ENV,
                    {k: v[1] for k, v in isolation.FIXED_ENV.items()}):
        assert all(isinstance(why, str) and len(why) > 10 for why in reasons.values())
    with pytest.raises(isolation.IsolationError, match="not on the job's allow-list"):
        isolation.check_environment({"DJANGO_SECRET_KEY": "x"})
    with pytest.raises(isolation.IsolationError, match="URL with a password"):
        isolation.check_environment({"TESSDATA_PREFIX": "postgres://u:p@h/db"})


def test_bubblewrap_starts_from_nothing_and_binds_only_the_lists(tmp_path: Path):
    out = tmp_path / "out"
    command = sandbox.bwrap_command(["true"], [out], readable=sandbox.runtime_paths(), env={"PATH": isolation.PATH})
    pairs = {(command[i], command[i + 1]) for i in range(len(command) - 1)}
    assert "--clearenv" in command and ("--ro-bind", "/") not in pairs and ("--remount-ro", "/") in pairs
    bound = {command[i + 1] for i, arg in enumerate(command) if arg in ("--ro-bind", "--bind")}
    assert str(out) in bound and str(ROOT / "evaluator") in bound
    assert not {str(ROOT), str(ROOT / "var"), os.path.expanduser("~"), "/run", "/var/run", "/etc"} & bound
    for path in bound:
        assert path in isolation.SYSTEM_PATHS or not path.startswith(("/etc", "/var/")), path
    if os.geteuid() == 0:
        assert ("--cap-drop", "ALL") in pairs and ("--cap-add", "CAP_SYS_ADMIN") not in pairs


def test_the_symlinked_virtualenv_is_recreated_as_a_link(tmp_path: Path):
    (tmp_path / "real" / "bin").mkdir(parents=True)
    (tmp_path / "real" / "bin" / "python3.11").write_text("")
    (tmp_path / "real" / "bin" / "python").symlink_to("python3.11")
    (tmp_path / "checkout").mkdir()
    (tmp_path / "checkout" / ".venv").symlink_to(tmp_path / "real")
    plan = isolation.bind_order([(tmp_path / "checkout" / ".venv" / "bin" / "python", "--ro-bind")])
    args = " ".join(plan.args)
    assert f"--symlink {tmp_path / 'real'} {tmp_path / 'checkout' / '.venv'}" in args
    assert f"--symlink python3.11 {tmp_path / 'real' / 'bin' / 'python'}" in args
    assert f"--ro-bind {tmp_path / 'real' / 'bin' / 'python3.11'}" in args
    assert f"--ro-bind {tmp_path / 'checkout'} " not in args


def test_chromium_without_its_sandbox_is_refused_with_the_reason(monkeypatch):
    monkeypatch.delenv("IWR_ALLOW_UNSANDBOXED", raising=False)
    with pytest.raises(BrowserError, match="IWR_ALLOW_UNSANDBOXED"):
        check_sandbox_wanted(False)
    check_sandbox_wanted(True)
    monkeypatch.setenv("IWR_CHROMIUM_SANDBOX", "0")
    with pytest.raises(BrowserError, match="no longer supported"):
        check_sandbox_wanted(True)


def test_no_production_path_turns_chromium_s_sandbox_off():
    sources = [p for folder in ("evaluator", "leaderboard", "docker", "scripts") for p in (ROOT / folder).rglob("*")
               if p.is_file() and p.suffix in (".py", ".sh", ".yaml", ".json", "") and "__pycache__" not in p.parts]
    offenders = [str(p) for p in sources if "--no-sandbox" in p.read_text(errors="replace")]
    assert offenders == []


def sys_dir(tmp_path: Path, **values) -> Path:
    for name, value in values.items():
        path = tmp_path / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{value}\n")
    return tmp_path


def test_the_container_launcher_refuses_a_kernel_without_user_namespaces(tmp_path: Path, monkeypatch):
    assert container.chromium_sandbox_problem(sys_dir(tmp_path / "ok", user__max_user_namespaces=1000)) is None
    assert "max_user_namespaces=0" in container.chromium_sandbox_problem(
        sys_dir(tmp_path / "off", user__max_user_namespaces=0))
    assert "AppArmor" in container.chromium_sandbox_problem(
        sys_dir(tmp_path / "aa", kernel__apparmor_restrict_unprivileged_userns=1))
    monkeypatch.setattr(container, "engine_binary", lambda engine: "/usr/bin/true")
    monkeypatch.setattr(container, "chromium_sandbox_problem", lambda: "user namespaces are disabled")
    with pytest.raises(container.ContainerSandboxError, match="Chromium's own sandbox cannot work here"):
        container.run_command(tmp_path, "iwr/evaluator", "job", container.ContainerLimits())
    (tmp_path / "out").mkdir(exist_ok=True)
    outcome = container.run_job(tmp_path, image="iwr/evaluator")
    assert outcome.reason and "user namespaces are disabled" in outcome.reason


def test_the_container_gets_the_job_folder_its_profile_and_no_variable_of_the_dispatcher(tmp_path, monkeypatch):
    monkeypatch.setattr(container, "engine_binary", lambda engine: "/usr/bin/true")
    monkeypatch.setattr(container, "chromium_sandbox_problem", lambda: None)
    for name, value in SECRET_ENV.items():
        monkeypatch.setenv(name, value)
    command = container.run_command(tmp_path, "iwr/evaluator", "job", container.ContainerLimits())
    assert CANARY not in " ".join(command)
    envs = [command[i + 1] for i, arg in enumerate(command) if arg in ("--env", "-e")]
    assert envs == [f"{k}={v}" for k, v in container.CONTAINER_ENV.items()]
    assert f"seccomp={container.SECCOMP_PROFILE}" in command and container.SECCOMP_PROFILE.is_file()
    volumes = [command[i + 1].split(":")[0] for i, arg in enumerate(command) if arg == "--volume"]
    assert all(Path(v) in (tmp_path.resolve(), tmp_path.resolve() / "out") for v in volumes)


def test_job_and_fill_containers_run_under_their_own_wall_clock_and_the_fill_carries_labels(tmp_path, monkeypatch):
    """Inside the engine: the first process (tini) runs the job under timeout, so the container ends at its
    limit with nobody watching; the OCR-fill container the same, with the labels the sweeps look for."""
    monkeypatch.setattr(container, "engine_binary", lambda engine: "/usr/bin/true")
    monkeypatch.setattr(container, "chromium_sandbox_problem", lambda: None)
    command = container.run_command(tmp_path, "iwr/evaluator", "job", container.ContainerLimits(wall_clock_s=42))
    at = command.index("iwr/evaluator")
    assert command[at - 2:at] == ["--entrypoint", "/usr/bin/tini"]
    assert command[at + 1:] == ["--", "/usr/bin/timeout", "--kill-after=10s", "42s", *container.JOB_COMMAND]
    labels = {"org.iwr-bench.evaluation": "7", "org.iwr-bench.deadline": "123"}
    fill = container.fill_command(tmp_path / "data.jsonl", tmp_path / "cache", "iwr/evaluator", "fill",
                                  container.ContainerLimits(), labels=labels)
    assert [fill[i + 1] for i, part in enumerate(fill) if part == "--label"] == [
        "org.iwr-bench.evaluation=7", "org.iwr-bench.deadline=123"]
    at = fill.index("iwr/evaluator")
    assert fill[at + 1:at + 5] == ["--", "/usr/bin/timeout", "--kill-after=10s", "1020s"]
    assert fill[at + 5:at + 9] == [container.PYTHON, "-m", "evaluator", "ocr-cache"]

"""Run one scoring job in a fresh evaluator container (the ``container`` sandbox backend).

The dispatcher hands the container a job directory and nothing else:

    JOB/job.json     what to score (see :mod:`evaluator.commands.job`)
    JOB/data/        the task data of one split (mounted read-only)
    JOB/bundle*      the submitted bundle (read-only)
    JOB/out/         results and artifacts: the only writable mount

and, read-only at ``/ocr-cache``, the reference OCR cache every job shares. Jobs run untrusted
pages, so none may write readings other jobs would trust (see ``OcrCache``): the cache is filled
by a container of its own (:func:`fill_command`) that mounts it writable but gets only the task
data, no bundle, and reads nothing but the reference checkpoints.

The container has no network at all, a read-only root filesystem with a small ``/tmp``,
a non-root user, every capability dropped, ``no-new-privileges``, and memory (swap
disabled), process and CPU limits. Its wall-clock limit is its own (:func:`wall_clock`): the
container's first process runs the job under ``timeout``, so the container ends at its limit even
when whoever started it was killed and no sweep runs; so does the OCR-fill container. It is always
removed afterwards, whatever happened, and the outcome says why it ended. It gets no host path but
the job folder (and the OCR cache, read-only) and no environment variable of the dispatcher's:
only the image's own settings and :data:`CONTAINER_ENV`.

A job of protocol iwr-official gets two mounts more, both read-only: the folder of the judge relay's
Unix socket at ``/judge`` (the relay, which holds the judge's key, runs outside the container:
:mod:`evaluator.commands.container_job`) and the visual models' weights at ``/weights``. The socket is
the container's only way out; :func:`prepare_judge_folder` lets the container's user, and no other
user of the host, connect to it.

Chromium keeps its own sandbox in the container: the evaluator runs as a non-root user, and the
seccomp profile ``docker/seccomp-evaluator.json`` lets it create the user namespaces that sandbox
is made of (the engine's default profile forbids them), while refusing mounts and other calls no
job needs. Where user namespaces are unavailable, :func:`run_command` refuses to start a job
rather than run Chromium without its sandbox (:func:`chromium_sandbox_problem` says why).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

CONTAINER_UID = 10001  # the `evaluator` user of docker/Dockerfile.evaluator
DEFAULT_IMAGE = "iwr/evaluator:latest"
OCR_CACHE_MOUNT = "/ocr-cache"
JUDGE_MOUNT = "/judge"  # the judge relay's socket folder (protocol iwr-official)
WEIGHTS_MOUNT = "/weights"  # the official visual models' weights
TASK_SET = "/task-set"  # where the filling container sees the task set
PYTHON = "/opt/venv/bin/python"  # the image's virtualenv
SECCOMP_PROFILE = Path(__file__).resolve().parents[1] / "docker" / "seccomp-evaluator.json"
# The only variables the dispatcher sets in a job; everything else comes from the image (Dockerfile.evaluator).
CONTAINER_ENV = {"HOME": "/tmp"}  # noqa: S108 - the container's private tmpfs: Chromium keeps small caches in HOME
FILL_TIME_S = 900  # a fill starts no new picture after this; the next job's fill goes on
FILL_FINISH_S = 120  # the picture a fill is reading at FILL_TIME_S: its container's own limit is the sum
INIT = "/usr/bin/tini"  # the image's first process: passes signals on, reaps what the job leaves
TIMEOUT = "/usr/bin/timeout"  # GNU coreutils, in every Debian image
WALL_CLOCK_GRACE_S = 10  # SIGTERM at the limit, SIGKILL this much later (Chromium and videos wind down)
TIMED_OUT_STATUS = 124  # timeout's exit status once the limit was reached (137 when it had to kill)
JOB_COMMAND = (PYTHON, "-m", "evaluator", "job", "/job")  # the image's own entry point, under its wall clock

log = logging.getLogger(__name__)


class ContainerSandboxError(RuntimeError):
    """The container could not keep Chromium's own sandbox; the job is refused, and the message says why."""


@dataclass(frozen=True)
class ContainerLimits:
    memory: str = "2g"          # Chromium + one page + OCR stay well under this on the sample tasks
    cpus: float = 2.0           # one job may use the machine's two cores; more jobs queue
    pids: int = 512             # Chromium spawns tens of processes; a fork bomb stops here
    wall_clock_s: float = 3600  # a whole split of 113 tasks finishes in minutes; an hour means a hang
    tmp_size: str = "512m"      # Chromium's profile and caches live in /tmp
    shm_size: str = "512m"      # Chromium's renderers share memory through /dev/shm


@dataclass
class ContainerOutcome:
    exit_code: int | None
    oom_killed: bool = False
    timed_out: bool = False
    log_tail: list[str] = field(default_factory=list)
    engine_error: str | None = None

    @property
    def reason(self) -> str | None:
        """None when the job ran to completion; otherwise why it did not, for a person to act on."""
        if self.engine_error:
            return f"container engine error: {self.engine_error}"
        if self.timed_out:
            return "time limit exceeded: the evaluator container was stopped"
        if self.oom_killed:
            return "memory limit exceeded: the evaluator container was killed"
        if self.exit_code not in (0, None):
            tail = self.log_tail[-1] if self.log_tail else "no output"
            return f"evaluator container exited with status {self.exit_code}: {tail}"
        return None


def engine_binary(engine: str) -> str:
    path = shutil.which(engine)
    if not path:
        raise FileNotFoundError(f"container engine {engine!r} not found on PATH")
    return path


def chromium_sandbox_problem(sys_dir: Path = Path("/proc/sys")) -> str | None:
    """Why Chromium could not build its sandbox in an evaluator container on this kernel, or None.

    Chromium's sandbox is made of unprivileged user namespaces: the kernel must allow them (and
    AppArmor must not restrict them), and the container needs this project's seccomp profile.
    """
    if not SECCOMP_PROFILE.is_file():
        return f"the seccomp profile {SECCOMP_PROFILE} is missing"
    checks = (("user/max_user_namespaces", lambda v: v > 0,
               "user namespaces are disabled (user.max_user_namespaces=0)"),
              ("kernel/unprivileged_userns_clone", lambda v: v == 1,
               "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0)"),
              ("kernel/apparmor_restrict_unprivileged_userns", lambda v: v == 0,
               "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"))
    for name, fine, reason in checks:
        try:
            value = int((sys_dir / name).read_text().strip())
        except (OSError, ValueError):
            continue  # not a setting of this kernel: nothing restricts
        if not fine(value):
            return reason
    return None


def check_chromium_sandbox() -> None:
    """Refuse to start a job whose Chromium would have to run without its sandbox, saying why."""
    problem = chromium_sandbox_problem()
    if problem:
        raise ContainerSandboxError(f"refusing to score in a container: Chromium's own sandbox cannot work here "
                                    f"({problem}), and untrusted pages never run without it")


def run_command(job_dir: Path, image: str, name: str, limits: ContainerLimits, engine: str = "docker",
                ocr_cache: Path | None = None, judge_dir: Path | None = None,
                weights_dir: Path | None = None) -> list[str]:
    """The exact ``docker run`` (or podman) command for this job, with every isolation flag.

    ``judge_dir`` (the judge relay's socket folder) and ``weights_dir`` are an official job's, both
    read-only: connecting to a Unix socket writes nothing to its file system.
    Raises ContainerSandboxError when Chromium could not keep its sandbox in the container.
    """
    check_chromium_sandbox()
    job_dir = job_dir.resolve()
    cache = ["--volume", f"{Path(ocr_cache).resolve()}:{OCR_CACHE_MOUNT}:ro"] if ocr_cache else []
    judge = ["--volume", f"{Path(judge_dir).resolve()}:{JUDGE_MOUNT}:ro", *_judge_access()] if judge_dir else []
    weights = ["--volume", f"{Path(weights_dir).resolve()}:{WEIGHTS_MOUNT}:ro"] if weights_dir else []
    return [
        engine_binary(engine), "run", "--name", name, *_isolation(limits),
        "--user", f"{CONTAINER_UID}:{CONTAINER_UID}",
        "--volume", f"{job_dir}:/job:ro",
        "--volume", f"{job_dir / 'out'}:/job/out:rw",
        *cache, *judge, *weights,
        "--entrypoint", INIT, image, "--", *wall_clock(limits.wall_clock_s), *JOB_COMMAND,
    ]


def prepare_judge_folder(folder: Path, socket: Path) -> None:
    """Let the container's user, and no other user of the host, connect to the relay's ``socket`` in ``folder``.

    As root, the folder and the socket go to the container's user (still 0700 and 0600: the relay, as
    root, keeps serving and removing them). Otherwise the launcher cannot give them away: they stay
    its own, open to its group only (folder: enter, not list), and the container's user joins that
    group (:func:`_judge_access`), in a container where nothing else of the host is mounted.
    """
    if os.geteuid() == 0:
        for path in (folder, socket):
            os.chown(path, CONTAINER_UID, CONTAINER_UID)
        folder.chmod(0o700)
        socket.chmod(0o600)
    else:
        folder.chmod(0o710)
        socket.chmod(0o660)


def _judge_access() -> list[str]:
    # The group of prepare_judge_folder's non-root case; as root the socket is the container user's own.
    return [] if os.geteuid() == 0 else ["--group-add", str(os.getegid())]


def wall_clock(limit_s: float) -> list[str]:
    """The command prefix that ends a container's job at ``limit_s`` from inside the container: SIGTERM
    to the job's whole process group, SIGKILL :data:`WALL_CLOCK_GRACE_S` later; the container's first
    process then exits, and the engine ends every process left in it. Nothing outside need be alive."""
    return [TIMEOUT, f"--kill-after={WALL_CLOCK_GRACE_S}s", f"{max(1, int(limit_s + 0.999))}s"]


def label_args(labels: dict[str, str] | None) -> list[str]:
    return [word for name, value in (labels or {}).items() for word in ("--label", f"{name}={value}")]


def fill_command(data_path: Path, ocr_cache: Path, image: str, name: str, limits: ContainerLimits,
                 protocol: str = "iwr-det", engine: str = "docker", labels: dict[str, str] | None = None) -> list[str]:
    """``docker run --detach`` of a container that reads the reference checkpoints of ``data_path`` (a
    task set's data.jsonl) into ``ocr_cache``: the only container that may write the cache, so it gets
    the task data alone. It removes itself when done, and ends at its own wall clock (FILL_TIME_S +
    FILL_FINISH_S); ``labels`` (the job's, leaderboard/worker/containers.py) let the sweeps find it."""
    data_path = data_path.resolve()
    return [
        engine_binary(engine), "run", "--detach", "--rm", "--name", name, *label_args(labels), *_isolation(limits),
        "--user", _cache_owner(),
        # The task set alone (data.jsonl and its folder named after it), not the job folder with the bundle.
        "--volume", f"{data_path}:{TASK_SET}/{data_path.name}:ro",
        "--volume", f"{data_path.parent / data_path.stem}:{TASK_SET}/{data_path.stem}:ro",
        "--volume", f"{Path(ocr_cache).resolve()}:{OCR_CACHE_MOUNT}:rw",
        "--entrypoint", INIT, image, "--", *wall_clock(FILL_TIME_S + FILL_FINISH_S),
        PYTHON, "-m", "evaluator", "ocr-cache", "--data", f"{TASK_SET}/{data_path.name}", "--dir", OCR_CACHE_MOUNT,
        "--protocol", protocol, "--workers", str(max(1, int(limits.cpus))), "--time-limit", str(FILL_TIME_S),
    ]


def start_fill(data_path: Path, ocr_cache: Path, image: str, name: str, limits: ContainerLimits,
               protocol: str = "iwr-det", engine: str = "docker", labels: dict[str, str] | None = None) -> bool:
    """Start filling the cache beside a job (which reads whatever is there by then); never raises:
    a cache not filled costs time, not scores."""
    try:
        prepare_ocr_cache(ocr_cache)
        done = subprocess.run(fill_command(data_path, ocr_cache, image, name, limits, protocol, engine, labels),
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("OCR cache fill not started: %s", exc)
        return False
    if done.returncode != 0:
        log.warning("OCR cache fill not started: %s", (done.stderr.strip().splitlines() or ["?"])[-1])
    return done.returncode == 0


def prepare_ocr_cache(directory: Path) -> None:
    """The cache folder, writable by the filling container's user and readable by every job's."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(directory, CONTAINER_UID, CONTAINER_UID)
    Path(directory).chmod(0o755)


def _cache_owner() -> str:
    # The caller's own user owns the cache folder; as root, the image's unprivileged user does instead.
    return f"{CONTAINER_UID}:{CONTAINER_UID}" if os.geteuid() == 0 else f"{os.getuid()}:{os.getgid()}"


def _isolation(limits: ContainerLimits) -> list[str]:
    return [
        "--network", "none",
        "--read-only",
        "--tmpfs", f"/tmp:rw,exec,nosuid,nodev,size={limits.tmp_size}",  # noqa: S108 - the container's own tmpfs
        "--shm-size", limits.shm_size,
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--security-opt", f"seccomp={SECCOMP_PROFILE}",
        "--memory", limits.memory, "--memory-swap", limits.memory,
        "--pids-limit", str(limits.pids),
        "--cpus", str(limits.cpus),
        *(arg for name, value in CONTAINER_ENV.items() for arg in ("--env", f"{name}={value}")),
    ]


def prepare_job_dir(job_dir: Path) -> None:
    """Make ``out/`` writable for the container's user and nothing else."""
    out = job_dir / "out"
    out.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(out, CONTAINER_UID, CONTAINER_UID)
    else:
        out.chmod(0o777)


def run_job(job_dir: Path, image: str = DEFAULT_IMAGE, limits: ContainerLimits | None = None,
            engine: str = "docker", ocr_cache: Path | None = None) -> ContainerOutcome:
    """Run the job to completion (or to a limit) and remove the container; never raises for the job's faults."""
    limits = limits or ContainerLimits()
    name = f"iwr-job-{uuid.uuid4().hex[:12]}"
    try:
        prepare_job_dir(job_dir)
        command = run_command(job_dir, image, name, limits, engine, ocr_cache)
    except (OSError, FileNotFoundError, ContainerSandboxError) as exc:
        return ContainerOutcome(exit_code=None, engine_error=str(exc))
    try:
        return _run_and_inspect(command, name, limits, engine)
    finally:
        subprocess.run([engine_binary(engine), "rm", "--force", "--volumes", name], capture_output=True)


def _run_and_inspect(command: list[str], name: str, limits: ContainerLimits, engine: str) -> ContainerOutcome:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=limits.wall_clock_s)
        timed_out = False
    except subprocess.TimeoutExpired as exc:
        subprocess.run([engine_binary(engine), "kill", name], capture_output=True)
        proc = subprocess.CompletedProcess(command, None, _text(exc.stdout), _text(exc.stderr))
        timed_out = True
    state = inspect_state(name, engine)
    if state is None and proc.returncode == 125:  # the engine could not even start the container
        lines = (proc.stderr or "").strip().splitlines()
        return ContainerOutcome(exit_code=None, engine_error=lines[-1] if lines else "could not start the container")
    tail = ((proc.stdout or "") + (proc.stderr or "")).strip().splitlines()[-20:]
    exit_code = state.get("ExitCode", proc.returncode) if state else proc.returncode
    timed_out = timed_out or exit_code == TIMED_OUT_STATUS  # the container's own wall clock ended it
    # 137 = killed by SIGKILL: with no wall-clock kill, that is the kernel's OOM killer in the cgroup.
    oom_killed = bool(state and state.get("OOMKilled")) or (exit_code == 137 and not timed_out)
    return ContainerOutcome(exit_code=exit_code, oom_killed=oom_killed, timed_out=timed_out, log_tail=tail)


def inspect_state(name: str, engine: str) -> dict | None:
    result = subprocess.run([engine_binary(engine), "inspect", "--format", "{{json .State}}", name],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        return None


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value

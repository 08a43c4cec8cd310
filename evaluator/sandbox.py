"""Process sandbox for one scoring job: the evaluator process that launches Chromium.

Backends (chosen by name, see :data:`BACKENDS`):

- ``bubblewrap`` (default): ``bwrap`` with its own network namespace (no network at all,
  not even loopback to the host), its own pid namespace, fresh ``/tmp`` and ``/dev/shm``, and
  only the job's folders writable. It sees only what :mod:`evaluator.isolation` lists: the
  system directories Python and Chromium need, the interpreter, this evaluator's package and
  the job's inputs, read-only; no ``var/``, no home folder, no ``/run`` and no host socket. Its
  environment is cleared and rebuilt from the allow-list there; as root it keeps only the
  capabilities needed to start Chromium as ``iwr-sandbox``, which runs with its own sandbox
  (see :mod:`evaluator.browser`).
- ``none``: no process sandbox. Refused unless explicitly allowed (``allow_unsandboxed``,
  set by ``--allow-unsandboxed`` or ``IWR_ALLOW_UNSANDBOXED=1``); always logged loudly. The
  job still gets the allow-listed environment and a private HOME and TMPDIR.
- ``container``: the job runs in the evaluator container (docker/). Its launcher is filled
  in by the deployment: see :func:`_container_command`.

Limits: a hard wall-clock limit and a memory limit, both enforced by a watchdog in the
parent, which kills the job's whole process group. Measured here: ``RLIMIT_AS`` cannot be
used because Chromium reserves terabytes of address space at start and refuses to run
under it; cgroups are not reliably writable in CI or containers. So memory is bounded by
polling the proportional set size (PSS, so pages shared between Chromium processes count
once) of every process in the job. ``prlimit`` sets RLIMIT_CORE=0 and a file-size cap.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluator import isolation

log = logging.getLogger(__name__)

BACKENDS = ("bubblewrap", "none", "container")
ACTIVE_ENV = "IWR_SANDBOX_ACTIVE"  # set inside a sandboxed job: the job must not wrap itself again
ALLOW_ENV = "IWR_ALLOW_UNSANDBOXED"
POLL_S = 0.5
STANDBY_EXIT_S = 30.0  # a job on standby told there is no job ends within this (its workers close their browsers)
JOB_TMP = "/tmp"  # noqa: S108 - inside bubblewrap: a fresh tmpfs of the job's own
JOB_HOME = "/tmp/home"  # noqa: S108 - the job's private HOME, on that tmpfs
# Capabilities root keeps inside bubblewrap: enough to start Chromium as the sandbox user and to
# police it (setpriv, chown of its profile, kill of its renderers, cleanup of what it wrote), not
# enough to mount, remount a read-only bind, create devices, trace or load modules.
ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL")


class SandboxError(RuntimeError):
    """The job cannot be run with the requested isolation; the message says why in one line."""


@dataclass(frozen=True)
class JobLimits:
    """Hard limits of one job."""

    time_s: float = 3600.0
    memory_mb: int = 6144
    file_size_mb: int = 4096


@dataclass
class JobResult:
    """How a sandboxed job ended."""

    backend: str
    returncode: int
    timed_out: bool = False
    memory_exceeded: bool = False
    peak_memory_mb: float = 0.0
    elapsed_s: float = 0.0
    stderr_tail: list[str] = field(default_factory=list)
    unused: bool = False  # a job on standby whose job never came

    @property
    def reason(self) -> str | None:
        """One line saying why the job failed, or None when it succeeded."""
        if self.timed_out:
            return "job exceeded its time limit and was killed"
        if self.memory_exceeded:
            return f"job exceeded its memory limit ({self.peak_memory_mb:.0f} MB) and was killed"
        if self.returncode != 0:
            last = self.stderr_tail[-1] if self.stderr_tail else ""
            return f"job exited with status {self.returncode}" + (f": {last}" if last else "")
        return None


def inside_sandbox() -> bool:
    """True inside a job started by :func:`run_job` (the job must not wrap itself again)."""
    return bool(os.environ.get(ACTIVE_ENV))


def unsandboxed_allowed(flag: bool = False) -> bool:
    return flag or os.environ.get(ALLOW_ENV, "") == "1"


def resolve_backend(name: str, allow_unsandboxed: bool = False) -> str:
    """The backend that will really be used for ``name``; raises SandboxError when none is acceptable.

    A missing or broken bubblewrap falls back to ``none`` only when unsandboxed runs are allowed,
    and says so loudly; otherwise it is an error.
    """
    if name not in BACKENDS:
        raise SandboxError(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
    allowed = unsandboxed_allowed(allow_unsandboxed)
    if name == "none" and not allowed:
        raise SandboxError(f"--sandbox none runs untrusted pages without isolation: pass --allow-unsandboxed "
                           f"or set {ALLOW_ENV}=1 (development only)")
    if name == "bubblewrap":
        problem = bubblewrap_problem()
        if problem and not allowed:
            raise SandboxError(f"bubblewrap sandbox unavailable ({problem}); install bubblewrap or, for "
                               f"development only, allow unsandboxed runs")
        if problem:
            log.warning("!!! SANDBOX FALLBACK: bubblewrap unavailable (%s); running WITHOUT process sandbox", problem)
            return "none"
    if name == "none":
        log.warning("!!! NO PROCESS SANDBOX: untrusted pages run without bubblewrap (development only)")
    return name


_PROBE: dict[str, str | None] = {}


def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot be used here, or None when a probe run works (cached)."""
    if "bwrap" not in _PROBE:
        _PROBE["bwrap"] = _probe_bwrap()
    return _PROBE["bwrap"]


def _probe_bwrap() -> str | None:
    if not shutil.which("bwrap"):
        return "bwrap not installed"
    argv = ["bwrap", "--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv",
            *isolation.system_plan().args, "--proc", "/proc", "--dev", "/dev", "/usr/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap probe failed: {exc}"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"bwrap probe failed: {lines[-1] if lines else done.returncode}"
    return None


def bwrap_command(argv: Sequence[str], writable: Sequence[Path], cwd: Path | None = None,
                  readable: Sequence[Path] = (), env: dict[str, str] | None = None,
                  accounts: Path | None = None) -> list[str]:
    """``argv`` wrapped in bubblewrap: no network, own pids, only the listed paths, ``writable`` bound rw.

    The root is an empty tmpfs, made read-only once everything is mounted: the job sees
    :data:`evaluator.isolation.SYSTEM_PATHS`, ``readable`` (read-only: this evaluator, its Python,
    the inputs) and ``writable``, nothing else. ``env`` replaces the whole environment.
    ``accounts``: a folder holding the ``passwd`` and ``group`` files the job sees (its users only).
    A read-only folder inside a writable one stays read-only (a cache inside the output folder).
    """
    cmd = [
        "bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--hostname", "iwr-job", "--die-with-parent", "--new-session", "--clearenv",
        *_capabilities(),
        *isolation.system_plan().args,
        "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",  # noqa: S108
        "--proc", "/proc", "--perms", "1777", "--tmpfs", JOB_TMP, "--dir", JOB_HOME,
    ]
    if accounts is not None:
        cmd += ["--ro-bind", str(accounts / "passwd"), "/etc/passwd", "--ro-bind", str(accounts / "group"),
                "/etc/group"]
    mounts = [(Path(p), "--ro-bind") for p in readable] + [(Path(p), "--bind") for p in writable]
    cmd += isolation.bind_order(mounts).args
    for name, value in sorted((env or {}).items()):
        cmd += ["--setenv", name, value]
    cmd += ["--remount-ro", "/"]
    if cwd is not None:
        cmd += ["--chdir", str(Path(cwd).resolve())]
    return cmd + ["--", *argv]


def _capabilities() -> list[str]:
    """As root, keep only :data:`ROOT_CAPS` (bubblewrap run by root keeps every capability otherwise)."""
    if os.geteuid() != 0:
        return []
    return ["--cap-drop", "ALL", *(arg for cap in ROOT_CAPS for arg in ("--cap-add", cap))]


def write_accounts(folder: Path) -> Path:
    """``passwd`` and ``group`` naming only the users a job runs as: this one and Chromium's."""
    from evaluator.browser import SANDBOX_USER

    users = [pwd.getpwuid(os.geteuid())]
    try:
        users.append(pwd.getpwnam(SANDBOX_USER))
    except KeyError:
        pass
    passwd, group = isolation.minimal_passwd({u.pw_name: (u.pw_uid, u.pw_gid) for u in users})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "passwd").write_text(passwd)
    (folder / "group").write_text(group)
    return folder


def _container_command(argv: Sequence[str], writable: Sequence[Path], cwd: Path | None = None,
                       readable: Sequence[Path] = ()) -> list[str]:
    """Extension point for the container backend (docker/ deployment).

    The distributed deployment runs each job in the evaluator image (non-root, read-only root,
    no capabilities, ``--network none``), binding only the job folder. Until that launcher is
    filled in here, choosing this backend is an error rather than a silent downgrade.
    """
    raise SandboxError("container sandbox backend is not configured in this installation; use bubblewrap")


def _limit_prefix(limits: JobLimits) -> list[str]:
    """prlimit: no core dumps (they could hold page data) and no runaway files."""
    prlimit = shutil.which("prlimit", path=isolation.PATH)
    if not prlimit:
        return []
    return [prlimit, "--core=0", f"--fsize={int(limits.file_size_mb) * 1024 * 1024}", "--"]


def build_command(argv: Sequence[str], backend: str, writable: Sequence[Path], limits: JobLimits,
                  cwd: Path | None = None, readable: Sequence[Path] = (), env: dict[str, str] | None = None,
                  accounts: Path | None = None) -> list[str]:
    """The full command line that runs ``argv`` under ``backend`` (already resolved)."""
    inner = [*_limit_prefix(limits), *argv]
    if backend == "bubblewrap":
        return bwrap_command(inner, writable, cwd, readable, env, accounts)
    if backend == "container":
        return _container_command(inner, writable, cwd, readable)
    return inner


def run_job(
    argv: Sequence[str],
    writable: Sequence[Path],
    backend: str = "bubblewrap",
    limits: JobLimits = JobLimits(),
    allow_unsandboxed: bool = False,
    cwd: Path | None = None,
    env: dict | None = None,
    readable: Sequence[Path] = (),
    standby: Callable[[], str | None] | None = None,
) -> JobResult:
    """Run ``argv`` as one sandboxed job within ``limits``; never raises for the job's own failure.

    ``writable``: the only paths the job may write. ``readable``: the job's inputs (the only
    other files it sees); this evaluator's package and its Python are added. ``env``: settings
    for the job, of which only those on the allow-list are taken (:mod:`evaluator.isolation`);
    the job never inherits this process's environment. Raises SandboxError only when the
    requested isolation is not available.

    ``standby``: the job is started at once and waits for its input. ``standby()`` blocks until
    the job is given and returns the line the job reads on its standard input (None: no job;
    the job's input is closed, it ends, ``unused`` is set); the time limit counts from then. What
    ``standby()`` raises stops the job and is raised.
    """
    used = resolve_backend(backend, allow_unsandboxed)
    private = Path(tempfile.mkdtemp(prefix="iwr-job-"))
    try:
        return _run(argv, writable, used, limits, cwd, env, [*readable, *runtime_paths()], private, standby)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _run(argv, writable, used: str, limits: JobLimits, cwd, env, readable, private: Path,
         standby: Callable[[], str | None] | None = None) -> JobResult:
    extra = {**(env or {}), **_driver_settings()}
    if used == "bubblewrap":
        job_env = isolation.job_environment(JOB_HOME, JOB_TMP, used, extra=extra)
        cmd = build_command(argv, used, writable, limits, cwd, readable, job_env, write_accounts(private / "etc"))
    else:  # unsandboxed: the same environment, with a private HOME and TMPDIR in a folder of its own
        private.chmod(0o711)  # Chromium's user reaches its profile in TMPDIR, lists nothing else
        (private / "home").mkdir(mode=0o700)
        (private / "tmp").mkdir()
        (private / "tmp").chmod(0o1777)  # noqa: S103 - like /tmp: Chromium's user creates its profile here
        job_env = isolation.job_environment(str(private / "home"), str(private / "tmp"), used, extra=extra)
        cmd = build_command(argv, used, writable, limits, cwd, readable)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=job_env, stdout=None, stderr=subprocess.PIPE,
                            stdin=subprocess.PIPE if standby else None,
                            text=True, errors="replace", start_new_session=True)
    tail: list[str] = []
    reader = threading.Thread(target=_pump_stderr, args=(proc, tail), daemon=True)
    reader.start()
    result = JobResult(backend=used, returncode=-1)
    if standby is not None:
        started = _hand_over(proc, standby, result)
    if not result.unused:
        _watch(proc, limits, result, started)
    reader.join(timeout=5)
    result.returncode = proc.returncode
    result.elapsed_s = round(time.monotonic() - started, 3)
    result.stderr_tail = tail[-20:]
    return result


def _hand_over(proc: subprocess.Popen, standby: Callable[[], str | None], result: JobResult) -> float:
    """Wait for a standing job's input and pass it on; returns when its time limit starts counting."""
    try:
        line = standby()
    except BaseException:
        _kill_group(proc)
        raise
    if line is None:
        result.unused = True
    with contextlib.suppress(OSError):  # a job that died meanwhile: its exit status says why
        if line is not None:
            proc.stdin.write(line)
        proc.stdin.close()
    if result.unused:
        try:
            proc.wait(timeout=STANDBY_EXIT_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
    return time.monotonic()


def runtime_paths() -> list[Path]:
    """What any job needs to read: the Python interpreter and environment, this evaluator's package."""
    return isolation.runtime_paths()


def _driver_settings() -> dict[str, str]:
    from evaluator.browser import driver_settings

    return driver_settings()


def _pump_stderr(proc: subprocess.Popen, tail: list[str]) -> None:
    """Pass the job's stderr through and keep its last lines for the failure reason."""
    for line in proc.stderr:
        print(line, end="", file=sys.stderr)
        tail.append(line.rstrip())
        del tail[:-50]


def _watch(proc: subprocess.Popen, limits: JobLimits, result: JobResult, started: float) -> None:
    """Poll until the job ends; kill its process group when a limit is crossed."""
    budget = limits.memory_mb * 1024 * 1024
    while proc.poll() is None:
        if time.monotonic() - started > limits.time_s:
            result.timed_out = True
            break
        used = tree_memory_bytes(proc.pid, within=budget)
        result.peak_memory_mb = max(result.peak_memory_mb, used / 2**20)
        if used > budget:
            result.memory_exceeded = True
            break
        try:
            proc.wait(timeout=POLL_S)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        _kill_group(proc)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def tree_memory_bytes(root: int, within: int | None = None) -> int:
    """PSS (RSS where PSS is unreadable) of ``root`` and all its descendants.

    With ``within``: the resident total (RSS, which counts pages shared between processes once
    per process, so never less than PSS) when that is within it already. Reading every
    process's PSS makes the kernel walk its memory map, a millisecond per Chromium process, twice
    a second for the whole job; their RSS costs a hundredth of that, and PSS is only needed to
    decide once the resident total crosses ``within``.
    """
    from evaluator.browser import process_descendants, rss_bytes

    pids = [root, *process_descendants(root)]
    if within is not None:
        resident = sum(rss_bytes(pid) for pid in pids)
        if resident <= within:
            return resident
    return sum(_pss_bytes(pid) for pid in pids)


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    from evaluator.browser import rss_bytes

    return rss_bytes(pid)

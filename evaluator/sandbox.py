"""Process sandbox for one scoring job: the evaluator process that launches Chromium.

Backends (chosen by name, see :data:`BACKENDS`):

- ``bubblewrap`` (default): ``bwrap`` with its own network namespace (no network at all,
  not even loopback to the host), its own pid namespace, a read-only view of the system,
  fresh ``/tmp`` and ``/dev/shm``, and only the job's folders writable. Chromium inside
  still runs as ``iwr-sandbox`` with its own sandbox (see :mod:`evaluator.browser`).
- ``none``: no process sandbox. Refused unless explicitly allowed (``allow_unsandboxed``,
  set by ``--allow-unsandboxed`` or ``IWR_ALLOW_UNSANDBOXED=1``); always logged loudly.
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

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

BACKENDS = ("bubblewrap", "none", "container")
ACTIVE_ENV = "IWR_SANDBOX_ACTIVE"  # set inside a sandboxed job: the job must not wrap itself again
ALLOW_ENV = "IWR_ALLOW_UNSANDBOXED"
POLL_S = 0.5


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
    argv = ["bwrap", "--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/",
            "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap probe failed: {exc}"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return f"bwrap probe failed: {lines[-1] if lines else done.returncode}"
    return None


def bwrap_command(argv: Sequence[str], writable: Sequence[Path], cwd: Path | None = None,
                  readable: Sequence[Path] = ()) -> list[str]:
    """``argv`` wrapped in bubblewrap: no network, own pids, read-only system, ``writable`` bound rw.

    ``readable`` paths are bound read-only again on top of the fresh /tmp (inputs kept in /tmp),
    and on top of a writable folder that holds them (a read-only cache inside it stays read-only).
    """
    cmd = [
        "bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "iwr-job",
        "--die-with-parent", "--new-session",
        "--ro-bind", "/", "/", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm",  # noqa: S108
        "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",  # noqa: S108 (fresh, private tmpfs)
    ]
    mounts = [(Path(p).resolve(), "--ro-bind") for p in readable] + [(Path(p).resolve(), "--bind") for p in writable]
    # A later mount covers an earlier one: outer folders first, so each path gets the mode given for
    # the deepest folder that holds it (output inside the read-only code folder stays writable).
    for resolved, how in sorted(mounts, key=lambda mount: len(mount[0].parts)):
        cmd += [how, str(resolved), str(resolved)]
    if cwd is not None:
        cmd += ["--chdir", str(Path(cwd).resolve())]
    return cmd + ["--", *argv]


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
    if not shutil.which("prlimit"):
        return []
    return ["prlimit", "--core=0", f"--fsize={int(limits.file_size_mb) * 1024 * 1024}", "--"]


def build_command(argv: Sequence[str], backend: str, writable: Sequence[Path], limits: JobLimits,
                  cwd: Path | None = None, readable: Sequence[Path] = ()) -> list[str]:
    """The full command line that runs ``argv`` under ``backend`` (already resolved)."""
    inner = [*_limit_prefix(limits), *argv]
    if backend == "bubblewrap":
        return bwrap_command(inner, writable, cwd, readable)
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
) -> JobResult:
    """Run ``argv`` as one sandboxed job within ``limits``; never raises for the job's own failure.

    ``writable``: the only paths the job may write. ``readable``: inputs that must stay visible
    even when they live under /tmp (which the sandbox replaces); this evaluator's code and its
    Python environment always do, so a checkout under /tmp runs its jobs too. Raises
    SandboxError only when the requested isolation is not available.
    """
    used = resolve_backend(backend, allow_unsandboxed)
    readable = [*readable, *runtime_paths()]
    cmd = build_command(argv, used, writable, limits, cwd, readable)
    job_env = {**(env if env is not None else os.environ), ACTIVE_ENV: used}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=job_env, stdout=None, stderr=subprocess.PIPE,
                            text=True, errors="replace", start_new_session=True)
    tail: list[str] = []
    reader = threading.Thread(target=_pump_stderr, args=(proc, tail), daemon=True)
    reader.start()
    result = JobResult(backend=used, returncode=-1)
    _watch(proc, limits, result, started)
    reader.join(timeout=5)
    result.returncode = proc.returncode
    result.elapsed_s = round(time.monotonic() - started, 3)
    result.stderr_tail = tail[-20:]
    return result


def runtime_paths() -> list[Path]:
    """What any job needs to read: the Python environment and the folder holding this evaluator."""
    return [Path(sys.prefix).resolve(), Path(__file__).resolve().parents[1]]


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

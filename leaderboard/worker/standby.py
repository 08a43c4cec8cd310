"""A scoring job kept on standby between evaluations: no evaluation waits for the evaluator to start.

Starting ``python -m evaluator score`` costs about a second and a half before the first task runs:
the command's checks, the sandbox, the imports of the scoring stack in every evaluator worker, the
Playwright driver and one Chromium per worker. A scoring worker pays it while it is idle instead:
after each evaluation (and when its process starts) it starts the next job's evaluator with
``score --standby FOLDER``, which does all of that and then waits. The next claimed evaluation of the
same protocol writes its task data and bundle into FOLDER and names them on the standby's standard
input (:meth:`Standby.begin`); the job starts at once, and its time limit counts from then.

The sandbox rules are those of every job: it is one fresh process tree and one sandbox per
evaluation, started before the evaluation was known and never reused. It holds nothing of an earlier
evaluation's pages, and nothing of the worker's (the same allow-listed environment as a cold start,
:meth:`~leaderboard.worker.evaluator_run.EvaluatorRun.environment`). FOLDER is read-only to the job
but for its ``out/``.

Not on standby: LLM-judged protocols (their judge relay starts with the job) and the container
sandbox (a container is started per job, with the job's folder). ``IWR_EVALUATOR_STANDBY=0`` turns
standby off. One standby per worker process; it ends with the process (the evaluator dies with its
parent), and a standby whose settings changed is discarded, never used.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)
UNUSED_EXIT_S = 30.0  # a standby told there is no job closes its browsers within this
_lock = threading.Lock()
_current: Standby | None = None


@dataclass
class Standby:
    """A started evaluator waiting for its job in ``folder``."""

    folder: Path
    protocol: str
    settings_key: tuple
    process: subprocess.Popen

    @property
    def log_path(self) -> Path:
        return self.folder / "evaluator.log"

    def alive(self) -> bool:
        return self.process.poll() is None

    def begin(self, data: Path, bundle: Path) -> bool:
        """Start the job on ``data`` and ``bundle`` (both inside the folder); False when the standby is gone."""
        line = json.dumps({"data": str(data), "bundle": str(bundle), "tasks": None}) + "\n"
        try:
            self.process.stdin.write(line.encode())
            self.process.stdin.close()
        except (OSError, ValueError):  # it died meanwhile: the caller starts the job cold
            return False
        return True

    def end(self) -> None:
        """No job for it: close its input (it ends quietly), kill it if it does not, remove its folder."""
        from leaderboard.worker import containers

        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.close()
        try:
            self.process.wait(UNUSED_EXIT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        containers.remove_job_folder(self.folder)


def enabled() -> bool:
    return settings.EVALUATOR_STANDBY and settings.EVALUATOR_SANDBOX != "container"


def servable(protocol: str) -> bool:
    from leaderboard import official

    return enabled() and not official.is_official(protocol)


def standby_root() -> Path:
    return Path(settings.JOBS_ROOT) / "standby"


def current_settings(protocol: str) -> tuple:
    """What a standby was started with: one started under other settings is never used."""
    return (protocol, str(settings.JOBS_ROOT), settings.EVALUATOR_COMMAND, settings.EVALUATOR_WORKERS,
            settings.EVALUATOR_SANDBOX, settings.EVALUATION_TIME_LIMIT_SECONDS, settings.EVALUATOR_EXTRA_ARGS,
            str(settings.DATA_DIR))


def take(protocol: str) -> Standby | None:
    """The waiting standby for a job of ``protocol``, now the caller's; None when there is none that fits."""
    global _current
    with _lock:
        standby, _current = _current, None
    if standby is None:
        return None
    if servable(protocol) and standby.protocol == protocol and standby.alive() \
            and standby.settings_key == current_settings(protocol):
        return standby
    standby.end()  # another protocol's or dead: after this job, the next standby is for this job's protocol
    return None


def prepare(protocol: str | None = None) -> Standby | None:
    """Start the standby for the next evaluation (``protocol``: the site's default), unless one waits."""
    global _current
    from evaluator.protocols import get_protocol

    if protocol is None:
        from leaderboard.intake.bundles import DEFAULT_PROTOCOL

        protocol = DEFAULT_PROTOCOL
    try:
        protocol = get_protocol(protocol).full_name
    except ValueError:
        return None
    if not servable(protocol):
        return None
    with _lock:
        if _current is not None and _current.alive() and _current.settings_key == current_settings(protocol):
            return _current
        stale, _current = _current, None
    if stale is not None:
        stale.end()
    try:
        started = _start(protocol)
    except OSError as exc:  # the next evaluation starts cold; nothing is lost
        log.warning("evaluator standby not started: %s", exc)
        return None
    with _lock:
        _current = started
    return started


def discard() -> None:
    """End the waiting standby, if any (the worker process is stopping)."""
    global _current
    with _lock:
        standby, _current = _current, None
    if standby is not None:
        standby.end()


def _start(protocol: str) -> Standby:
    from leaderboard.worker.launch import die_with_parent, evaluator_options, job_environment

    root = standby_root()
    _remove_dead_standbys(root)
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"{socket.gethostname()}-{os.getpid()}-{os.urandom(4).hex()}"
    (folder / "out").mkdir(parents=True)
    base = shlex.split(settings.EVALUATOR_COMMAND) or [sys.executable, "-m", "evaluator"]
    command = [*base, "score", "--standby", str(folder), "--out", str(folder / "out"), "--protocol", protocol,
               "--time-limit", str(settings.EVALUATION_TIME_LIMIT_SECONDS), *evaluator_options()]
    with open(folder / "evaluator.log", "wb") as log_file:
        process = subprocess.Popen(
            command, cwd=settings.BASE_DIR, stdin=subprocess.PIPE, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent, env=job_environment(folder),
        )
    log.info("evaluator standby for %s started in %s", protocol, folder)
    return Standby(folder, protocol, current_settings(protocol), process)


def _remove_dead_standbys(root: Path) -> None:
    """Folders of standbys whose worker process on this host is gone (killed without its clean-up)."""
    from leaderboard.worker import containers

    prefix = f"{socket.gethostname()}-"
    for folder in root.glob(prefix + "*") if root.is_dir() else []:
        pid = folder.name.removeprefix(prefix).split("-")[0]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            containers.remove_job_folder(folder)


atexit.register(discard)

"""How this server starts the evaluator's ``score`` command: its options, its environment, its tie to the worker.

Shared by a cold start (:mod:`leaderboard.worker.evaluator_run`) and the evaluator kept on standby
(:mod:`leaderboard.worker.standby`), so both start the very same job.
"""

from __future__ import annotations

import ctypes
import shlex
import signal
import sys
from pathlib import Path

from django.conf import settings

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def evaluator_options() -> list[str]:
    """The ``score`` options every job of this server gets, a cold start's and a standby's alike."""
    options = []
    if settings.EVALUATOR_WORKERS:
        options += ["--workers", str(settings.EVALUATOR_WORKERS)]
    if settings.EVALUATOR_SANDBOX:
        options += ["--sandbox", settings.EVALUATOR_SANDBOX]
    # Reference screenshots are the same for every submission: their OCR is kept between jobs.
    options += ["--ocr-cache", str(ocr_cache_dir())]
    return options + shlex.split(settings.EVALUATOR_EXTRA_ARGS)  # last: an operator's options win


def job_environment(folder: Path) -> dict[str, str]:
    """The score command reads the untrusted bundle: it gets the evaluator's allow-list, never the
    worker's own environment (database URL, secret key, broker password); HOME and TMPDIR are the
    job folder's own."""
    from evaluator import isolation

    tmp = folder / "tmp"
    tmp.mkdir(mode=0o700, exist_ok=True)
    env = isolation.launcher_environment(str(tmp))
    if settings.EVALUATOR_SANDBOX != "container":
        env.pop("DOCKER_HOST", None)  # only ``docker run`` talks to the engine
    return env


def ocr_cache_dir() -> Path:
    """Where the evaluator keeps reference-side OCR results between jobs (on this machine)."""
    return Path(settings.DATA_DIR) / "ocr-cache"


def die_with_parent() -> None:
    """In the evaluator child: be killed when the worker dies, even by SIGKILL (Linux)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

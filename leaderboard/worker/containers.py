"""Job containers and job folders no live claim looks after any more: found and removed.

A job container outlives a ``docker run`` client that was killed with its dispatcher, and a
job folder holds files the evaluator container wrote as its own user. Nothing here trusts the
dead process to have cleaned up:

- every job container carries labels (:func:`job_labels`): this deployment's jobs folder, the
  dispatcher node, the evaluation and attempt it scores, and a deadline after which no worker
  still watches it;
- :func:`remove_stray_containers` (run by the reaper and whenever a job container starts)
  removes the containers past their deadline, and this deployment's containers whose attempt is
  no longer the running claim of its evaluation (re-queued, finished, or claimed again);
- :func:`remove_node_containers` (a dispatcher node starting) removes what its dead processes left;
- :func:`remove_job_folder` removes an attempt's folder whatever user wrote into it: what this
  process cannot remove (a non-root dispatcher, files of the container's user in folders the job
  closed) is removed by a throw-away container running as that user.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

from django.conf import settings

from leaderboard.models import Evaluation

log = logging.getLogger(__name__)

LABEL_JOBS = "org.iwr-bench.jobs"  # this deployment's JOBS_ROOT: several sites may share one engine
LABEL_DISPATCHER = "org.iwr-bench.dispatcher"
LABEL_EVALUATION = "org.iwr-bench.evaluation"
LABEL_ATTEMPT = "org.iwr-bench.attempt"
LABEL_DEADLINE = "org.iwr-bench.deadline"  # Unix time after which no worker still watches the container


def job_labels(node: str, evaluation_id: int, attempt: int, deadline: float) -> dict[str, str]:
    return {LABEL_JOBS: str(Path(settings.JOBS_ROOT).resolve()), LABEL_DISPATCHER: node,
            LABEL_EVALUATION: str(evaluation_id), LABEL_ATTEMPT: str(attempt), LABEL_DEADLINE: str(int(deadline))}


def engine(*args: str, timeout: float = 60) -> str | None:
    """Output of a container engine command, None when it failed (logged: housekeeping must not fail a job)."""
    try:
        done = subprocess.run([settings.CONTAINER_ENGINE, *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("container engine %s failed: %s", args[0], exc)
        return None
    if done.returncode != 0:
        log.warning("container engine %s failed: %s", args[0], (done.stderr.strip().splitlines() or ["?"])[-1])
        return None
    return done.stdout


def remove_stray_containers(now: float | None = None) -> int:
    """Remove every job container no worker watches any more; returns how many.

    Past its deadline: whoever started it died (any deployment's: the deadline says so). Of this
    deployment and its attempt no longer held: its dispatcher was presumed dead and the evaluation
    re-queued, ended or claimed again, so nobody will read what it writes.
    """
    if settings.EVALUATOR_SANDBOX != "container":
        return 0
    fields = (LABEL_JOBS, LABEL_EVALUATION, LABEL_ATTEMPT, LABEL_DEADLINE)
    # "|" keeps a missing label an empty field (a container of an earlier version has no jobs label).
    listing = engine("ps", "--all", "--filter", f"label={LABEL_DEADLINE}", "--format",
                     "|".join(["{{.ID}}", *(f'{{{{.Label "{name}"}}}}' for name in fields)]))
    now = time.time() if now is None else now
    ours = str(Path(settings.JOBS_ROOT).resolve())
    rows = [[part.strip() for part in line.split("|")] for line in (listing or "").splitlines()]
    rows = [row for row in rows if len(row) == 5]
    held = _held_attempts({int(row[2]) for row in rows if row[1] == ours and row[2].isdigit()})
    stray = [cid for cid, jobs, evaluation, attempt, deadline in rows
             if (deadline.isdigit() and int(deadline) < now)
             or (jobs == ours and (evaluation, attempt) not in held)]
    if stray:
        engine("rm", "--force", *stray)
    return len(stray)


def _held_attempts(evaluation_ids: set[int]) -> set[tuple[str, str]]:
    """(evaluation, attempt) of the claims that still run, as the labels spell them."""
    running = Evaluation.objects.filter(pk__in=evaluation_ids, status=Evaluation.Status.RUNNING)
    return {(str(pk), str(attempts)) for pk, attempts in running.values_list("pk", "attempts")}


def remove_node_containers(node: str) -> int:
    """A dispatcher node (re)starting: its earlier processes are dead, so are their jobs; remove this
    deployment's job containers labelled with ``node`` (a container outlives a killed ``docker run``)."""
    if settings.EVALUATOR_SANDBOX != "container":
        return 0
    ours = str(Path(settings.JOBS_ROOT).resolve())
    ids = (engine("ps", "--all", "--quiet", "--filter", f"label={LABEL_DISPATCHER}={node}",
                  "--filter", f"label={LABEL_JOBS}={ours}") or "").split()
    if ids:
        engine("rm", "--force", *ids)
    return len(ids)


# --------------------------------------------------------------------------- job folders


def remove_job_folder(folder: Path) -> bool:
    """Remove ``folder`` and everything in it, whoever wrote it; True when it is gone.

    The evaluator container writes ``out/`` as its own user, and a page that escaped its browser
    may take the write bit off its folders: a dispatcher that is not root cannot remove those files.
    Then a container running as that user, with ``out/`` alone mounted, gives the folders their
    owner's write bit back and removes what is in them.
    """
    folder = Path(folder)
    _remove_own(folder)
    if folder.exists() and settings.EVALUATOR_SANDBOX == "container":
        for out in sorted(folder.glob("out")):
            _remove_as_job_user(out)
        _remove_own(folder)
    if folder.exists():
        log.warning("job folder %s could not be removed entirely", folder)
    return not folder.exists()


def _remove_own(folder: Path) -> None:
    if not folder.exists():
        return
    for path, _dirs, _files in os.walk(folder):
        try:
            os.chmod(path, 0o700)  # make_read_only's folders must be writable again to be removed
        except PermissionError:
            pass  # another user's folder: removed by _remove_as_job_user
    shutil.rmtree(folder, ignore_errors=True)


def _remove_as_job_user(out: Path) -> None:
    from evaluator import container

    try:
        out.chmod(0o777)  # noqa: S103 - open again to the job's user (the first attempt at removal closed it)
    except PermissionError:
        pass  # the job's user's own folder: it may enter it anyway
    script = "chmod -R u+rwX /out 2>/dev/null; find /out -mindepth 1 -delete"
    engine("run", "--rm", "--network", "none", "--read-only", "--cap-drop", "ALL",
           "--security-opt", "no-new-privileges", "--user", f"{container.CONTAINER_UID}:{container.CONTAINER_UID}",
           "--volume", f"{out.resolve()}:/out", "--entrypoint", "/bin/sh", settings.EVALUATOR_IMAGE, "-c", script,
           timeout=300)

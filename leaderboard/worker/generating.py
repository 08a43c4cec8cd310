"""Generating: the pages of a model-endpoint submission, asked of its endpoint by a worker.

:func:`run` claims the job (:data:`leaderboard.worker.claims.GENERATION_JOBS`: one conditional
UPDATE with a fresh claim token), so a second delivery of the same wake-up finds nothing to
claim and returns. The worker then reads the API key back, builds a job folder holding the
split's task inputs, asks the endpoint for every page through :mod:`evaluator.generation`,
and ends the job: the bundle stored and its scoring queued (:func:`finish`), or the job
failed with a reason (:func:`fail`: key erased, quota refunded). Every ending holds only
while the claim does, and erases the stored key in the same update.

While it runs, a heartbeat thread beats the claim (one request may take minutes), and each
finished task saves the progress and checks the claim: a job cancelled, or taken over after
the worker was presumed dead, stops between tasks without ending anything. A worker killed
outright stops beating; the reaper re-queues the job and the next claim resumes it in the
same folder, keeping the pages already generated. After ``CLAIM_MAX_ATTEMPTS`` claims it
fails instead.

Time limits: every request has ``GENERATION_REQUEST_TIMEOUT_SECONDS`` (retried with
backoff); each claim has ``GENERATION_TIME_LIMIT_SECONDS``, enforced by the run itself
(no request outlives it) and backed by Celery's soft and hard limits a little above
(:mod:`leaderboard.tasks`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import uuid
from collections import Counter
from functools import partial
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from leaderboard import crypto, notifications, quotas
from leaderboard.intake import dispatch
from leaderboard.intake.endpoints import endpoint_problems
from leaderboard.intake.evaluations import ended_evaluation, generation_ended, queue_evaluation
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.tasksets import split_tasks, write_job_dataset
from leaderboard.worker.claims import GENERATION_JOBS, worker_name

log = logging.getLogger(__name__)

Status = GenerationJob.Status
ENDED = (Status.DONE, Status.FAILED, Status.CANCELLED)
JOB_FOLDER_PREFIX = "generation-"


class GenerationFailed(Exception):
    """The job cannot produce any page; the message is the reason shown to the submitter."""


class ClaimLost(Exception):
    """The job was cancelled or taken over by another worker: stop, end nothing."""


# --------------------------------------------------------------------------- the run


def run(job_id: int, worker: str | None = None) -> str | None:
    """Claim generation job ``job_id`` and run it to its end; returns its status after the run
    (None: not ours to run)."""
    token = GENERATION_JOBS.claim(job_id, worker or worker_name())
    if token is None:
        log.info("generation job %s is not queued (ended, or another worker has it)", job_id)
        return None
    job = GenerationJob.objects.select_related("submission").get(pk=job_id)
    folder = job_folder(job_id)
    log.info("generation job %s: attempt %d started for submission %s", job_id, job.attempts, job.submission_id)
    try:
        with GENERATION_JOBS.heartbeat(job_id, token):
            run_claimed(job, folder)
    finally:
        erase_key(job_id)
        job.refresh_from_db(fields=["status"])
        if job.is_finished:  # otherwise the job was re-queued and its next claim resumes from the folder
            remove_folder(folder)
    return job.status


def run_claimed(job, folder: Path) -> None:
    """Generate, then hand over to scoring; every outcome is stored, none is raised."""
    try:
        report = generate_pages(job, folder)
        finish(job, report, folder / "out", folder / "bundle.zip")
    except ClaimLost:
        log.info("generation job %s: claim lost (cancelled, or taken over); stopped", job.pk)
    except GenerationFailed as exc:
        fail(job, str(exc))
    except SoftTimeLimitExceeded:
        limit = settings.GENERATION_TIME_LIMIT_SECONDS
        fail(job, f"generation took longer than the limit of {limit // 60} min.")
    except Exception as exc:  # noqa: BLE001 - our fault, not the submitter's: reported, refunded
        log.exception("generation job %s: worker error", job.pk)
        fail(job, f"the generation worker hit an internal error ({type(exc).__name__}); please submit again.")


def generate_pages(job, folder: Path) -> dict:
    """Ask the endpoint for every page of the split into ``folder/out``; returns the evaluator's report.

    A later claim of the same job resumes: pages an earlier claim generated are kept.
    """
    from evaluator.generation import generate as generate_bundle

    config = _config(job)
    resume = job.attempts > 1
    data_path = _prepare_folder(job, folder, resume)
    outcomes: dict = {}

    def progress(outcome) -> None:
        outcomes[outcome.key] = outcome
        if not record_progress(job, outcomes):
            raise ClaimLost

    deadline = time.monotonic() + settings.GENERATION_TIME_LIMIT_SECONDS
    return generate_bundle(data_path, folder / "out", config, workers=settings.GENERATION_CONCURRENCY,
                           resume=resume, deadline=deadline, on_task=progress)


def _config(job):
    """The endpoint settings with the key read back; raises GenerationFailed with the reason."""
    from evaluator.generation import ConfigError

    try:
        config = endpoint_config(job, api_key(job))
    except crypto.DecryptionFailed:
        raise GenerationFailed("the stored API key could not be read back (the server's encryption key "
                               "changed); please submit again.") from None
    except ConfigError as exc:
        raise GenerationFailed(f"{exc}.") from None
    problems = endpoint_problems(job.base_url)
    if problems:
        raise GenerationFailed(problems[0])
    return config


def _prepare_folder(job, folder: Path, resume: bool) -> Path:
    """A fresh job folder (or, resuming, the earlier one with its pages) with the split's inputs."""
    tasks = list(split_tasks(job.submission.split))
    if not tasks:
        raise GenerationFailed("the split has no published tasks.")
    remove_folder(folder / "input" if resume else folder)
    folder.mkdir(parents=True, exist_ok=True)
    return write_job_dataset(tasks, folder / "input")


# --------------------------------------------------------------------------- the endpoint and progress


def api_key(job: GenerationJob) -> str:
    """The job's API key in clear text, for the request headers only; raises crypto.DecryptionFailed."""
    stored = bytes(job.api_key_encrypted or b"")
    return crypto.decrypt(stored) if stored else ""


def endpoint_config(job: GenerationJob, key: str):
    from evaluator.generation import EndpointConfig

    return EndpointConfig(
        base_url=job.base_url, model=job.model_id, api_key=key, max_tokens=job.max_tokens,
        max_images=job.max_images, max_frames=job.max_frames,
        default_temperature=job.default_temperature, length_parameter=job.length_parameter or "max_tokens",
        timeout=float(settings.GENERATION_REQUEST_TIMEOUT_SECONDS), retries=settings.GENERATION_RETRIES,
        # Checked again at every request, on the very address connected to: a name that passed the
        # form's check cannot be re-pointed at an internal service afterwards (DNS rebinding).
        public_only=not settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS,
    )


def record_progress(job: GenerationJob, outcomes: dict) -> bool:
    """Save how many tasks are done and why pages are missing so far (a heartbeat too);
    False when the claim no longer holds: the worker must stop."""
    errors = {key: outcome.reason for key, outcome in outcomes.items() if not outcome.ok}
    return GENERATION_JOBS.beat(job.pk, job.claim_token, tasks_done=len(outcomes), task_errors=errors)


# --------------------------------------------------------------------------- endings


def finish(job: GenerationJob, report: dict, out_dir: Path, zip_path: Path) -> Evaluation | None:
    """Store the generated bundle and queue its scoring; fail the job when no page was made.

    Returns the queued (or failed) evaluation, or None when the job was no longer ours.
    """
    from evaluator.bundle import make_bundle_zip
    from evaluator.generation import pages_of

    errors = {key: outcome["reason"] for key, outcome in report["tasks"].items() if outcome["status"] != "ok"}
    record_report(job, report)
    pages = pages_of(out_dir, report)
    if not pages:
        return fail(job, no_page_reason(errors), task_errors=errors, tasks_done=len(report["tasks"]))
    make_bundle_zip(pages, zip_path)
    stored = store_bundle(zip_path)
    try:
        return _queue_scoring(job, stored, zip_path, errors, len(report["tasks"]))
    except BaseException:
        default_storage.delete(stored)
        raise


def store_bundle(zip_path: Path) -> str:
    with open(zip_path, "rb") as handle:
        return default_storage.save(f"bundles/{timezone.now():%Y/%m}/generated-{uuid.uuid4().hex}.zip", handle)


def ran_at_default_temperature(report: dict) -> bool:
    """Whether any request went without the protocol's temperature 0 (asked for, or after a refusal)."""
    return any((outcome.get("request") or {}).get("temperature") == "default"
               for outcome in report.get("tasks", {}).values())


def record_report(job: GenerationJob, report: dict) -> None:
    """Keep what the submission page says about how the model was asked (temperature, notes)."""
    fields = {"ran_at_default_temperature": ran_at_default_temperature(report),
              "generation_notes": [str(note) for note in report.get("notes") or []][:20]}
    GenerationJob.objects.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)


def _queue_scoring(job: GenerationJob, stored: str, zip_path: Path, errors: dict, done: int) -> Evaluation | None:
    from evaluator.protocols import get_protocol

    submission = job.submission
    with transaction.atomic():
        ended = generation_ended(Status.DONE, task_errors=errors, tasks_done=done)
        if not GENERATION_JOBS.holding(job.pk, job.claim_token).update(**ended):
            default_storage.delete(stored)
            return None
        submission.bundle = stored
        submission.bundle_size = zip_path.stat().st_size
        submission.bundle_sha256 = hashlib.sha256(zip_path.read_bytes()).hexdigest()
        submission.save(update_fields=["bundle", "bundle_size", "bundle_sha256"])
        evaluation = queue_evaluation(submission, get_protocol(submission.protocol))
        transaction.on_commit(partial(dispatch.evaluation, evaluation.pk))
    log.info("generation job %s done: %d page(s), %d missing; evaluation %s queued",
             job.pk, done - len(errors), len(errors), evaluation.pk)
    return evaluation


def fail(job: GenerationJob, reason: str, *, rows=None, kind: str = Evaluation.FailureKind.GENERATION,
         **fields) -> Evaluation | None:
    """End the job as failed (key erased), show the reason as a failed evaluation, refund the quota.

    ``rows`` is the job's row under the condition that lets this caller end it (default: the
    worker's own claim). Returns None when the condition no longer held.
    """
    rows = GENERATION_JOBS.holding(job.pk, job.claim_token) if rows is None else rows
    with transaction.atomic():
        if not rows.update(**generation_ended(Status.FAILED, failure_reason=reason, **fields)):
            return None
        evaluation = _failed_evaluation(job.submission, reason, kind)
        quotas.refund(job.submission)
        transaction.on_commit(partial(_notify, evaluation.pk))
    log.info("generation job %s failed", job.pk)
    return evaluation


def _failed_evaluation(submission: Submission, reason: str, kind: str) -> Evaluation:
    """The submission's evaluation, born failed: the submission page and the API show why."""
    if kind == Evaluation.FailureKind.GENERATION:
        shown = f"No page could be generated from the endpoint: {reason}"
    else:
        shown = f"Page generation did not finish: {reason}"
    return ended_evaluation(submission, Evaluation.Status.FAILED, kind, f"{shown} This is not charged to your quota.")


def _notify(evaluation_id: int) -> None:
    notifications.evaluation_finished(evaluation_id)


def erase_key(job_id: int) -> None:
    """Belt and braces: no ended job keeps a key (ending updates erase it already). A job that
    is queued or running again keeps its key: the next claim needs it to resume."""
    GenerationJob.objects.filter(pk=job_id, status__in=ENDED).update(api_key_encrypted=b"")


def no_page_reason(errors: dict) -> str:
    """One sentence for a job without pages: the most common reason, and how many tasks it hit."""
    if not errors:
        return "the split has no task to generate."
    reason, count = Counter(errors.values()).most_common(1)[0]
    share = "every task" if count == len(errors) else f"{count} of {len(errors)} tasks"
    return f"{reason} ({share})."


# --------------------------------------------------------------------------- the reaper and job folders


def reap(now=None) -> dict:
    """Re-queue (or, after the last attempt, fail) running jobs whose worker stopped beating,
    re-send wake-ups nobody picked up, and remove job folders of ended jobs."""
    counts = GENERATION_JOBS.reap(give_up, now)
    remove_ended_folders()
    return counts


def reap_node(node: str) -> int:
    """A worker node (re)starting: the jobs it was running died with it; re-queue them now."""
    return GENERATION_JOBS.reap_node(node, give_up)


def give_up(job: GenerationJob, rows, reason: str) -> bool:
    """The last claim died: failed as infrastructure (key erased, quota refunded)."""
    return fail(job, reason, rows=rows, kind=Evaluation.FailureKind.INFRASTRUCTURE) is not None


def job_folder(job_id: int) -> Path:
    """Where a job's inputs and pages live; kept between claims so a resumed run keeps its pages."""
    return Path(settings.JOBS_ROOT) / f"{JOB_FOLDER_PREFIX}{job_id}"


def remove_ended_folders() -> int:
    """Remove folders left by jobs that ended while no worker held them (a dead worker's job
    cancelled or failed by the reaper); returns how many were removed."""
    root = Path(settings.JOBS_ROOT)
    found = {}
    for path in root.glob(f"{JOB_FOLDER_PREFIX}*") if root.is_dir() else []:
        suffix = path.name[len(JOB_FOLDER_PREFIX):]
        if suffix.isdigit() and path.is_dir():
            found[int(suffix)] = path
    live = set(GenerationJob.objects.filter(pk__in=found, status__in=[Status.QUEUED, Status.RUNNING])
               .values_list("pk", flat=True))
    for job_id in set(found) - live:
        remove_folder(found[job_id])
    return len(set(found) - live)


def remove_folder(folder: Path) -> None:
    """Remove a job folder, read-only task inputs included."""
    if not folder.exists():
        return
    for path, _dirs, _files in os.walk(folder):
        os.chmod(path, 0o700)  # write_job_dataset's folders are read-only
    shutil.rmtree(folder, ignore_errors=True)

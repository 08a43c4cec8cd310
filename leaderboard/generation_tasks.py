"""Celery tasks of the generate queue: pages generated from a model endpoint a user submitted.

``generate(job_id)`` claims the job with one conditional UPDATE (queued -> running with a
fresh claim token), so a second delivery of the same message finds nothing to claim and
returns. The worker then reads the API key back, builds a job folder holding the split's
task inputs, asks the endpoint for every page through :mod:`evaluator.generation`, and
ends the job through :mod:`leaderboard.generation`: the bundle stored and its scoring
queued, or the job failed with a reason. Every ending holds only while the claim does.

While it runs, a heartbeat thread beats the claim (one request may take minutes), and
each finished task saves the progress and checks the claim: a job cancelled, or taken
over after the worker was presumed dead, stops between tasks without ending anything.
A worker killed outright stops beating; the reaper re-queues the job and the next claim
resumes it in the same folder, keeping the pages already generated.

Time limits: every request has ``GENERATION_REQUEST_TIMEOUT_SECONDS`` (retried with
backoff); each claim has ``GENERATION_TIME_LIMIT_SECONDS``, enforced by the run itself
(no request outlives it) and backed by Celery's soft and hard limits a little above.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

log = logging.getLogger(__name__)

# The run stops itself at GENERATION_TIME_LIMIT_SECONDS: no request outlives it, and a
# frame sampling started just before may take FFMPEG_TIMEOUT_S more. Celery's soft limit
# sits beyond that (it still lets the job end cleanly, key erased); the hard limit is the
# backstop for a worker stuck anywhere else (the reaper then re-queues the job).
SOFT_LIMIT = settings.GENERATION_TIME_LIMIT_SECONDS + 360
HARD_LIMIT = SOFT_LIMIT + 120


class GenerationFailed(Exception):
    """The job cannot produce any page; the message is the reason shown to the submitter."""


class ClaimLost(Exception):
    """The job was cancelled or taken over by another worker: stop, end nothing."""


@shared_task(name="leaderboard.generate", queue="generate", bind=True, acks_late=True,
             soft_time_limit=SOFT_LIMIT, time_limit=HARD_LIMIT)
def generate(self, job_id: int) -> str | None:
    """Generate the pages of generation job ``job_id``; returns its status after the run
    (None: not ours to run)."""
    from leaderboard.pipeline import worker_name

    return run(job_id, worker_name(self.request.hostname))


def run(job_id: int, worker: str | None = None) -> str | None:
    from leaderboard import generation
    from leaderboard.models import GenerationJob
    from leaderboard.pipeline import worker_name

    token = generation.claim(job_id, worker or worker_name())
    if token is None:
        log.info("generation job %s is not queued (ended, or another worker has it)", job_id)
        return None
    job = GenerationJob.objects.select_related("submission").get(pk=job_id)
    folder = generation.job_folder(job_id)
    log.info("generation job %s: attempt %d started for submission %s", job_id, job.attempts, job.submission_id)
    try:
        with Heartbeat(job_id, token):
            run_claimed(job, folder)
    finally:
        generation.erase_key(job_id)
        job.refresh_from_db(fields=["status"])
        if job.is_finished:  # otherwise the job was re-queued and its next claim resumes from the folder
            remove_folder(folder)
    return job.status


def run_claimed(job, folder: Path) -> None:
    """Generate, then hand over to scoring; every outcome is stored, none is raised."""
    from leaderboard import generation

    try:
        report = generate_pages(job, folder)
        generation.finish(job, report, folder / "out", folder / "bundle.zip")
    except ClaimLost:
        log.info("generation job %s: claim lost (cancelled, or taken over); stopped", job.pk)
    except GenerationFailed as exc:
        generation.fail(job, str(exc))
    except SoftTimeLimitExceeded:
        limit = settings.GENERATION_TIME_LIMIT_SECONDS
        generation.fail(job, f"generation took longer than the limit of {limit // 60} min.")
    except Exception as exc:  # noqa: BLE001 - our fault, not the submitter's: reported, refunded
        log.exception("generation job %s: worker error", job.pk)
        generation.fail(job, f"the generation worker hit an internal error ({type(exc).__name__}); "
                             "please submit again.")


def generate_pages(job, folder: Path) -> dict:
    """Ask the endpoint for every page of the split into ``folder/out``; returns the evaluator's report.

    A later claim of the same job resumes: pages an earlier claim generated are kept.
    """
    from evaluator.generation import generate as generate_bundle
    from leaderboard import generation

    config = _config(job)
    resume = job.attempts > 1
    data_path = _prepare_folder(job, folder, resume)
    outcomes: dict = {}

    def progress(outcome) -> None:
        outcomes[outcome.key] = outcome
        if not generation.record_progress(job, outcomes):
            raise ClaimLost

    deadline = time.monotonic() + settings.GENERATION_TIME_LIMIT_SECONDS
    return generate_bundle(data_path, folder / "out", config, workers=settings.GENERATION_CONCURRENCY,
                           resume=resume, deadline=deadline, on_task=progress)


def _config(job):
    """The endpoint settings with the key read back; raises GenerationFailed with the reason."""
    from evaluator.generation import ConfigError
    from leaderboard import crypto, generation

    try:
        config = generation.endpoint_config(job, generation.api_key(job))
    except crypto.DecryptionFailed:
        raise GenerationFailed("the stored API key could not be read back (the server's encryption key "
                               "changed); please submit again.") from None
    except ConfigError as exc:
        raise GenerationFailed(f"{exc}.") from None
    problems = generation.endpoint_problems(job.base_url)
    if problems:
        raise GenerationFailed(problems[0])
    return config


def _prepare_folder(job, folder: Path, resume: bool) -> Path:
    """A fresh job folder (or, resuming, the earlier one with its pages) with the split's inputs."""
    from leaderboard.submissions import split_tasks
    from leaderboard.tasksets import write_job_dataset

    tasks = list(split_tasks(job.submission.split))
    if not tasks:
        raise GenerationFailed("the split has no published tasks.")
    remove_folder(folder / "input" if resume else folder)
    folder.mkdir(parents=True, exist_ok=True)
    return write_job_dataset(tasks, folder / "input")


class Heartbeat:
    """Beats the claim from a thread while the run waits on the endpoint; stops beating once
    the claim is lost (the run itself stops at its next finished task)."""

    def __init__(self, job_id: int, token: str, interval: float | None = None):
        self.job_id, self.token = job_id, token
        self.interval = interval or settings.EVALUATION_HEARTBEAT_SECONDS
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"generation-{job_id}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join()

    def _loop(self) -> None:
        from django.db import connections

        try:
            while not self.stopped.wait(self.interval):
                if not self.beat():
                    return
        finally:
            connections.close_all()  # this thread's connections only

    def beat(self) -> bool:
        """One beat; False once the claim is gone (a database error is retried at the next beat)."""
        from leaderboard import generation

        try:
            held = generation.beat(self.job_id, self.token)
        except Exception as exc:  # noqa: BLE001 - a database hiccup: the next beat may get through
            log.warning("generation job %s: heartbeat failed (%s)", self.job_id, type(exc).__name__)
            return True
        if not held:
            log.info("generation job %s: claim lost; heartbeat stopped", self.job_id)
        return held


def remove_folder(folder: Path) -> None:
    """Remove a job folder, read-only task inputs included."""
    if not folder.exists():
        return
    for path, _dirs, _files in os.walk(folder):
        os.chmod(path, 0o700)  # write_job_dataset's folders are read-only
    shutil.rmtree(folder, ignore_errors=True)

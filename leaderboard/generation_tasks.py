"""Celery tasks of the generate queue: pages generated from a model endpoint a user submitted.

``generate(job_id)`` claims the job with one conditional UPDATE (queued -> running), so
a second delivery of the same message finds nothing to claim and returns. The worker
then reads the API key back, builds a job folder holding the split's task inputs, asks
the endpoint for every page through :mod:`evaluator.generation`, and ends the job
through :mod:`leaderboard.generation`: the bundle stored and its scoring queued, or the
job failed with a reason. The API key is erased whatever happens.

Time limits: every request has ``GENERATION_REQUEST_TIMEOUT_SECONDS`` (retried with
backoff); the whole job has ``GENERATION_TIME_LIMIT_SECONDS``, enforced by the run itself
(no request outlives it) and backed by Celery's soft and hard limits a little above.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

log = logging.getLogger(__name__)

# The run stops itself at GENERATION_TIME_LIMIT_SECONDS: no request outlives it, and a
# frame sampling started just before may take FFMPEG_TIMEOUT_S more. Celery's soft limit
# sits beyond that (it still lets the job end cleanly, key erased); the hard limit is the
# backstop for a worker stuck anywhere else.
SOFT_LIMIT = settings.GENERATION_TIME_LIMIT_SECONDS + 360
HARD_LIMIT = SOFT_LIMIT + 120


class GenerationFailed(Exception):
    """The job cannot produce any page; the message is the reason shown to the submitter."""


@shared_task(name="leaderboard.generate", queue="generate", acks_late=True, soft_time_limit=SOFT_LIMIT,
             time_limit=HARD_LIMIT)
def generate(job_id: int) -> str | None:
    """Generate the pages of generation job ``job_id``; returns how it ended (None: not ours to run)."""
    return run(job_id)


def run(job_id: int) -> str | None:
    from leaderboard import generation
    from leaderboard.models import GenerationJob

    if not generation.claim(job_id):
        log.info("generation job %s is not queued (done, or another worker has it)", job_id)
        return None
    job = GenerationJob.objects.select_related("submission").get(pk=job_id)
    folder = Path(settings.JOBS_ROOT) / f"generation-{job_id}"
    log.info("generation job %s started for submission %s", job_id, job.submission_id)
    try:
        run_claimed(job, folder)
    finally:
        generation.erase_key(job_id)
        remove_folder(folder)
    job.refresh_from_db(fields=["status"])
    return job.status


def run_claimed(job, folder: Path) -> None:
    """Generate, then hand over to scoring; every outcome is stored, none is raised."""
    from leaderboard import generation

    try:
        report = generate_pages(job, folder)
        generation.finish(job, report, folder / "out", folder / "bundle.zip")
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
    """Ask the endpoint for every page of the split into ``folder/out``; returns the evaluator's report."""
    from evaluator.generation import ConfigError
    from evaluator.generation import generate as generate_bundle
    from leaderboard import crypto, generation
    from leaderboard.submissions import split_tasks
    from leaderboard.tasksets import write_job_dataset

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
    tasks = list(split_tasks(job.submission.split))
    if not tasks:
        raise GenerationFailed("the split has no published tasks.")
    remove_folder(folder)
    folder.mkdir(parents=True)
    data_path = write_job_dataset(tasks, folder / "input")
    outcomes: dict = {}

    def progress(outcome) -> None:
        outcomes[outcome.key] = outcome
        generation.record_progress(job.pk, outcomes)

    deadline = time.monotonic() + settings.GENERATION_TIME_LIMIT_SECONDS
    return generate_bundle(data_path, folder / "out", config, workers=settings.GENERATION_CONCURRENCY,
                           deadline=deadline, on_task=progress)


def remove_folder(folder: Path) -> None:
    """Remove a job folder, read-only task inputs included."""
    if not folder.exists():
        return
    for path, _dirs, _files in os.walk(folder):
        os.chmod(path, 0o700)  # write_job_dataset's folders are read-only
    shutil.rmtree(folder, ignore_errors=True)

"""Wake-ups for the workers: the only code that sends Celery messages.

A message is only a wake-up: the database decides what runs, so a lost or refused message
costs nothing but time (the reaper sends it again: :mod:`leaderboard.worker.reaper`). Tasks
are named, never imported (``leaderboard/tasks.py`` is an adapter above everything else);
a task registered in this process, as in Celery's eager mode, runs through the same call.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from leaderboard.celery import app
from leaderboard.models import Evaluation, GenerationJob

log = logging.getLogger(__name__)

EVALUATE = "leaderboard.evaluate"
GENERATE = "leaderboard.generate"
RETRY_POLICY = {"max_retries": 2, "interval_start": 0.5}


def evaluation(evaluation_id: int) -> bool:
    """Send the wake-up for a queued evaluation; False when the broker refused (the reaper resends)."""
    return _send(Evaluation, EVALUATE, "evaluate", evaluation_id, "evaluation")


def generation_job(job_id: int) -> bool:
    """Send the wake-up for a queued generation job; False (logged) when the broker refused
    (the job stays queued and undispatched: the reaper sends it again)."""
    return _send(GenerationJob, GENERATE, "generate", job_id, "generation job")


def _send(model, task_name: str, queue: str, pk: int, label: str) -> bool:
    queued = model.objects.filter(pk=pk, status="queued")
    queued.update(dispatched_at=timezone.now())
    try:
        app.signature(task_name, args=[pk], queue=queue).apply_async(retry=True, retry_policy=RETRY_POLICY)
    except Exception as exc:  # noqa: BLE001 - any broker failure: the row stays queued, the reaper retries
        log.warning("could not dispatch %s %s (%s); the reaper will retry", label, pk, type(exc).__name__)
        queued.update(dispatched_at=None)
        return False
    return True

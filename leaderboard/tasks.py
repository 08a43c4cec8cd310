"""Celery tasks: the only adapter between the database and the evaluator.

Tasks take primary keys, never model instances, and are safe to run twice. A message is
only a wake-up: the database decides what runs (see :mod:`leaderboard.pipeline`).
"""

from __future__ import annotations

import logging
import socket

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

log = logging.getLogger(__name__)

# Our own loop stops the evaluator at EVALUATION_TIME_LIMIT_SECONDS; Celery's hard limit is
# only the backstop for a worker stuck outside that loop.
EVALUATE_HARD_LIMIT = settings.EVALUATION_TIME_LIMIT_SECONDS + 600


@shared_task(name="leaderboard.ping", queue="default", time_limit=30)
def ping() -> dict:
    """Answer with the worker's host name: proves a worker consumes the broker (``manage.py check_worker``)."""
    return {"pong": True, "host": socket.gethostname()}


@shared_task(name="leaderboard.evaluate", queue="evaluate", bind=True, acks_late=True,
             time_limit=EVALUATE_HARD_LIMIT)
def evaluate(self, evaluation_id: int) -> int | None:
    """Woken for ``evaluation_id``: run the next evaluation in fair order (maybe another one)."""
    from leaderboard import pipeline

    return pipeline.run_next(evaluation_id, pipeline.worker_name(self.request.hostname))


@shared_task(name="leaderboard.reap", queue="default", time_limit=120)
def reap() -> dict:
    """Re-queue evaluations of dead workers and re-send lost wake-ups (Celery beat runs this)."""
    from leaderboard import pipeline

    return pipeline.reap()


@worker_ready.connect
def _recover_on_start(sender, **kwargs) -> None:
    """A (re)starting worker node first re-queues what it was running when it died, then reaps."""
    from leaderboard import pipeline

    try:
        recovered = pipeline.reap_node(sender.hostname)
        counts = pipeline.reap()
    except Exception:  # noqa: BLE001 - a database hiccup must not stop the worker; beat reaps later
        log.exception("reaping at worker start failed")
        return
    log.info("worker %s started: %s re-queued from this node, reaper %s", sender.hostname, recovered, counts)

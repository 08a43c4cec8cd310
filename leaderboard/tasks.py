"""Celery tasks: every task of the site, and the only adapter between the broker and the worker code.

Tasks take primary keys, never model instances, and are safe to run twice. A message is
only a wake-up: the database decides what runs (:mod:`leaderboard.worker.claims`). Messages
are sent by task name from :mod:`leaderboard.intake.dispatch`, which never imports this module.

Queues: ``evaluate`` (scoring), ``generate`` (pages from model endpoints), ``default``
(the reaper, the ping).

The worker code (:mod:`leaderboard.worker`) is imported when a task runs, not with this module:
a process that only sends or waits for a task (``ping.delay().get()``) imports it without
setting Django's apps up, and the models cannot be imported before that.
"""

from __future__ import annotations

import logging
import socket

from celery import shared_task
from celery.signals import worker_process_init, worker_process_shutdown, worker_ready
from django.conf import settings

log = logging.getLogger(__name__)

# Our own loop stops the evaluator at EVALUATION_TIME_LIMIT_SECONDS (OFFICIAL_TIME_LIMIT_SECONDS for
# iwr-official jobs); Celery's hard limit is only the backstop for a worker stuck outside that loop.
EVALUATE_HARD_LIMIT = max(settings.EVALUATION_TIME_LIMIT_SECONDS, settings.OFFICIAL_TIME_LIMIT_SECONDS) + 600
# A generation run stops itself at GENERATION_TIME_LIMIT_SECONDS: no request outlives it, and a
# frame sampling started just before may take FFMPEG_TIMEOUT_S more. Celery's soft limit sits
# beyond that (it still lets the job end cleanly, key erased); the hard limit is the backstop
# for a worker stuck anywhere else (the reaper then re-queues the job).
GENERATE_SOFT_LIMIT = settings.GENERATION_TIME_LIMIT_SECONDS + 360
GENERATE_HARD_LIMIT = GENERATE_SOFT_LIMIT + 120


@shared_task(name="leaderboard.ping", queue="default", time_limit=30)
def ping() -> dict:
    """Answer with the worker's host name: proves a worker consumes the broker (``manage.py check_worker``)."""
    return {"pong": True, "host": socket.gethostname()}


@shared_task(name="leaderboard.evaluate", queue="evaluate", bind=True, acks_late=True,
             time_limit=EVALUATE_HARD_LIMIT)
def evaluate(self, evaluation_id: int) -> int | None:
    """Woken for ``evaluation_id``: run the next evaluation in fair order (maybe another one)."""
    from leaderboard.worker import scoring
    from leaderboard.worker.claims import worker_name

    return scoring.run_next(evaluation_id, worker_name(self.request.hostname))


@shared_task(name="leaderboard.generate", queue="generate", bind=True, acks_late=True,
             soft_time_limit=GENERATE_SOFT_LIMIT, time_limit=GENERATE_HARD_LIMIT)
def generate(self, job_id: int) -> str | None:
    """Generate the pages of generation job ``job_id``; returns its status after the run
    (None: not ours to run)."""
    from leaderboard.worker import generating
    from leaderboard.worker.claims import worker_name

    return generating.run(job_id, worker_name(self.request.hostname))


@shared_task(name="leaderboard.reap", queue="housekeeping", time_limit=120)
def reap() -> dict:
    """Re-queue the work of dead workers and re-send lost wake-ups (Celery beat runs this)."""
    from leaderboard.worker import reaper

    return reaper.reap()


@worker_ready.connect
def _recover_on_start(sender, **kwargs) -> None:
    """A (re)starting worker node first re-queues what it was running when it died, then reaps."""
    from leaderboard.worker import reaper

    try:
        recovered = reaper.reap_node(sender.hostname)
        counts = reaper.reap()
    except Exception:  # noqa: BLE001 - a database hiccup must not stop the worker; beat reaps later
        log.exception("reaping at worker start failed")
        return
    log.info("worker %s started: %s re-queued from this node, reaper %s", sender.hostname, recovered, counts)


@worker_process_init.connect
def _start_standby(**kwargs) -> None:
    """A pool process of a worker that scores starts its first evaluator on standby
    (leaderboard/worker/standby.py); the housekeeping worker's processes score nothing."""
    from celery import current_app

    from leaderboard.worker import standby

    if "evaluate" not in (current_app.amqp.queues.consume_from or {}):
        return
    try:
        standby.prepare()
    except Exception:  # noqa: BLE001 - the first evaluation then starts cold
        log.exception("evaluator standby not started")


@worker_process_shutdown.connect
def _end_standby(**kwargs) -> None:
    from leaderboard.worker import standby

    standby.discard()

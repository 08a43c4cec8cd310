"""Claims: how a worker takes a queued row (an evaluation or a generation job) and keeps it,
written once for both kinds of work.

The database is the source of truth and a message only a wake-up. A worker claims a queued
row with one conditional UPDATE (queued -> running with a fresh claim token; no locks), so a
second delivery of the same wake-up, or a second worker, finds nothing to claim. While it
runs, the worker beats the claim's heartbeat; everything it stores or ends holds only while
its token still matches (:meth:`Claims.holding`), so work ends exactly once, and a heartbeat
that matches no row (cancelled, or taken over) tells the worker to stop.

The reaper (:meth:`Claims.reap`, by Celery beat and at worker start: :mod:`leaderboard.worker.reaper`)
re-queues a running row whose heartbeat went stale (its worker died) and re-sends wake-ups
nobody picked up. An infrastructure failure re-queues the row while attempts remain
(``CLAIM_MAX_ATTEMPTS``) and ends it as failed after the last one (:meth:`Claims.requeue_or_fail`).
Every one of these answers in the same words: requeued, failed or lost (the claim no longer held).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, GenerationJob

log = logging.getLogger(__name__)

REQUEUED, FAILED, LOST = "requeued", "failed", "lost"


def worker_name(hostname: str | None = None) -> str:
    """``<celery node name>:<pid>``: which process holds a claim (the node part finds orphans)."""
    return f"{hostname or socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Claims:
    """The claim machinery for one model with ``status``, ``claim_token``, ``worker``, ``attempts``,
    ``started_at``, ``heartbeat_at`` and ``dispatched_at`` fields.

    ``wake(pk)`` sends the row's wake-up; ``claim_fields`` are set by every claim and
    ``requeue_fields`` by every re-queue. What giving up on a row means (its failure, a refund,
    a notice) is the caller's: ``give_up(row, rows, reason, **extra)`` ends ``rows`` (the row
    under a claim condition) as an infrastructure failure and says whether it did.
    """

    model: type
    label: str
    wake: Callable[[int], bool]
    worker_label: str = "worker"  # how failure reasons name the worker that died
    claim_fields: dict = field(default_factory=dict)
    requeue_fields: dict = field(default_factory=dict)

    # -- claiming and holding

    def claim(self, pk: int, worker: str) -> str | None:
        """Queued -> running for ``worker``; returns the claim token, or None when another worker
        (or an earlier delivery of the same wake-up) has it already."""
        token = uuid.uuid4().hex
        now = timezone.now()
        won = self.model.objects.filter(pk=pk, status="queued").update(
            status="running", claim_token=token, worker=worker[:200], started_at=now, heartbeat_at=now,
            attempts=F("attempts") + 1, **self.claim_fields,
        )
        return token if won else None

    def holding(self, pk: int, token: str):
        """The row, only while the claim ``token`` still holds it (not cancelled, not taken over)."""
        return self.model.objects.filter(pk=pk, status="running", claim_token=token)

    def beat(self, pk: int, token: str, **fields) -> bool:
        """Record that the claim's worker is alive (and any progress ``fields``); False once the
        claim no longer holds: the worker must stop."""
        return bool(self.holding(pk, token).update(heartbeat_at=timezone.now(), **fields))

    def heartbeat(self, pk: int, token: str, interval: float | None = None) -> Heartbeat:
        """A thread beating the claim while the worker waits on something slow (see :class:`Heartbeat`)."""
        return Heartbeat(self, pk, token, interval or settings.CLAIM_HEARTBEAT_SECONDS)

    # -- infrastructure failures

    def requeue_or_fail(self, row, rows, reason: str, give_up: Callable[..., bool], **extra) -> str:
        """An infrastructure failure of ``rows`` (``row`` under a claim condition): queue it again
        while attempts remain (the wake-up goes out on commit), else give up on it, never charged."""
        row.refresh_from_db(fields=["attempts"])
        if row.attempts >= settings.CLAIM_MAX_ATTEMPTS:
            final = f"{reason}; gave up after {row.attempts} attempts."
            return FAILED if give_up(row, rows, final, **extra) else LOST
        # dispatched_at is set now: the wake-up goes out on commit (a refused one resets it).
        if not rows.update(status="queued", claim_token="", worker="", heartbeat_at=None,
                           dispatched_at=timezone.now(), **self.requeue_fields):
            return LOST
        log.warning("%s %s re-queued after attempt %d: %s", self.label, row.pk, row.attempts, reason)
        transaction.on_commit(partial(self.wake, row.pk))
        return REQUEUED

    def recover(self, row, rows, reason: str, give_up: Callable[..., bool]) -> str:
        """A dead claim on ``rows``: :meth:`requeue_or_fail` in one transaction."""
        with transaction.atomic():
            return self.requeue_or_fail(row, rows, reason, give_up)

    # -- the reaper

    def reap(self, give_up: Callable[..., bool], now=None) -> dict:
        """Re-queue (or, after the last attempt, fail) running rows whose worker stopped beating and
        re-send wake-ups nobody picked up; returns how many of each."""
        now = now or timezone.now()
        stale = Q(heartbeat_at__lt=now - timedelta(seconds=settings.CLAIM_STALE_SECONDS))
        stale |= Q(heartbeat_at__isnull=True)  # claimed before heartbeats existed
        counts = {REQUEUED: 0, FAILED: 0, LOST: 0, "redispatched": 0}
        for row in self._rows().filter(stale, status="running"):
            rows = self.holding(row.pk, row.claim_token).filter(stale)
            reason = f"the {self.worker_label} {row.worker or '(unknown)'} stopped responding"
            counts[self.recover(row, rows, reason, give_up)] += 1
        unsent = Q(dispatched_at__isnull=True)
        unsent |= Q(dispatched_at__lt=now - timedelta(seconds=settings.CLAIM_REDISPATCH_SECONDS))
        for pk in self.model.objects.filter(unsent, status="queued").values_list("pk", flat=True):
            counts["redispatched"] += self.wake(pk)
        return counts

    def reap_node(self, node: str, give_up: Callable[..., bool]) -> int:
        """A worker node (re)starting: what it was running died with it; re-queue it now."""
        recovered = 0
        for row in self._rows().filter(status="running", worker__startswith=f"{node}:"):
            rows = self.holding(row.pk, row.claim_token)
            recovered += self.recover(row, rows, f"the {self.worker_label} {node} restarted", give_up) == REQUEUED
        return recovered

    def _rows(self):
        return self.model.objects.select_related("submission")


EVALUATIONS = Claims(Evaluation, "evaluation", wake=lambda pk: dispatch.evaluation(pk),
                     claim_fields={"tasks_done": 0}, requeue_fields={"tasks_done": 0})
# A generation job keeps its progress across claims: the next claim resumes from the pages made.
GENERATION_JOBS = Claims(GenerationJob, "generation job", wake=lambda pk: dispatch.generation_job(pk),
                         worker_label="generation worker")


class Heartbeat:
    """Beats a claim from a thread while the run waits on something slow (one endpoint request
    may take minutes); stops beating once the claim is lost (the run itself stops at its next
    check of the claim)."""

    def __init__(self, claims: Claims, pk: int, token: str, interval: float):
        self.claims, self.pk, self.token, self.interval = claims, pk, token, interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"{claims.label}-{pk}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        self.thread.join()

    def _loop(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                if not self.beat():
                    return
        finally:
            connections.close_all()  # this thread's connections only

    def beat(self) -> bool:
        """One beat; False once the claim is gone (a database error is retried at the next beat)."""
        try:
            held = self.claims.beat(self.pk, self.token)
        except Exception as exc:  # noqa: BLE001 - a database hiccup: the next beat may get through
            log.warning("%s %s: heartbeat failed (%s)", self.claims.label, self.pk, type(exc).__name__)
            return True
        if not held:
            log.info("%s %s: claim lost; heartbeat stopped", self.claims.label, self.pk)
        return held

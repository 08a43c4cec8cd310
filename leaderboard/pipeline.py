"""The scoring pipeline: from a queued evaluation to stored scores, exactly once.

The database is the source of truth and the broker only a wake-up call:

- :func:`dispatch` sends a wake-up for an evaluation (after its row is committed).
- A woken worker runs :func:`run_next`: it picks the next evaluation in *fair* order
  (:func:`fair_queue`), claims it with one conditional UPDATE (queued -> running with a
  fresh claim token; no locks) and gives up quietly if another worker was faster.
- The claimed evaluation runs as a :class:`leaderboard.jobs.Job`: a job directory (the
  extracted bundle and the split's task data, read-only), the evaluator CLI on it as a child
  process, and every task result the evaluator writes saved at once (``update_or_create``:
  idempotent), with the progress count and a heartbeat. A heartbeat that matches no row
  (cancelled, or taken over after the worker was presumed dead) stops the job.
- At the end the scores, confidence intervals, summary, artifacts and the scrubbed
  evaluator log are stored and the status becomes scored or failed, again only while the
  claim token still matches, so a job can never finish twice.
- :func:`reap` (periodically, and when a worker starts) re-queues running evaluations
  whose heartbeat went stale and re-sends wake-ups nobody picked up; it reaps the
  generation jobs of model-endpoint submissions too (:func:`leaderboard.generation.reap`).

Failures carry a kind and a reason a person can act on. Infrastructure failures (a dead
worker, the evaluator killed by a signal, an error in this process) are retried up to
``EVALUATION_MAX_ATTEMPTS`` claims and never charged to the submitter's quota; neither
are evaluator faults. A bundle the intake rules refuse, or a job over its time limit,
stays charged.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import uuid
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from leaderboard import quotas
from leaderboard.heldout import CHARGED_KINDS  # the submitter's doing; every other failure is refunded
from leaderboard.jobs import SCORE_FIELDS, Job, Outcome, holding, job_tasks, save_task_result
from leaderboard.models import Evaluation
from leaderboard.models.submissions import stored_task_finals

log = logging.getLogger(__name__)

Status = Evaluation.Status
Kind = Evaluation.FailureKind
FAIR_CANDIDATES = 200


# --------------------------------------------------------------------------- waking workers


def dispatch(evaluation_id: int) -> bool:
    """Send the wake-up for a queued evaluation; False when the broker refused (the reaper resends)."""
    from leaderboard.tasks import evaluate

    Evaluation.objects.filter(pk=evaluation_id).update(dispatched_at=timezone.now())
    try:
        evaluate.apply_async(args=[evaluation_id], queue="evaluate", retry=True,
                             retry_policy={"max_retries": 2, "interval_start": 0.5})
    except Exception as exc:  # noqa: BLE001 - any broker failure: the row stays queued, the reaper retries
        log.warning("could not dispatch evaluation %s (%s); the reaper will retry", evaluation_id, exc)
        Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(dispatched_at=None)
        return False
    return True


def worker_name(hostname: str | None = None) -> str:
    """``<celery node name>:<pid>``: which process holds a claim (the node part finds orphans)."""
    return f"{hostname or socket.gethostname()}:{os.getpid()}"


# --------------------------------------------------------------------------- fair order


def fair_queue(now=None, limit: int = FAIR_CANDIDATES) -> list[int]:
    """Queued evaluation ids in the order they should run.

    Priority first (rescoring waits behind every user), then the owner with the fewest
    evaluations running or started within the fairness window (so one user's twenty
    submissions do not block another user's one), then age.
    """
    now = now or timezone.now()
    candidates = list(
        Evaluation.objects.filter(status=Status.QUEUED)
        .order_by("priority", "created_at", "pk")
        .values_list("pk", "priority", "created_at", "submission__owner_id")[:limit]
    )
    load = owner_load({owner for *_, owner in candidates}, now)
    candidates.sort(key=lambda row: (row[1], load.get(row[3], 0), row[2], row[0]))
    return [row[0] for row in candidates]


def owner_load(owner_ids: set, now) -> dict:
    """Owner id -> evaluations running or started recently (None stands for owner-less rows)."""
    since = now - timedelta(seconds=settings.EVALUATION_FAIRNESS_WINDOW_SECONDS)
    busy = Q(status=Status.RUNNING) | Q(started_at__gte=since)
    rows = (
        Evaluation.objects.filter(busy, submission__owner_id__in=[o for o in owner_ids if o is not None])
        .values("submission__owner_id").annotate(n=Count("pk"))
    )
    load = {row["submission__owner_id"]: row["n"] for row in rows}
    if None in owner_ids:
        load[None] = Evaluation.objects.filter(busy, submission__owner__isnull=True).count()
    return load


# --------------------------------------------------------------------------- claiming


def claim(evaluation_id: int, worker: str) -> str | None:
    """Queued -> running for this worker; returns the claim token, or None if someone else won."""
    token = uuid.uuid4().hex
    now = timezone.now()
    won = Evaluation.objects.filter(pk=evaluation_id, status=Status.QUEUED).update(
        status=Status.RUNNING, claim_token=token, worker=worker[:200], started_at=now, heartbeat_at=now,
        attempts=F("attempts") + 1, tasks_done=0,
    )
    return token if won else None


def run_next(hint_id: int | None = None, worker: str | None = None) -> int | None:
    """Claim and run the next evaluation in fair order (``hint_id`` is only the id of the
    wake-up that brought us here); returns the id run, or None when nothing was queued."""
    worker = worker or worker_name()
    for evaluation_id in fair_queue():
        token = claim(evaluation_id, worker)
        if token:
            log.info("worker %s runs evaluation %s (woken for %s)", worker, evaluation_id, hint_id)
            run_claimed(evaluation_id, token)
            return evaluation_id
    return None


def run_claimed(evaluation_id: int, token: str) -> None:
    """Run a claimed evaluation to its end; every outcome is stored, none is raised."""
    evaluation = Evaluation.objects.select_related("submission").get(pk=evaluation_id)
    job = Job(evaluation, token)
    try:
        try:
            outcome = job.run()
        except Exception as exc:  # noqa: BLE001 - our own or the machine's fault: retry, never charge
            log.exception("evaluation %s: worker error", evaluation_id)
            outcome = Outcome.retry(f"the scoring worker hit an internal error ({type(exc).__name__})")
        apply_outcome(evaluation, token, outcome, job)
    finally:
        job.cleanup()


# --------------------------------------------------------------------------- outcomes

def apply_outcome(evaluation: Evaluation, token: str, outcome: Outcome, job: Job | None = None) -> None:
    log_text = job.scrubbed_log() if job else ""
    if outcome.status == "scored":
        store_scores(evaluation, token, outcome.results, log_text, job.out_dir if job else None)
    elif outcome.status == "failed":
        fail(evaluation, holding(evaluation, token), outcome.kind, outcome.reason, log_text)
    elif outcome.status == "retry":
        requeue_or_fail(evaluation, holding(evaluation, token), outcome.reason, log_text)
    else:
        log.info("evaluation %s: claim %s no longer holds; results discarded", evaluation.pk, token)


def fail(evaluation: Evaluation, rows, kind: str, reason: str, log_text: str = "") -> bool:
    """``rows`` (the evaluation under a claim condition) -> failed; refunds unless a charged kind."""
    with transaction.atomic():
        done = rows.update(status=Status.FAILED, failure_kind=kind, failure_reason=reason,
                           log=log_text, finished_at=timezone.now(), claim_token="")
        if done and kind not in CHARGED_KINDS and not evaluation.is_rescore:
            quotas.refund(evaluation.submission)
        if done:
            transaction.on_commit(partial(_finished, evaluation.pk))
    return bool(done)


def requeue_or_fail(evaluation: Evaluation, rows, reason: str, log_text: str = "") -> str:
    """An infrastructure failure of ``rows`` (the evaluation under a claim condition): queue it
    again while attempts remain, else fail it (never charged). Returns queued, failed or lost."""
    evaluation.refresh_from_db(fields=["attempts"])
    if evaluation.attempts >= settings.EVALUATION_MAX_ATTEMPTS:
        final = f"{reason}; gave up after {evaluation.attempts} attempts. This is not charged to your quota."
        return "failed" if fail(evaluation, rows, Kind.INFRASTRUCTURE, final, log_text) else "lost"
    if rows.update(status=Status.QUEUED, claim_token="", worker="", heartbeat_at=None, tasks_done=0):
        log.warning("evaluation %s re-queued: %s", evaluation.pk, reason)
        transaction.on_commit(partial(dispatch, evaluation.pk))
        return "queued"
    return "lost"


def _finished(evaluation_id: int) -> None:
    """After a scoring (or a failure) is committed: invalidate every cached leaderboard page, build
    the most read ones again right away so the next reader does not pay for it, and tell the
    submitter. The scoring is already stored: none of this may undo or fail it."""
    from leaderboard import notifications
    from leaderboard.cache import bump_generation

    steps = (("cache invalidation", bump_generation), ("leaderboard warm-up", warm_leaderboard),
             ("notification", partial(notifications.evaluation_finished, evaluation_id)))
    for name, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - a cache outage or a mail server error must not fail the job
            log.exception("evaluation %s: %s failed (the results are stored)", evaluation_id, name)


def warm_leaderboard() -> None:
    from leaderboard.views.rankings import warm_default_views

    warm_default_views()


# --------------------------------------------------------------------------- storing results


def confidence_intervals(results: dict) -> dict:
    """95 % bootstrap intervals over tasks of every stored score: Final, IFS, VFS, Low-level and
    High-level (failed tasks count 0)."""
    from evaluator.scoring import bootstrap_ci, effective_score

    scores = [effective_score(result) for result in results.values()]
    fields = {}
    for name in SCORE_FIELDS:
        if scores:
            fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = bootstrap_ci([s[name] for s in scores])
    return fields


def store_scores(evaluation: Evaluation, token: str, document: dict, log_text: str, out_dir: Path | None) -> bool:
    """Save every task result, the summary and the intervals; running -> scored once."""
    tasks = job_tasks(evaluation)
    task_results = {key: value for key, value in document.get("tasks", {}).items() if key in tasks}
    summary = document.get("summary") or {}
    fields = {name: summary.get(name) for name in SCORE_FIELDS}
    fields.update(confidence_intervals(task_results))
    with transaction.atomic():
        for key, result in task_results.items():
            save_task_result(evaluation, tasks[key], result)
        fields["task_finals"] = stored_task_finals(evaluation.pk)  # read back: exactly what was stored
        won = holding(evaluation, token).update(
            status=Status.SCORED, finished_at=timezone.now(), claim_token="", log=log_text,
            evaluator_version=str(document.get("evaluator_version") or "")[:40],
            protocol=str(document.get("protocol") or evaluation.protocol)[:40],
            summary=summary, n_tasks=int(summary.get("n_tasks") or len(task_results)),
            tasks_done=len(task_results), tasks_total=len(tasks),
            artifacts_dir=str(evaluation.pk), **fields,
        )
        if won:
            transaction.on_commit(partial(_finished, evaluation.pk))
    if won and out_dir is not None:
        publish_artifacts(evaluation.pk, out_dir)
    return bool(won)


def publish_artifacts(evaluation_id: int, out_dir: Path) -> Path:
    """Move the job's output to ARTIFACTS_ROOT/<id>/ (replacing an earlier attempt's)."""
    target = Path(settings.ARTIFACTS_ROOT) / str(evaluation_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    shutil.move(str(out_dir), str(target))
    return target


# --------------------------------------------------------------------------- the reaper


def reap(now=None) -> dict:
    """Re-queue running evaluations whose worker stopped beating, re-send lost wake-ups."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.EVALUATION_STALE_SECONDS)
    counts = {"queued": 0, "failed": 0, "lost": 0, "redispatched": 0}
    for evaluation in Evaluation.objects.select_related("submission").filter(status=Status.RUNNING,
                                                                             heartbeat_at__lt=stale):
        rows = holding(evaluation, evaluation.claim_token).filter(heartbeat_at__lt=stale)
        counts[_recover(evaluation, rows, f"the worker {evaluation.worker} stopped responding")] += 1
    unsent = now - timedelta(seconds=settings.EVALUATION_REDISPATCH_SECONDS)
    for evaluation_id in Evaluation.objects.filter(
        Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=unsent), status=Status.QUEUED
    ).values_list("pk", flat=True):
        counts["redispatched"] += dispatch(evaluation_id)
    counts["generation"] = _reap_generation(now)
    return counts


def _reap_generation(now) -> dict:
    """Generation jobs of model-endpoint submissions are reaped on the same schedule."""
    from leaderboard import generation

    return generation.reap(now)


def reap_node(node: str) -> int:
    """A worker node (re)starting: whatever it was running before is dead; re-queue it now."""
    orphans = Evaluation.objects.select_related("submission").filter(status=Status.RUNNING,
                                                                     worker__startswith=f"{node}:")
    recovered = 0
    for evaluation in orphans:
        rows = holding(evaluation, evaluation.claim_token)
        recovered += _recover(evaluation, rows, f"the worker {node} restarted") == "queued"
    from leaderboard import generation

    return recovered + generation.reap_node(node)  # the node's generation jobs died with it too


def _recover(evaluation: Evaluation, rows, reason: str) -> str:
    with transaction.atomic():
        return requeue_or_fail(evaluation, rows, reason)

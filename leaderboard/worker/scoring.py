"""Scoring: from a queued evaluation to stored scores, exactly once.

- A woken worker runs :func:`run_next`: it picks the next evaluation in *fair* order
  (:func:`fair_queue`), claims it (:data:`leaderboard.worker.claims.EVALUATIONS`: one
  conditional UPDATE, no locks) and gives up quietly if another worker was faster.
- The claimed evaluation runs as an :class:`~leaderboard.worker.evaluator_run.EvaluatorRun`:
  a job directory (the extracted bundle and the split's task data, read-only), the evaluator
  CLI on it as a child process, and every task result the evaluator writes saved at once
  (idempotent), with the progress count and a heartbeat. A heartbeat that matches no row
  (cancelled, or taken over after the worker was presumed dead) stops the run.
- At the end the scores, confidence intervals, summary, artifacts and the scrubbed
  evaluator log are stored and the status becomes scored or failed, again only while the
  claim token still matches, so an evaluation can never finish twice. After the commit the
  leaderboard generation moves on, the most read pages are built again and the submitter is
  told (:func:`finished`).

Failures carry a kind and a reason a person can act on. Infrastructure failures (a dead
worker, the evaluator killed by a signal, an error in this process) are retried up to
``CLAIM_MAX_ATTEMPTS`` claims and never charged to the submitter's quota; neither
are evaluator faults. A bundle the intake rules refuse, or a run over its time limit,
stays charged.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from evaluator.scoring import bootstrap_ci, effective_score
from leaderboard import board_pages, notifications, official, quotas, ranking
from leaderboard.heldout import CHARGED_KINDS  # the submitter's doing; every other failure is refunded
from leaderboard.models import Evaluation
from leaderboard.models.submissions import SCORE_FIELDS, stored_task_finals
from leaderboard.worker import standby
from leaderboard.worker.claims import EVALUATIONS, worker_name
from leaderboard.worker.evaluator_run import EvaluatorRun, Outcome, job_tasks, save_task_result

log = logging.getLogger(__name__)

Status = Evaluation.Status
Kind = Evaluation.FailureKind
FAIR_CANDIDATES = 200


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


def run_next(hint_id: int | None = None, worker: str | None = None) -> int | None:
    """Claim and run the next evaluation in fair order (``hint_id`` is only the id of the
    wake-up that brought us here); returns the id run, or None when nothing was queued."""
    worker = worker or worker_name()
    for evaluation_id in fair_queue():
        token = EVALUATIONS.claim(evaluation_id, worker)
        if token:
            log.info("worker %s runs evaluation %s (woken for %s)", worker, evaluation_id, hint_id)
            run_claimed(evaluation_id, token)
            return evaluation_id
    return None


def run_claimed(evaluation_id: int, token: str) -> None:
    """Run a claimed evaluation to its end; every outcome is stored, none is raised."""
    evaluation = Evaluation.objects.select_related("submission").get(pk=evaluation_id)
    run = EvaluatorRun(evaluation, token)
    try:
        try:
            outcome = run.run()
        except Exception as exc:  # noqa: BLE001 - our own or the machine's fault: retry, never charge
            log.exception("evaluation %s: worker error", evaluation_id)
            outcome = Outcome.retry(f"the scoring worker hit an internal error ({type(exc).__name__})")
        apply_outcome(evaluation, token, outcome, run)
    finally:
        run.cleanup()
        standby.prepare(evaluation.protocol)  # the next evaluation's evaluator starts while this worker is idle


# --------------------------------------------------------------------------- outcomes

def apply_outcome(evaluation: Evaluation, token: str, outcome: Outcome, run: EvaluatorRun | None = None) -> None:
    log_text = run.scrubbed_log() if run else ""
    rows = EVALUATIONS.holding(evaluation.pk, token)
    if outcome.status == "scored":
        store_scores(evaluation, token, outcome.results, log_text, run.checked_dir if run else None)
    elif outcome.status == "failed":
        fail(evaluation, rows, outcome.kind, outcome.reason, log_text)
    elif outcome.status == "retry":
        EVALUATIONS.requeue_or_fail(evaluation, rows, outcome.reason, give_up, log_text=log_text)
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
            transaction.on_commit(partial(finished, evaluation.pk))
    return bool(done)


def give_up(evaluation: Evaluation, rows, reason: str, log_text: str = "") -> bool:
    """The last attempt failed on our side: failed as infrastructure, never charged."""
    return fail(evaluation, rows, Kind.INFRASTRUCTURE, f"{reason} This is not charged to your quota.", log_text)


def finished(evaluation_id: int) -> None:
    """After a scoring (or a failure) is committed: invalidate every cached leaderboard page (and rank
    the evaluation's stored boards again), build the most read ones again right away so the next
    reader does not pay for it, and tell the submitter. The scoring is already stored: none of this
    may undo or fail it."""
    steps = (("cache invalidation", partial(ranking.evaluation_finished, evaluation_id)),
             ("leaderboard warm-up", warm_leaderboard),
             ("notification", partial(notifications.evaluation_finished, evaluation_id)))
    for name, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - a cache outage or a mail server error must not fail the job
            log.exception("evaluation %s: %s failed (the results are stored)", evaluation_id, name)


def warm_leaderboard() -> None:
    board_pages.warm_default_views()


# --------------------------------------------------------------------------- storing results


def confidence_intervals(results: dict) -> dict:
    """95 % bootstrap intervals over tasks of every stored score: Final, IFS, VFS, Low-level and
    High-level (failed tasks count 0)."""
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
        won = EVALUATIONS.holding(evaluation.pk, token).update(
            status=Status.SCORED, finished_at=timezone.now(), claim_token="", log=log_text,
            evaluator_version=str(document.get("evaluator_version") or "")[:40],
            protocol=str(document.get("protocol") or evaluation.protocol)[:40],
            summary=summary, n_tasks=int(summary.get("n_tasks") or len(task_results)),
            judge_record=official.judge_counters(document),
            tasks_done=len(task_results), tasks_total=len(tasks),
            artifacts_dir=str(evaluation.pk), **fields,
        )
        if won:
            transaction.on_commit(partial(finished, evaluation.pk))
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
    return EVALUATIONS.reap(give_up, now)


def reap_node(node: str) -> int:
    """A worker node (re)starting: whatever it was running before is dead; re-queue it now."""
    return EVALUATIONS.reap_node(node, give_up)

"""Evaluations people ask for: queued after an upload or a rescore, cancelled, or born ended.

A queued evaluation's wake-up is sent only once the transaction that created it has
committed (:mod:`leaderboard.intake.dispatch`), and the "being scored" note of its
leaderboard view is dropped then too. Cancelling follows one rule for both kinds of work:
queued -> cancelled at once and the quota refunded; running -> cancelled at once, and its
worker notices the lost claim at its next heartbeat and stops (the slot is spent).
"""

from __future__ import annotations

import logging
from functools import partial

from django.db import transaction
from django.utils import timezone

from leaderboard import quotas, tasksets
from leaderboard.board_pages import forget_being_scored
from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, GenerationJob, Submission

log = logging.getLogger(__name__)

USER_PRIORITY = 5
RESCORE_PRIORITY = 9  # lower runs first: maintainers' rescoring waits behind users' submissions
CANCELLED_REASON = "Cancelled by the submitter."
GENERATION_CANCELLED_REASON = "Cancelled by the submitter while its pages were being generated."


class NotCancellable(Exception):
    """The evaluation has finished already; the message says how it ended."""


def queue_evaluation(submission: Submission, protocol, *, rescore: bool = False, **fields) -> Evaluation:
    """A queued evaluation of ``submission`` under ``protocol`` (an evaluator Protocol); ``fields``: further
    fields of the row (an official evaluation's judge model ids)."""
    evaluation = Evaluation.objects.create(
        submission=submission, protocol=protocol.full_name, protocol_name=protocol.name, is_rescore=rescore,
        priority=RESCORE_PRIORITY if rescore else USER_PRIORITY,
        tasks_total=tasksets.split_tasks(submission.split).count(), **fields,
    )
    transaction.on_commit(partial(forget_being_scored, submission.split, protocol.full_name))
    return evaluation


def ended_evaluation(submission: Submission, status: str, kind: str, reason: str) -> Evaluation:
    """An evaluation born ended (failed or cancelled): the submission page and the API show why,
    for an endpoint submission whose pages were never all generated."""
    from evaluator.protocols import get_protocol

    protocol = get_protocol(submission.protocol)
    return Evaluation.objects.create(
        submission=submission, protocol=protocol.full_name, protocol_name=protocol.name, status=status,
        failure_kind=kind, failure_reason=reason, finished_at=timezone.now(),
        tasks_total=tasksets.split_tasks(submission.split).count(),
    )


def generation_ended(status: str, **fields) -> dict:
    """Fields that end a generation job; the API key is erased in the same update."""
    return {"status": status, "finished_at": timezone.now(), "api_key_encrypted": b"", **fields}


# --------------------------------------------------------------------------- cancel


def cancel(submission: Submission) -> Evaluation:
    """Cancel the submission's own evaluation (or, for an endpoint submission still generating
    its pages, its generation job: :func:`cancel_generation`). Raises NotCancellable once it has
    finished."""
    if submission.kind == Submission.Kind.ENDPOINT:
        cancelled = cancel_generation(submission)
        if cancelled is not None:
            return cancelled
    evaluation = submission.primary_evaluation
    if evaluation is None or evaluation.is_finished:
        state = evaluation.get_status_display() if evaluation else "not evaluated"
        raise NotCancellable(f"Submission #{submission.pk} cannot be cancelled: it is {state}.")
    fields = {"status": Evaluation.Status.CANCELLED, "finished_at": timezone.now(), "failure_reason": CANCELLED_REASON}
    with transaction.atomic():
        if Evaluation.objects.filter(pk=evaluation.pk, status=Evaluation.Status.QUEUED).update(**fields):
            quotas.refund(submission)
        elif not Evaluation.objects.filter(pk=evaluation.pk, status=Evaluation.Status.RUNNING).update(**fields):
            evaluation.refresh_from_db()
            raise NotCancellable(f"Submission #{submission.pk} cannot be cancelled: it is {evaluation.status}.")
    evaluation.refresh_from_db()
    submission.refresh_from_db(fields=["charged"])
    forget_being_scored(submission.split, evaluation.protocol)
    return evaluation


def cancel_generation(submission: Submission) -> Evaluation | None:
    """Cancel an endpoint submission whose pages are still being generated.

    Queued: cancelled at once, key erased, quota refunded. Running: cancelled and key
    erased at once; the worker finds its claim gone when its current task ends and stops
    (the slot is spent, as for a running evaluation). Either way the submission gets a
    cancelled evaluation saying so. None when the job is not generating any more (it
    finished meanwhile: cancel its evaluation instead).
    """
    job = GenerationJob.objects.filter(submission=submission).first()
    if job is None:
        return None
    Status = GenerationJob.Status
    ended = generation_ended(Status.CANCELLED, failure_reason=GENERATION_CANCELLED_REASON)
    with transaction.atomic():
        if GenerationJob.objects.filter(pk=job.pk, status=Status.QUEUED).update(**ended):
            quotas.refund(submission)
        elif not GenerationJob.objects.filter(pk=job.pk, status=Status.RUNNING).update(**ended):
            return None
        evaluation = ended_evaluation(submission, Evaluation.Status.CANCELLED, "", GENERATION_CANCELLED_REASON)
    log.info("generation job %s cancelled (was %s)", job.pk, job.status)
    submission.refresh_from_db(fields=["charged"])
    return evaluation


# --------------------------------------------------------------------------- rescoring


def rescorable(submission: Submission) -> bool:
    """Anything with a stored bundle: uploaded, a baseline, or generated from an endpoint."""
    kinds = (Submission.Kind.BUNDLE, Submission.Kind.BASELINE, Submission.Kind.ENDPOINT)
    return submission.kind in kinds and bool(submission.bundle)


def queue_rescore(submission: Submission) -> Evaluation | None:
    """Queue a rescore under the current version of the submission's protocol, behind users'
    submissions. Earlier evaluations are kept as they are. Returns None when there is
    nothing to do: no stored bundle, or an evaluation under this version exists already
    (queued, running or scored)."""
    from evaluator.protocols import get_protocol

    if not rescorable(submission):
        return None
    protocol = get_protocol(submission.protocol)
    live = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING, Evaluation.Status.SCORED)
    if submission.evaluations.filter(protocol=protocol.full_name, status__in=live).exists():
        return None
    with transaction.atomic():
        evaluation = queue_evaluation(submission, protocol, rescore=True)
        transaction.on_commit(partial(dispatch.evaluation, evaluation.pk))
    return evaluation

"""Email to submitters when their evaluation finishes (console backend unless SMTP is set).

Rescoring by maintainers sends nothing. A mail failure is logged and never fails a job.
"""

from __future__ import annotations

import logging

from django.conf import settings

from leaderboard.mail import send_later
from leaderboard.models import Evaluation

log = logging.getLogger(__name__)


def submission_url(submission_id: int) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/submissions/{submission_id}/"


def evaluation_finished(evaluation_id: int) -> bool:
    """Tell the owner how the evaluation ended; True when a mail was sent."""
    evaluation = Evaluation.objects.select_related("submission__owner").filter(pk=evaluation_id).first()
    if evaluation is None or evaluation.is_rescore or evaluation.status not in (
        Evaluation.Status.SCORED, Evaluation.Status.FAILED
    ):
        return False
    owner = evaluation.submission.owner
    if owner is None or not owner.email:
        return False
    subject, body = compose(evaluation)
    try:
        return send_later(subject, body, [owner.email])  # SMTP: queued, never waited for here
    except Exception:  # noqa: BLE001 - SMTP trouble is logged; the scores are stored either way
        log.exception("could not email %s about evaluation %s", owner.email, evaluation_id)
        return False


def compose(evaluation: Evaluation) -> tuple[str, str]:
    submission = evaluation.submission
    name = f"#{submission.pk} {submission.model_name} ({submission.split})"
    link = submission_url(submission.pk)
    if evaluation.status == Evaluation.Status.SCORED:
        subject = f"[IWR-Bench] {name} scored: Final {100 * (evaluation.final or 0):.2f}"
        body = (f"Your submission {name} was scored under {evaluation.protocol}.\n\n"
                f"Final {100 * (evaluation.final or 0):.2f}   IFS {100 * (evaluation.ifs or 0):.2f}   "
                f"VFS {100 * (evaluation.vfs or 0):.2f}   over {evaluation.n_tasks} tasks\n\n"
                f"Per-task results: {link}\n")
    else:
        subject = f"[IWR-Bench] {name} failed"
        body = (f"Your submission {name} could not be scored ({evaluation.get_failure_kind_display()}).\n\n"
                f"{evaluation.failure_reason}\n\n"
                f"{'This submission was not charged to your daily quota.' if not submission.charged else ''}\n"
                f"Details and the evaluator log: {link}\n")
    return subject, body

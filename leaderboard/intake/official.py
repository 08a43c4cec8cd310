"""Official scoring an operator starts from the admin: iwr-official evaluations of chosen entries.

Each is a rescore (queued behind users' submissions, never charged) under the current iwr-official
version with the judge model ids configured now; the worker passes exactly those ids to the evaluator.
Entries are refused, each with its reason, when official scoring is not configured, when their split's
ground truth may not be sent to the judge (:func:`leaderboard.official.may_judge_split`), when they have
no stored bundle, or when an evaluation by the same judge is queued, running or scored already.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from django.db import transaction

from leaderboard import official
from leaderboard.intake import dispatch
from leaderboard.intake.evaluations import queue_evaluation, rescorable
from leaderboard.models import Evaluation, Submission

LIVE = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING, Evaluation.Status.SCORED)


@dataclass
class OfficialPlan:
    """What starting official scoring of some entries would do: who is judged, who is refused and why."""

    judged: list[Submission] = field(default_factory=list)
    refused: dict[str, list[Submission]] = field(default_factory=dict)  # reason -> entries

    def refuse(self, reason: str, submission: Submission) -> None:
        self.refused.setdefault(reason, []).append(submission)


def plan(submissions) -> OfficialPlan:
    """Which of ``submissions`` an official scoring would judge (nothing is queued)."""
    from evaluator.protocols import get_protocol

    result = OfficialPlan()
    reason = official.unavailable_reason()
    protocol = get_protocol(official.OFFICIAL).full_name
    config = official.judge_settings()
    for submission in submissions:
        if reason:
            result.refuse(reason, submission)
        elif not official.may_judge_split(submission.split):
            result.refuse(official.disclosure_refusal(submission.split), submission)
        elif not rescorable(submission):
            result.refuse("No stored bundle to judge (reported results, or pages never generated).", submission)
        elif submission.evaluations.filter(protocol=protocol, judge_model=config.judge_model,
                                           grounding_model=config.grounding_model, status__in=LIVE).exists():
            result.refuse("Already queued, running or scored by this judge.", submission)
        else:
            result.judged.append(submission)
    return result


def queue_official(submissions) -> tuple[list[Evaluation], OfficialPlan]:
    """Queue an official evaluation of every entry :func:`plan` judges; returns them and the plan."""
    from evaluator.protocols import get_protocol

    chosen = plan(submissions)
    protocol = get_protocol(official.OFFICIAL)
    config = official.judge_settings()
    queued = []
    with transaction.atomic():
        for submission in chosen.judged:
            evaluation = queue_evaluation(submission, protocol, rescore=True, judge_model=config.judge_model,
                                          grounding_model=config.grounding_model)
            transaction.on_commit(partial(dispatch.evaluation, evaluation.pk))
            queued.append(evaluation)
    return queued, chosen

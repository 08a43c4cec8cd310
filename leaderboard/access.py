"""Who may see and manage what: every visibility rule of the site, and the helpers each view and
API action opens with (they answer 404 for anything the reader may not open, so a private
object of someone else is indistinguishable from a missing one).

- Staff see and manage everything (:func:`is_staff`).
- A submission is visible when it is public, the reader's own, or the reader is staff
  (:func:`visible_submissions`); its owner and staff manage it (:func:`can_manage`): log,
  cancel, results download, generation state.
- A task's ground truth (action descriptions, assertions, reference checkpoints) is revealed
  for dev-split tasks and to staff only (:func:`reveals_task`); everything else non-staff read
  of a held-out task is scrubbed first (:func:`secrets_for`).
- The baselines of a held-out split are built from its reference pages, so their pages are
  ground truth too: only staff see them (:func:`reveals_ground_truth`, :func:`shows_pages`).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404
from django.shortcuts import get_object_or_404

from leaderboard import tasksets
from leaderboard.models import Evaluation, GenerationJob, Submission, Task, TaskResult
from leaderboard.models.tasks import Split
from leaderboard.secrecy import split_secrets

NO_SUBMISSION = "No submission matches the given query."
NO_ENDPOINT_SUBMISSION = "No endpoint submission matches the given query."


# --------------------------------------------------------------------------- rules


def is_staff(user) -> bool:
    """Maintainers: they see every submission, every task's ground truth and every log."""
    return bool(user.is_authenticated and user.is_staff)


def can_manage(user, submission: Submission) -> bool:
    """The owner (and staff) may see the log, cancel and download results."""
    return is_staff(user) or (user.is_authenticated and submission.owner_id == user.pk)


def visible_submissions(user):
    """Submissions ``user`` may open: public ones, their own, and everything for staff."""
    queryset = Submission.objects.select_related("owner")
    if is_staff(user):
        return queryset
    if user.is_authenticated:
        return queryset.filter(Q(public=True) | Q(owner=user))
    return queryset.filter(public=True)


def reveals_task(user, task: Task) -> bool:
    """Whether ``user`` may see the ground truth of ``task``: dev-split tasks, or staff."""
    return task.split == Split.DEV or is_staff(user)


def secrets_for(viewer, tasks) -> list[str]:
    """What to scrub from anything ``viewer`` reads about a job on ``tasks`` (nothing for staff)."""
    return [] if is_staff(viewer) else split_secrets(tasks)


def per_task_public(split: str) -> bool:
    """Per-task scores of a board's entries are public on the dev split only: on the held-out split,
    task-by-task scores would let anyone probe the hidden tasks one at a time."""
    return split == Split.DEV


def may_see_per_task(user, split: str) -> bool:
    """Per-task scores: public ones (:func:`per_task_public`) for everyone, all of them for staff."""
    return per_task_public(split) or is_staff(user)


def may_edit_entry(user, submission: Submission) -> bool:
    """Only the owner changes an entry's details, visibility or withdraws it (maintainers use the admin)."""
    return user.is_authenticated and submission.owner_id == user.pk and submission.kind in (
        Submission.Kind.BUNDLE, Submission.Kind.ENDPOINT)


def may_read_results(user, submission: Submission) -> bool:
    """The results document (per-task scores and step verdicts): its managers, and everyone for a
    public dev-split entry that is not a held-out baseline. A held-out entry's per-task scores
    stay with its managers (:func:`may_see_per_task`)."""
    if can_manage(user, submission):
        return True
    return submission.public and submission.split == Split.DEV and not reveals_ground_truth(submission)


def reveals_ground_truth(submission: Submission) -> bool:
    """Whether what ``submission``'s pages show is held-out ground truth: the evaluator's baselines of
    a held-out split are built from its reference pages, so their bundle, live preview, screenshots
    and replay video are near-copies of the reference checkpoints. Only staff see those; everyone
    else sees their scores and whether each step passed."""
    return submission.kind == Submission.Kind.BASELINE and submission.split != Split.DEV


def shows_pages(user, submission: Submission) -> bool:
    """Whether ``user`` (who can open ``submission``) may see what its pages look like: screenshots,
    replay videos, previews. Everyone, except for :func:`reveals_ground_truth` submissions (staff only)."""
    return is_staff(user) or not reveals_ground_truth(submission)


# --------------------------------------------------------------------------- what views open with


def viewable_submission(user, pk) -> Submission:
    """The submission if ``user`` may open it, else 404."""
    return get_object_or_404(visible_submissions(user), pk=pk)


def managed_submission(user, pk) -> Submission:
    """The submission if ``user`` may manage it (owner or staff), else 404."""
    submission = viewable_submission(user, pk)
    if not can_manage(user, submission):
        raise Http404(NO_SUBMISSION)
    return submission


def owned_entry(user, pk) -> Submission:
    """The submission if ``user`` may edit it (:func:`may_edit_entry`); 404 when they cannot open it,
    403 when they can but it is not theirs (a public entry, or staff reading one)."""
    submission = viewable_submission(user, pk)
    if not may_edit_entry(user, submission):
        raise PermissionDenied("Only the entry's owner can change it.")
    return submission


def readable_results(user, pk) -> Submission:
    """The submission if ``user`` may read its results document (:func:`may_read_results`), else 404."""
    submission = viewable_submission(user, pk)
    if not may_read_results(user, submission):
        raise Http404(NO_SUBMISSION)
    return submission


def managed_generation_job(user, submission_id: int) -> GenerationJob:
    """The generation job of an endpoint submission ``user`` may manage (owner or staff), else 404."""
    job = GenerationJob.objects.select_related("submission").filter(submission_id=submission_id).first()
    if job is None or not can_manage(user, job.submission):
        raise Http404(NO_ENDPOINT_SUBMISSION)
    return job


def visible_evaluation(user, evaluation_id: int) -> Evaluation:
    """The evaluation if its submission is visible to ``user``, else 404 (private ones do not exist)."""
    evaluation = get_object_or_404(Evaluation.objects.select_related("submission", "submission__owner"),
                                   pk=evaluation_id)
    if not visible_submissions(user).filter(pk=evaluation.submission_id).exists():
        raise Http404("No such evaluation.")
    return evaluation


def shows_task_results(user, split: str) -> bool:
    """Whether ``user`` may see per-task scores and pass/fail of tasks of ``split``: dev-split tasks, staff,
    or everyone once ``HELDOUT_TASK_RESULTS_PUBLIC`` opens them (the held-out rule: leaderboard/heldout.py)."""
    return split == Split.DEV or settings.HELDOUT_TASK_RESULTS_PUBLIC or is_staff(user)


def task_result(evaluation: Evaluation, key: str, user) -> TaskResult:
    """The result of task ``key`` in an evaluation the reader may see (:func:`visible_evaluation`), else 404;
    a 404 too for a held-out task whose per-task results ``user`` may not see (:func:`shows_task_results`)."""
    result = get_object_or_404(TaskResult.objects.select_related("task", "task__task_set"),
                               evaluation=evaluation, task__key=key)
    if not shows_task_results(user, result.task.split):
        raise Http404("Per-task results of the held-out split are shown to maintainers only.")
    return result


def public_task(set_slug: str, key: str) -> Task:
    """A published task, else 404 (drafts and withdrawn tasks do not exist for the public)."""
    return get_object_or_404(tasksets.public_tasks(), task_set__slug=set_slug, key=key)

"""What people see of a submission's state: the progress endpoint, the API, the results download.

Held-out ground truth never reaches a non-staff reader: failure reasons and task errors of
test-split tasks are scrubbed (:func:`leaderboard.access.secrets_for`) and their per-step
details left out. An endpoint submission's state never includes its API key, only whether
one is still stored.
"""

from __future__ import annotations

from leaderboard import access, heldout
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.models.tasks import Split
from leaderboard.secrecy import scrub, secrets_of
from leaderboard.tasksets import split_tasks

# What a scored evaluation shows: each score, then the bounds of its 95% interval (as on the leaderboard).
SCORE_COLUMNS = (*SCORE_FIELDS, *(f"{name}_ci_{side}" for name in SCORE_FIELDS for side in ("low", "high")), "n_tasks")


def status_payload(submission: Submission, viewer) -> dict:
    """The submission's state as the progress endpoint and the API show it to ``viewer``."""
    evaluation = submission.primary_evaluation
    payload = {
        "id": submission.pk, "model_name": submission.model_name, "split": submission.split,
        "protocol": submission.protocol, "public": submission.public, "created_at": submission.created_at,
        "status": evaluation.status if evaluation else _unevaluated_status(submission),
        "progress": {"tasks_done": evaluation.tasks_done if evaluation else 0,
                     "tasks_total": evaluation.tasks_total if evaluation else 0},
        "verified": submission.verified, "flagged": submission.flagged, "flag_reason": submission.flag_reason,
    }
    if evaluation is not None:
        payload.update(evaluation_payload(evaluation, viewer))
    if access.can_manage(viewer, submission):
        payload["charged"] = submission.charged
        if submission.kind == Submission.Kind.ENDPOINT:
            payload["generation"] = generation_summary(submission)
    return payload


def _unevaluated_status(submission: Submission) -> str:
    """An endpoint submission has no evaluation while its pages are being generated."""
    return "generating" if submission.kind == Submission.Kind.ENDPOINT else "not evaluated"


def evaluation_payload(evaluation: Evaluation, viewer) -> dict:
    payload = {"evaluation_id": evaluation.pk, "evaluation_protocol": evaluation.protocol,
               "started_at": evaluation.started_at, "finished_at": evaluation.finished_at}
    if evaluation.status == Evaluation.Status.SCORED:
        payload["scores"] = {name: getattr(evaluation, name) for name in SCORE_COLUMNS}
        payload["evaluator_version"] = evaluation.evaluator_version
    if evaluation.status in (Evaluation.Status.FAILED, Evaluation.Status.CANCELLED):
        reason = scrub(evaluation.failure_reason, access.secrets_for(viewer, split_tasks(evaluation.submission.split)))
        payload["failure"] = {"kind": evaluation.failure_kind, "kind_label": evaluation.get_failure_kind_display(),
                              "reason": reason}
    return payload


def task_rows(evaluation: Evaluation | None, viewer, *, with_steps: bool = False) -> list[dict]:
    """Per-task results for display or download; steps (ground truth) only for dev or staff. Held-out
    tasks have no row for non-staff (:func:`leaderboard.access.shows_task_results`)."""
    if evaluation is None:
        return []
    staff = access.is_staff(viewer)
    rows = []
    for result in evaluation.task_results.select_related("task"):
        if not access.shows_task_results(viewer, result.task.split):
            continue
        hidden = result.task.split == Split.TEST and not staff
        row = {"task": result.task.key, "steps_passed": result.steps_passed, "steps_total": result.steps_total,
               "error": scrub(result.error, secrets_of(result.task)) if hidden else result.error,
               **{name: getattr(result, name) for name in SCORE_FIELDS}}
        if with_steps and not hidden:
            row["steps"] = result.steps
        rows.append(row)
    return rows


def results_document(submission: Submission, viewer) -> dict:
    """The downloadable results: state, summary and per-task rows (test split: scores only; its small
    categories pooled for those who may not see per-task results, :func:`leaderboard.heldout.categories_for`)."""
    evaluation = submission.primary_evaluation
    document = status_payload(submission, viewer)
    if evaluation is not None and evaluation.status == Evaluation.Status.SCORED:
        document["summary"] = heldout.summary_for(viewer, submission.split, evaluation.summary)
    document["tasks"] = task_rows(evaluation, viewer, with_steps=True)
    return document


# --------------------------------------------------------------------------- endpoint submissions


def generation_payload(job: GenerationJob) -> dict:
    """The job's state for its owner: never the key, only whether one is still stored."""
    submission = job.submission
    evaluation = submission.primary_evaluation
    return {
        "id": submission.pk, "kind": submission.kind, "model_name": submission.model_name, "split": submission.split,
        "protocol": submission.protocol, "public": submission.public, "created_at": submission.created_at,
        "generation": {
            "status": job.status, "tasks_done": job.tasks_done, "tasks_total": split_tasks(submission.split).count(),
            "task_errors": job.task_errors or {}, "failure_reason": job.failure_reason,
            "base_url": job.base_url, "model_id": job.model_id, "max_tokens": job.max_tokens,
            "max_images": job.max_images, "max_frames": job.max_frames,
            "default_temperature": job.default_temperature, "length_parameter": job.length_parameter,
            "ran_at_default_temperature": job.ran_at_default_temperature, "notes": job.generation_notes,
            "api_key_stored": bool(bytes(job.api_key_encrypted or b"")), "finished_at": job.finished_at,
            "attempts": job.attempts, "started_at": job.started_at, "heartbeat_at": job.heartbeat_at,
            "cancellable": not job.is_finished, "bundle_available": bool(submission.bundle),
        },
        "evaluation": None if evaluation is None else {"id": evaluation.pk, "status": evaluation.status},
    }


def generation_summary(submission: Submission) -> dict | None:
    """The generation part of an endpoint submission's own state (for its managers), or None."""
    job = GenerationJob.objects.filter(submission=submission).first()
    if job is None:
        return None
    return {"status": job.status, "tasks_done": job.tasks_done, "tasks_total": split_tasks(submission.split).count(),
            "attempts": job.attempts, "ran_at_default_temperature": job.ran_at_default_temperature,
            "url": f"/submissions/{submission.pk}/generation/"}

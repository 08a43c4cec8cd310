"""Model-endpoint submissions: the rules behind /submit/endpoint/ and the API, kept out of views.

Instead of a bundle, a researcher gives an OpenAI-compatible endpoint (base URL, model
id, API key, optional limits). Accepting it charges the daily quota like a bundle and
creates, in one transaction, an endpoint :class:`Submission` and its
:class:`GenerationJob` holding the API key encrypted (:mod:`leaderboard.crypto`); the
wake-up on the ``generate`` queue is sent once that transaction has committed.

The worker (:mod:`leaderboard.generation_tasks`) asks the endpoint for every task's page
through the evaluator (:mod:`evaluator.generation`). When it ends:

- some pages were generated: the bundle zip is stored on ``Submission.bundle`` (the
  owner can download it), missing pages are listed with their reasons (they score 0),
  and the submission's evaluation is queued for the scoring pipeline;
- no page at all: the submission gets a failed evaluation of kind "generation" with the
  reason, and its quota slot is refunded (nothing was scored).

Whatever the outcome, the stored API key is erased (set to empty bytes) in the same
update that ends the job. The key is never shown again, never logged, and never part of
a page, an API answer or an error message.

Reliability follows the scoring pipeline (:mod:`leaderboard.pipeline`): the database is
the source of truth and a message only a wake-up. A worker claims a queued job with one
conditional UPDATE (a fresh claim token), beats its heartbeat while it runs and ends the
job only while its token still holds, so a job ends exactly once. :func:`reap` (run with
the pipeline's reaper, by Celery beat and at worker start) re-queues a running job whose
heartbeat went stale; the next claim resumes it, keeping the pages already generated.
After ``EVALUATION_MAX_ATTEMPTS`` claims it fails instead (key erased, quota refunded).
Wake-ups nobody picked up are sent again. :func:`cancel` ends a queued job at once
(refunded) or a running one (its worker notices the lost claim between tasks and stops);
either way the key is erased in the same update.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import socket
import uuid
from collections import Counter
from datetime import timedelta
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from leaderboard import crypto, quotas
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.submissions import SubmissionForm, can_manage, queue_evaluation, split_tasks

log = logging.getLogger(__name__)

Status = GenerationJob.Status
ENDED = (Status.DONE, Status.FAILED, Status.CANCELLED)
ENDPOINT_FIELDS = ("base_url", "model_id", "api_key", "max_tokens", "max_images", "max_frames")
NO_TIME_LEFT = "not generated: the overall time limit was reached"
CANCELLED_REASON = "Cancelled by the submitter while its pages were being generated."
JOB_FOLDER_PREFIX = "generation-"


# --------------------------------------------------------------------------- the form


class EndpointForm(SubmissionForm):
    """The Submit-a-model fields (split, protocol, model metadata) plus the endpoint's settings."""

    base_url = forms.URLField(max_length=200, assume_scheme="https", label="Base URL",
                              help_text="The OpenAI-compatible API root, e.g. https://api.example.com/v1; "
                                        "requests go to <base URL>/chat/completions.")
    model_id = forms.CharField(max_length=200, label="Model id", help_text="Sent as \"model\" with each request.")
    api_key = forms.CharField(
        required=False, max_length=1000, label="API key", widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted, used only to generate your pages and deleted when generation ends. "
                  "It is never shown again. Leave empty for an endpoint without keys.",
    )
    max_tokens = forms.IntegerField(min_value=256, initial=16000, label="Max tokens",
                                    help_text="Answer length limit per page.")
    max_images = forms.IntegerField(min_value=1, max_value=70, initial=70, label="Max images",
                                    help_text="Images per request (stitched assets + frames); the protocol allows 70.")
    max_frames = forms.IntegerField(min_value=1, max_value=64, initial=64, label="Max frames",
                                    help_text="Video frames per request (1 per second); the protocol allows 64.")

    field_order = ["split", "protocol", "base_url", "model_id", "api_key", "max_tokens", "max_images", "max_frames"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["bundle"]  # the platform makes the bundle
        self.fields["max_tokens"].max_value = settings.GENERATION_MAX_TOKENS
        self.fields["max_tokens"].validators.append(_max_tokens_validator())
        self.fields["base_url"].widget.attrs["placeholder"] = "https://api.example.com/v1"
        self.fields["api_key"].widget.attrs["autocomplete"] = "off"

    def clean_base_url(self):
        url = self.cleaned_data["base_url"].strip()
        problems = endpoint_problems(url)
        if problems:
            raise forms.ValidationError(problems)
        return url

    def clean(self):
        cleaned = super().clean()
        split = cleaned.get("split")
        if split and not split_tasks(split).exists():
            self.add_error("split", f"The {split} split has no published tasks yet; nothing can be generated.")
        return cleaned


def _max_tokens_validator():
    from django.core.validators import MaxValueValidator

    return MaxValueValidator(settings.GENERATION_MAX_TOKENS)


def endpoint_problems(url: str) -> list[str]:
    """Why the platform will not call ``url``: not a usable base URL, or not a public address."""
    from evaluator.generation import base_url_problems

    problems = base_url_problems(url)
    if problems or settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS:
        return problems
    problem = private_address_problem(url)
    return [problem] if problem else []


def private_address_problem(url: str) -> str | None:
    """A message when the URL's host resolves to a non-public address (loopback, private, link-local...)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return f"The host {host} could not be resolved."
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%", 1)[0])
        if not address.is_global:
            return (f"The base URL points to a non-public address ({address}); "
                    "the platform only calls endpoints on the public internet.")
    return None


# --------------------------------------------------------------------------- accepting


def accept(form: EndpointForm, user) -> GenerationJob:
    """Store a valid form's endpoint submission and queue its generation; raises QuotaExceeded.

    The quota is checked again under a lock in the same transaction as the rows.
    """
    from evaluator.protocols import get_protocol

    data = form.cleaned_data
    protocol = get_protocol(data["protocol"])
    with transaction.atomic():
        quotas.charge(user, data["split"])
        submission = form.save(commit=False)
        submission.owner, submission.kind, submission.protocol = user, Submission.Kind.ENDPOINT, protocol.name
        submission.save()
        job = GenerationJob.objects.create(
            submission=submission, base_url=data["base_url"], model_id=data["model_id"].strip(),
            api_key_encrypted=crypto.encrypt(data["api_key"].strip()) if data["api_key"].strip() else b"",
            max_tokens=data["max_tokens"], max_images=data["max_images"], max_frames=data["max_frames"],
        )
        transaction.on_commit(partial(dispatch, job.pk))
    return job


def dispatch(job_id: int) -> bool:
    """Send the wake-up for a queued generation job; False (logged) when the broker refused
    (the job stays queued and undispatched: the reaper sends it again)."""
    from leaderboard.generation_tasks import generate

    GenerationJob.objects.filter(pk=job_id, status=Status.QUEUED).update(dispatched_at=timezone.now())
    try:
        generate.apply_async(args=[job_id], queue="generate", retry=True,
                             retry_policy={"max_retries": 2, "interval_start": 0.5})
    except Exception as exc:  # noqa: BLE001 - any broker failure: the job stays queued, the reaper retries
        log.warning("could not dispatch generation job %s (%s); the reaper will retry", job_id, type(exc).__name__)
        GenerationJob.objects.filter(pk=job_id, status=Status.QUEUED).update(dispatched_at=None)
        return False
    return True


# --------------------------------------------------------------------------- claiming (worker side)


def claim(job_id: int, worker: str) -> str | None:
    """Queued -> running for ``worker``; returns the claim token, or None when another worker
    (or an earlier delivery of the same wake-up) has it already."""
    token = uuid.uuid4().hex
    now = timezone.now()
    won = GenerationJob.objects.filter(pk=job_id, status=Status.QUEUED).update(
        status=Status.RUNNING, claim_token=token, worker=worker[:200], started_at=now, heartbeat_at=now,
        attempts=F("attempts") + 1,
    )
    return token if won else None


def holding(job_id: int, token: str):
    """The job's row, only while the claim ``token`` still holds it (not cancelled, not taken over)."""
    return GenerationJob.objects.filter(pk=job_id, status=Status.RUNNING, claim_token=token)


def beat(job_id: int, token: str) -> bool:
    """Record that the claim's worker is alive; False once the claim no longer holds."""
    return bool(holding(job_id, token).update(heartbeat_at=timezone.now()))


def api_key(job: GenerationJob) -> str:
    """The job's API key in clear text, for the request headers only; raises crypto.DecryptionFailed."""
    stored = bytes(job.api_key_encrypted or b"")
    return crypto.decrypt(stored) if stored else ""


def endpoint_config(job: GenerationJob, key: str):
    from evaluator.generation import EndpointConfig

    return EndpointConfig(
        base_url=job.base_url, model=job.model_id, api_key=key, max_tokens=job.max_tokens,
        max_images=job.max_images, max_frames=job.max_frames,
        timeout=float(settings.GENERATION_REQUEST_TIMEOUT_SECONDS), retries=settings.GENERATION_RETRIES,
    )


def record_progress(job: GenerationJob, outcomes: dict) -> bool:
    """Save how many tasks are done and why pages are missing so far (a heartbeat too);
    False when the claim no longer holds: the worker must stop."""
    errors = {key: outcome.reason for key, outcome in outcomes.items() if not outcome.ok}
    return bool(holding(job.pk, job.claim_token).update(tasks_done=len(outcomes), task_errors=errors,
                                                       heartbeat_at=timezone.now()))


def _ended(status: str, **fields) -> dict:
    """Fields that end a job; the API key is erased in the same update."""
    return {"status": status, "finished_at": timezone.now(), "api_key_encrypted": b"", **fields}


def finish(job: GenerationJob, report: dict, out_dir: Path, zip_path: Path) -> Evaluation | None:
    """Store the generated bundle and queue its scoring; fail the job when no page was made.

    Returns the queued (or failed) evaluation, or None when the job was no longer ours.
    """
    from evaluator.bundle import make_bundle_zip
    from evaluator.generation import pages_of

    errors = {key: outcome["reason"] for key, outcome in report["tasks"].items() if outcome["status"] != "ok"}
    pages = pages_of(out_dir, report)
    if not pages:
        return fail(job, no_page_reason(errors), task_errors=errors, tasks_done=len(report["tasks"]))
    make_bundle_zip(pages, zip_path)
    stored = store_bundle(zip_path)
    try:
        return _queue_scoring(job, stored, zip_path, errors, len(report["tasks"]))
    except BaseException:
        default_storage.delete(stored)
        raise


def store_bundle(zip_path: Path) -> str:
    with open(zip_path, "rb") as handle:
        return default_storage.save(f"bundles/{timezone.now():%Y/%m}/generated-{uuid.uuid4().hex}.zip", handle)


def _queue_scoring(job: GenerationJob, stored: str, zip_path: Path, errors: dict, done: int) -> Evaluation | None:
    from evaluator.protocols import get_protocol
    from leaderboard import pipeline

    submission = job.submission
    with transaction.atomic():
        if not holding(job.pk, job.claim_token).update(**_ended(Status.DONE, task_errors=errors, tasks_done=done)):
            default_storage.delete(stored)
            return None
        submission.bundle = stored
        submission.bundle_size = zip_path.stat().st_size
        submission.bundle_sha256 = hashlib.sha256(zip_path.read_bytes()).hexdigest()
        submission.save(update_fields=["bundle", "bundle_size", "bundle_sha256"])
        evaluation = queue_evaluation(submission, get_protocol(submission.protocol))
        transaction.on_commit(partial(pipeline.dispatch, evaluation.pk))
    log.info("generation job %s done: %d page(s), %d missing; evaluation %s queued",
             job.pk, done - len(errors), len(errors), evaluation.pk)
    return evaluation


def fail(job: GenerationJob, reason: str, *, rows=None, kind: str = Evaluation.FailureKind.GENERATION,
         **fields) -> Evaluation | None:
    """End the job as failed (key erased), show the reason as a failed evaluation, refund the quota.

    ``rows`` is the job's row under the condition that lets this caller end it (default: the
    worker's own claim). Returns None when the condition no longer held.
    """
    rows = holding(job.pk, job.claim_token) if rows is None else rows
    with transaction.atomic():
        if not rows.update(**_ended(Status.FAILED, failure_reason=reason, **fields)):
            return None
        evaluation = _failed_evaluation(job.submission, reason, kind)
        quotas.refund(job.submission)
        transaction.on_commit(partial(_notify, evaluation.pk))
    log.info("generation job %s failed", job.pk)
    return evaluation


def _failed_evaluation(submission: Submission, reason: str, kind: str) -> Evaluation:
    """The submission's evaluation, born failed: the submission page and the API show why."""
    if kind == Evaluation.FailureKind.GENERATION:
        shown = f"No page could be generated from the endpoint: {reason}"
    else:
        shown = f"Page generation did not finish: {reason}"
    return _ended_evaluation(submission, Evaluation.Status.FAILED, kind,
                             f"{shown} This is not charged to your quota.")


def _ended_evaluation(submission: Submission, status: str, kind: str, reason: str) -> Evaluation:
    from evaluator.protocols import get_protocol

    protocol = get_protocol(submission.protocol)
    return Evaluation.objects.create(
        submission=submission, protocol=protocol.full_name, protocol_name=protocol.name, status=status,
        failure_kind=kind, failure_reason=reason, finished_at=timezone.now(),
        tasks_total=split_tasks(submission.split).count(),
    )


def _notify(evaluation_id: int) -> None:
    from leaderboard import notifications

    notifications.evaluation_finished(evaluation_id)


def erase_key(job_id: int) -> None:
    """Belt and braces: no ended job keeps a key (ending updates erase it already). A job that
    is queued or running again keeps its key: the next claim needs it to resume."""
    GenerationJob.objects.filter(pk=job_id, status__in=ENDED).update(api_key_encrypted=b"")


def no_page_reason(errors: dict) -> str:
    """One sentence for a job without pages: the most common reason, and how many tasks it hit."""
    if not errors:
        return "the split has no task to generate."
    reason, count = Counter(errors.values()).most_common(1)[0]
    share = "every task" if count == len(errors) else f"{count} of {len(errors)} tasks"
    return f"{reason} ({share})."


# --------------------------------------------------------------------------- cancelling


def cancel(submission: Submission) -> Evaluation | None:
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
    ended = _ended(Status.CANCELLED, failure_reason=CANCELLED_REASON)
    with transaction.atomic():
        if GenerationJob.objects.filter(pk=job.pk, status=Status.QUEUED).update(**ended):
            quotas.refund(submission)
        elif not GenerationJob.objects.filter(pk=job.pk, status=Status.RUNNING).update(**ended):
            return None
        evaluation = _ended_evaluation(submission, Evaluation.Status.CANCELLED, "", CANCELLED_REASON)
    log.info("generation job %s cancelled (was %s)", job.pk, job.status)
    submission.refresh_from_db(fields=["charged"])
    return evaluation


# --------------------------------------------------------------------------- the reaper


def reap(now=None) -> dict:
    """Re-queue (or, after the last attempt, fail) running jobs whose worker stopped beating,
    re-send wake-ups nobody picked up, and remove job folders of ended jobs."""
    now = now or timezone.now()
    stale = Q(heartbeat_at__lt=now - timedelta(seconds=settings.EVALUATION_STALE_SECONDS))
    stale |= Q(heartbeat_at__isnull=True)  # claimed before heartbeats existed
    counts = {"requeued": 0, "failed": 0, "lost": 0, "redispatched": 0}
    for job in GenerationJob.objects.select_related("submission").filter(stale, status=Status.RUNNING):
        rows = holding(job.pk, job.claim_token).filter(stale)
        counts[recover(job, rows, f"the generation worker {job.worker or '(unknown)'} stopped responding")] += 1
    unsent = Q(dispatched_at__isnull=True)
    unsent |= Q(dispatched_at__lt=now - timedelta(seconds=settings.EVALUATION_REDISPATCH_SECONDS))
    for job_id in GenerationJob.objects.filter(unsent, status=Status.QUEUED).values_list("pk", flat=True):
        counts["redispatched"] += dispatch(job_id)
    remove_ended_folders()
    return counts


def reap_node(node: str) -> int:
    """A worker node (re)starting: the jobs it was running died with it; re-queue them now."""
    recovered = 0
    for job in GenerationJob.objects.select_related("submission").filter(status=Status.RUNNING,
                                                                          worker__startswith=f"{node}:"):
        rows = holding(job.pk, job.claim_token)
        recovered += recover(job, rows, f"the generation worker {node} restarted") == "requeued"
    return recovered


def recover(job: GenerationJob, rows, reason: str) -> str:
    """A dead claim on ``rows``: queue the job again (the next claim resumes it) while attempts
    remain, else fail it, never charged. Returns requeued, failed or lost."""
    with transaction.atomic():
        if job.attempts >= settings.EVALUATION_MAX_ATTEMPTS:
            final = f"{reason}; gave up after {job.attempts} attempts."
            failed = fail(job, final, rows=rows, kind=Evaluation.FailureKind.INFRASTRUCTURE)
            return "failed" if failed else "lost"
        # dispatched_at is set now: the wake-up goes out on commit (a refused one resets it).
        if not rows.update(status=Status.QUEUED, claim_token="", worker="", heartbeat_at=None,
                           dispatched_at=timezone.now()):
            return "lost"
        log.warning("generation job %s re-queued after attempt %d: %s", job.pk, job.attempts, reason)
        transaction.on_commit(partial(dispatch, job.pk))
    return "requeued"


def job_folder(job_id: int) -> Path:
    """Where a job's inputs and pages live; kept between claims so a resumed run keeps its pages."""
    return Path(settings.JOBS_ROOT) / f"{JOB_FOLDER_PREFIX}{job_id}"


def remove_ended_folders() -> int:
    """Remove folders left by jobs that ended while no worker held them (a dead worker's job
    cancelled or failed by the reaper); returns how many were removed."""
    from leaderboard.generation_tasks import remove_folder

    root = Path(settings.JOBS_ROOT)
    found = {}
    for path in root.glob(f"{JOB_FOLDER_PREFIX}*") if root.is_dir() else []:
        suffix = path.name[len(JOB_FOLDER_PREFIX):]
        if suffix.isdigit() and path.is_dir():
            found[int(suffix)] = path
    live = set(GenerationJob.objects.filter(pk__in=found, status__in=[Status.QUEUED, Status.RUNNING])
               .values_list("pk", flat=True))
    for job_id in set(found) - live:
        remove_folder(found[job_id])
    return len(set(found) - live)


# --------------------------------------------------------------------------- what the owner sees


def managed_job(user, submission_id: int) -> GenerationJob | None:
    """The generation job of an endpoint submission ``user`` may manage (owner or staff), else None."""
    job = GenerationJob.objects.select_related("submission").filter(submission_id=submission_id).first()
    return job if job is not None and can_manage(user, job.submission) else None


def status_payload(job: GenerationJob) -> dict:
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
            "attempts": job.attempts, "url": f"/submissions/{submission.pk}/generation/"}

"""Accepting, cancelling and rescoring submissions: the rules behind the Submit page,
the API and the admin, kept out of the views.

A bundle upload is checked completely before anything is stored: the form fields, the
daily quota, then the bundle itself against the published tasks of the chosen split
(the evaluator's intake rules, every problem listed with the task it concerns). Only an
acceptable upload is stored, and the submission and its first evaluation are created in
one transaction; a failure at any point leaves no file and no row behind. The
evaluation's wake-up message is sent only once that transaction has committed.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from django import forms
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard import quotas
from leaderboard.models import Evaluation, Submission, Task
from leaderboard.models.tasks import Split
from leaderboard.ranking import SCORE_FIELDS
from leaderboard.secrecy import scrub, secrets_of, split_secrets

USER_PRIORITY = 5
SCORING_SHOWN = 5  # entries named in a leaderboard view's "being scored now" note
SCORING_SECONDS = 30  # how long that note is cached (a new submission clears it at once)
RESCORE_PRIORITY = 9  # lower runs first: maintainers' rescoring waits behind users' submissions
BUNDLE_SUFFIXES = (".zip",)
# What a scored evaluation shows: each score, then the bounds of its 95% interval (as on the leaderboard).
SCORE_COLUMNS = (*SCORE_FIELDS, *(f"{name}_ci_{side}" for name in SCORE_FIELDS for side in ("low", "high")), "n_tasks")


class NotCancellable(Exception):
    """The evaluation has finished already; the message says how it ended."""


@dataclass
class Accepted:
    """A stored submission, its queued evaluation and notes about the bundle (missing tasks...)."""

    submission: Submission
    evaluation: Evaluation
    notes: list[str] = field(default_factory=list)


def max_bundle_bytes() -> int:
    return settings.SUBMISSION_MAX_BUNDLE_MB * 1024 * 1024


def protocol_choices() -> list[tuple[str, str]]:
    from evaluator.protocols import get_protocol

    choices = []
    for name in settings.SUBMISSION_PROTOCOLS:
        try:
            choices.append((name, f"{name} (version {get_protocol(name).version})"))
        except ValueError:
            continue  # an operator listed a protocol this evaluator does not know: not offered
    return choices


def split_tasks(split: str):
    """The published tasks a submission to ``split`` is scored on, in key order."""
    return Task.objects.published().for_split(split).select_related("task_set").order_by("key")


def split_task_keys(split: str) -> set[str]:
    return set(split_tasks(split).values_list("key", flat=True))


class SubmissionForm(forms.ModelForm):
    """The fields of a bundle submission, shared by the Submit page and the API."""

    bundle = forms.FileField(help_text="A .zip with one <task id>/index.html per task.")
    protocol = forms.ChoiceField(choices=(), initial="iwr-det")
    paper_url = forms.URLField(required=False, assume_scheme="https", label="Paper link")
    code_url = forms.URLField(required=False, assume_scheme="https", label="Code link")

    class Meta:
        model = Submission
        fields = ["bundle", "split", "protocol", "model_name", "organisation", "model_size", "open_weights",
                  "paper_url", "code_url", "description", "public"]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}
        labels = {"model_name": "Model name", "model_size": "Model size", "open_weights": "Open weights",
                  "paper_url": "Paper link", "code_url": "Code link", "public": "Show on the public leaderboard"}

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.fields["protocol"].choices = protocol_choices()
        self.fields["split"].initial = Split.DEV
        self.fields["bundle"].widget.attrs.update({"accept": ".zip", "data-max-bytes": str(max_bundle_bytes())})
        self.report = None

    def clean_bundle(self):
        upload = self.cleaned_data["bundle"]
        if not upload.name.lower().endswith(BUNDLE_SUFFIXES):
            raise forms.ValidationError(f"The bundle must be a .zip file (got {upload.name!r}).")
        if upload.size > max_bundle_bytes():
            raise forms.ValidationError(
                f"The bundle is {upload.size / 1048576:.1f} MB; the limit is {settings.SUBMISSION_MAX_BUNDLE_MB} MB."
            )
        return upload

    def clean(self):
        cleaned = super().clean()
        split = cleaned.get("split")
        if split and self.user is not None:
            current = quotas.status(self.user, split)
            if current.remaining <= 0:
                self.add_error(None, quotas.exceeded_message(current))
        if split and cleaned.get("bundle"):  # checked even when other fields have problems: all at once
            self._check_bundle(cleaned["bundle"], split)
        return cleaned

    def _check_bundle(self, upload, split: str) -> None:
        from evaluator.bundle import inspect_bundle

        keys = split_task_keys(split)
        if not keys:
            self.add_error("split", f"The {split} split has no published tasks yet; nothing can be scored.")
            return
        with local_copy(upload) as path:
            self.report = inspect_bundle(path, keys)
        for problem in self.report.problems:
            self.add_error("bundle", problem)


def bundle_notes(report) -> list[str]:
    """What a person should know about an accepted bundle (none of it blocks the submission)."""
    notes = []
    if report.missing:
        notes.append(f"{len(report.missing)} task(s) have no page and will score 0: " + ", ".join(report.missing))
    if report.unmatched:
        notes.append("ignored (no such task in this split): " + ", ".join(report.unmatched))
    return notes + list(report.warnings)


@contextmanager
def local_copy(upload):
    """A path on disk holding the uploaded bytes (the upload itself when Django spooled it to a file)."""
    if hasattr(upload, "temporary_file_path"):
        yield Path(upload.temporary_file_path())
        return
    with tempfile.NamedTemporaryFile(prefix="iwr-upload-", suffix=".zip") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
        handle.flush()
        yield Path(handle.name)


def sha256_of(upload) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    return digest.hexdigest()


def accept(form: SubmissionForm, user) -> Accepted:
    """Store a valid form's submission and queue its evaluation; raises QuotaExceeded.

    Call only after ``form.is_valid()``. The quota is checked again under a lock in the
    same transaction, so two simultaneous uploads cannot both take the last slot.
    """
    from evaluator.protocols import get_protocol
    from leaderboard import pipeline

    upload = form.cleaned_data["bundle"]
    protocol = get_protocol(form.cleaned_data["protocol"])
    stored = None
    try:
        # Hashed and stored before the transaction: SQLite's write lock is held only for the rows.
        digest = sha256_of(upload)
        upload.seek(0)
        stored = default_storage.save(f"bundles/{timezone.now():%Y/%m}/{uuid.uuid4().hex}.zip", upload)
        with transaction.atomic():
            quotas.charge(user, form.cleaned_data["split"])
            submission = form.save(commit=False)
            submission.owner, submission.kind, submission.protocol = user, Submission.Kind.BUNDLE, protocol.name
            submission.bundle_size, submission.bundle_sha256 = upload.size, digest
            submission.bundle = stored  # a name: the file is in storage already (the form's upload is not saved again)
            submission.save()
            evaluation = queue_evaluation(submission, protocol)
            transaction.on_commit(partial(pipeline.dispatch, evaluation.pk))
    except BaseException:
        if stored:
            default_storage.delete(stored)
        raise
    return Accepted(submission, evaluation, bundle_notes(form.report) if form.report else [])


def queue_evaluation(submission: Submission, protocol, *, rescore: bool = False) -> Evaluation:
    """A queued evaluation of ``submission`` under ``protocol`` (an evaluator Protocol)."""
    evaluation = Evaluation.objects.create(
        submission=submission, protocol=protocol.full_name, protocol_name=protocol.name, is_rescore=rescore,
        priority=RESCORE_PRIORITY if rescore else USER_PRIORITY, tasks_total=split_tasks(submission.split).count(),
    )
    transaction.on_commit(partial(forget_being_scored, submission.split, protocol.full_name))
    return evaluation


# --------------------------------------------------------------------------- cancel


def cancel(submission: Submission) -> Evaluation:
    """Cancel the submission's own evaluation. Queued: cancelled at once and the quota refunded.
    Running: marked cancelled; its worker notices at the next heartbeat and stops (the slot is
    spent). Raises NotCancellable once it has finished. An endpoint submission still generating
    its pages is cancelled by :func:`leaderboard.generation.cancel` (the same rules)."""
    if submission.kind == Submission.Kind.ENDPOINT:
        from leaderboard import generation

        cancelled = generation.cancel(submission)
        if cancelled is not None:
            return cancelled
    evaluation = submission.primary_evaluation
    if evaluation is None or evaluation.is_finished:
        state = evaluation.get_status_display() if evaluation else "not evaluated"
        raise NotCancellable(f"Submission #{submission.pk} cannot be cancelled: it is {state}.")
    reason = "Cancelled by the submitter."
    fields = {"status": Evaluation.Status.CANCELLED, "finished_at": timezone.now(), "failure_reason": reason}
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
    from leaderboard import pipeline

    if not rescorable(submission):
        return None
    protocol = get_protocol(submission.protocol)
    live = (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING, Evaluation.Status.SCORED)
    if submission.evaluations.filter(protocol=protocol.full_name, status__in=live).exists():
        return None
    with transaction.atomic():
        evaluation = queue_evaluation(submission, protocol, rescore=True)
        transaction.on_commit(partial(pipeline.dispatch, evaluation.pk))
    return evaluation


def copy_bundle(submission: Submission, dest: Path) -> Path:
    """Copy the stored bundle to ``dest`` (storage-agnostic: works for remote storage too)."""
    with submission.bundle.open("rb") as source, open(dest, "wb") as target:
        shutil.copyfileobj(source, target, 1024 * 1024)
    return dest


# --------------------------------------------------------------------------- what people see


def can_manage(user, submission: Submission) -> bool:
    """The owner (and staff) may see the log, cancel and download results."""
    return user.is_authenticated and (user.is_staff or submission.owner_id == user.pk)


def reveals_ground_truth(submission: Submission) -> bool:
    """Whether what ``submission``'s pages show is held-out ground truth: the evaluator's baselines of
    a held-out split are built from its reference pages, so their bundle, live preview, screenshots
    and replay video are near-copies of the reference checkpoints. Only staff see those; everyone
    else sees their scores and whether each step passed."""
    return submission.kind == Submission.Kind.BASELINE and submission.split != Split.DEV


def shows_pages(user, submission: Submission) -> bool:
    """Whether ``user`` (who can open ``submission``) may see what its pages look like: screenshots,
    replay videos, previews. Everyone, except for :func:`reveals_ground_truth` submissions (staff only)."""
    return (user.is_authenticated and user.is_staff) or not reveals_ground_truth(submission)


def visible_submissions(user):
    """Submissions ``user`` may open: public ones, their own, and everything for staff."""
    queryset = Submission.objects.select_related("owner")
    if user.is_authenticated and user.is_staff:
        return queryset
    if user.is_authenticated:
        return queryset.filter(Q(public=True) | Q(owner=user))
    return queryset.filter(public=True)


def _secrets_for(viewer, tasks) -> list[str]:
    return [] if viewer.is_authenticated and viewer.is_staff else split_secrets(tasks)


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
    if can_manage(viewer, submission):
        payload["charged"] = submission.charged
        if submission.kind == Submission.Kind.ENDPOINT:
            from leaderboard import generation

            payload["generation"] = generation.generation_summary(submission)
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
        reason = scrub(evaluation.failure_reason, _secrets_for(viewer, split_tasks(evaluation.submission.split)))
        payload["failure"] = {"kind": evaluation.failure_kind, "kind_label": evaluation.get_failure_kind_display(),
                              "reason": reason}
    return payload


def task_rows(evaluation: Evaluation | None, viewer, *, with_steps: bool = False) -> list[dict]:
    """Per-task results for display or download; steps (ground truth) only for dev or staff. Held-out
    tasks have no row for non-staff (:func:`leaderboard.heldout.shows_task_results`)."""
    from leaderboard.heldout import shows_task_results

    if evaluation is None:
        return []
    staff = viewer.is_authenticated and viewer.is_staff
    rows = []
    for result in evaluation.task_results.select_related("task"):
        if not shows_task_results(viewer, result.task.split):
            continue
        hidden = result.task.split == Split.TEST and not staff
        row = {"task": result.task.key, "steps_passed": result.steps_passed, "steps_total": result.steps_total,
               "error": scrub(result.error, secrets_of(result.task)) if hidden else result.error,
               **{name: getattr(result, name) for name in ("final", "ifs", "vfs", "low_level", "high_level")}}
        if with_steps and not hidden:
            row["steps"] = result.steps
        rows.append(row)
    return rows


def results_document(submission: Submission, viewer) -> dict:
    """The downloadable results: state, summary and per-task rows (test split: scores only)."""
    evaluation = submission.primary_evaluation
    document = status_payload(submission, viewer)
    if evaluation is not None and evaluation.status == Evaluation.Status.SCORED:
        document["summary"] = evaluation.summary
    document["tasks"] = task_rows(evaluation, viewer, with_steps=True)
    return document


# --------------------------------------------------------------------------- entries being scored


@dataclass(frozen=True)
class BeingScored:
    """The public entries of one leaderboard view (split, protocol version) queued or being scored now:
    how many, and the first few (``id`` of the submission, ``model_name``, ``baseline``, ``status``)."""

    count: int = 0
    entries: tuple = ()

    @property
    def more(self) -> int:
        """How many are not named in ``entries``."""
        return self.count - len(self.entries)

    @property
    def baselines_only(self) -> bool:
        return self.count == len(self.entries) and all(entry["baseline"] for entry in self.entries)

    def signature(self) -> str:
        """What the leaderboard page shows of this, as a cache-key part."""
        return f"{self.count}:" + ",".join(f"{entry['id']}{entry['status'][0]}" for entry in self.entries)


def being_scored(split: str, protocol: str) -> BeingScored:
    """:class:`BeingScored` of a view, cached briefly per leaderboard generation (a finished scoring
    bumps the generation; a new or cancelled submission clears it: :func:`forget_being_scored`)."""
    from django.core.cache import cache

    key = _being_scored_key(split, protocol)
    found = cache.get(key)
    if found is None:
        found = _being_scored(split, protocol)
        cache.set(key, found, SCORING_SECONDS)
    return found


def forget_being_scored(split: str, protocol: str) -> None:
    from django.core.cache import cache

    cache.delete(_being_scored_key(split, protocol))


def _being_scored_key(split: str, protocol: str) -> str:
    from leaderboard.cache import get_generation

    return f"lb:being-scored:{get_generation()}:{split}:{hashlib.sha256(protocol.encode()).hexdigest()[:24]}"


def _being_scored(split: str, protocol: str) -> BeingScored:
    live = Evaluation.objects.filter(
        status__in=(Evaluation.Status.QUEUED, Evaluation.Status.RUNNING), protocol=protocol,
        submission__split=split, submission__public=True, submission__flagged=False)
    rows = list(live.order_by("-status", "priority", "created_at").values_list(
        "submission_id", "submission__model_name", "submission__kind", "status")[:SCORING_SHOWN + 1])
    count = len(rows) if len(rows) <= SCORING_SHOWN else live.count()
    entries = tuple({"id": pk, "model_name": name, "baseline": kind == Submission.Kind.BASELINE, "status": status}
                    for pk, name, kind, status in rows[:SCORING_SHOWN])
    return BeingScored(count, entries)

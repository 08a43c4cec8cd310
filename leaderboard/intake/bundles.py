"""Accepting a bundle upload: the rules behind the Submit page and the API, kept out of the views.

A bundle upload is checked completely before anything is stored: the form fields, the
daily quota, then the bundle itself against the published tasks of the chosen split
(the evaluator's intake rules, every problem listed with the task it concerns). Only an
acceptable upload is stored, and the submission and its first evaluation are created in
one transaction; a failure at any point leaves no file and no row behind. The
evaluation's wake-up message is sent only once that transaction has committed.
"""

from __future__ import annotations

import hashlib
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
from django.utils import timezone

from leaderboard import quotas, tasksets
from leaderboard.intake import dispatch
from leaderboard.intake.evaluations import queue_evaluation
from leaderboard.models import Evaluation, Submission
from leaderboard.models.tasks import Split

BUNDLE_SUFFIXES = (".zip",)
DEFAULT_PROTOCOL = "iwr-det"  # what an upload naming no protocol is scored under


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


class SubmissionForm(forms.ModelForm):
    """The fields of a bundle submission, shared by the Submit page and the API."""

    bundle = forms.FileField(help_text="A .zip with one <task id>/index.html per task.")
    protocol = forms.ChoiceField(choices=(), initial=DEFAULT_PROTOCOL, required=False,
                                 help_text=f"Scoring protocol (default {DEFAULT_PROTOCOL}).")
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
        self.quota_refusal = None  # the QuotaStatus that refused it, when the quota did

    def clean_protocol(self):
        """Empty means the default; the default must be one this site offers."""
        name = self.cleaned_data.get("protocol") or DEFAULT_PROTOCOL
        offered = [value for value, _label in self.fields["protocol"].choices]
        if name not in offered:
            raise forms.ValidationError(f"Unknown protocol {name!r}; this site scores under: {', '.join(offered)}.")
        return name

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
            self.quota_refusal = quotas.refusal(self.user, split)
            if self.quota_refusal:
                self.add_error(None, quotas.exceeded_message(self.quota_refusal))
        if split and cleaned.get("bundle"):  # checked even when other fields have problems: all at once
            self._check_bundle(cleaned["bundle"], split)
        return cleaned

    def _check_bundle(self, upload, split: str) -> None:
        keys = tasksets.split_task_keys(split)
        if not keys:
            self.add_error("split", f"The {split} split has no published tasks yet; nothing can be scored.")
            return
        with local_copy(upload) as path:
            self.report = self._read_bundle(path, keys)

    def _read_bundle(self, path, keys):
        """The bundle's report; its problems refuse the form."""
        from evaluator.bundle import inspect_bundle

        report = inspect_bundle(path, keys)
        for problem in report.problems:
            self.add_error("bundle", problem)
        return report


class CheckForm(SubmissionForm):
    """A dry run of the Submit fields: the same checks, but no quota is looked at or spent, nothing is
    stored, the model name may be left out, and the bundle's problems go into the check report
    (:func:`evaluator.bundle.check_bundle`) instead of refusing the form."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "user": None})
        self.fields["model_name"].required = False

    def _read_bundle(self, path, keys):
        """The check report; the bundle's problems are in it, the form stays valid."""
        from evaluator.bundle import check_bundle

        return check_bundle(path, keys)


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
            transaction.on_commit(partial(dispatch.evaluation, evaluation.pk))
    except BaseException:
        if stored:
            default_storage.delete(stored)
        raise
    return Accepted(submission, evaluation, bundle_notes(form.report) if form.report else [])

"""Owners managing their entries after submitting: the rules behind the submission page's
"Edit entry" form and ``PATCH /api/v1/submissions/ID/``.

An owner may change the entry's details (organisation, model size, open weights, paper and code
links, description), switch it between public and private, and withdraw it. A withdrawn entry
is private for good: it leaves every board and cannot be made public again (its scores stay
readable by its owner). Every change is recorded in the admin's history of the submission
(:class:`django.contrib.admin.models.LogEntry`), and a change that alters what a board shows
bumps the leaderboard generation once the transaction has committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django import forms
from django.contrib.admin.models import CHANGE, LogEntry
from django.db import transaction
from django.utils import timezone

from leaderboard import ranking
from leaderboard.models import Submission

EDITABLE = ("organisation", "model_size", "open_weights", "paper_url", "code_url", "description", "public")
NOT_ON_BOARDS = {"description"}  # only the submission page shows it


class EntryForm(forms.ModelForm):
    """The fields an owner may change; ``withdraw`` takes the entry off the boards for good."""

    paper_url = forms.URLField(required=False, assume_scheme="https", label="Paper link")
    code_url = forms.URLField(required=False, assume_scheme="https", label="Code link")
    withdraw = forms.BooleanField(required=False, label="Withdraw this entry",
                                  help_text="It leaves every leaderboard and stays private; this cannot be undone.")

    class Meta:
        model = Submission
        fields = list(EDITABLE)
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}
        labels = {"model_size": "Model size", "open_weights": "Open weights",
                  "public": "Show on the public leaderboard"}

    def clean(self):
        cleaned = super().clean()
        withdrawn = self.instance.withdrawn_at is not None or cleaned.get("withdraw")
        if withdrawn and cleaned.get("public") and not cleaned.get("withdraw"):
            self.add_error("public", "This entry was withdrawn; a withdrawn entry cannot be made public again.")
        if withdrawn:
            cleaned["public"] = False
        return cleaned


TRUE, FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no", "")
FLAGS = ("open_weights", "public", "withdraw")


class BadChange(ValueError):
    """A change an entry cannot take, per field (``problems``), found before the form runs."""

    def __init__(self, problems: dict[str, list[str]]):
        super().__init__("; ".join(f"{name}: {' '.join(texts)}" for name, texts in problems.items()))
        self.problems = problems


def form_for(submission: Submission, changes: dict) -> EntryForm:
    """A bound form holding the entry's current values overlaid with ``changes`` (a PATCH names only
    what it changes). Raises BadChange for fields that cannot be changed and flags that are not
    true or false."""
    problems = {name: [f"{name} cannot be changed after submitting; editable: {', '.join(EDITABLE)}, withdraw."]
                for name in sorted(set(changes) - set(EDITABLE) - {"withdraw"})}
    data = {name: getattr(submission, name) for name in EDITABLE}
    data.update({name: value for name, value in changes.items() if name not in problems})
    for name in FLAGS:
        value = data.get(name)
        if isinstance(value, str):
            text = value.strip().lower()
            if text not in TRUE + FALSE:
                problems[name] = [f"{name}={value!r} is not valid: use true or false."]
            data[name] = text in TRUE
    if problems:
        raise BadChange(problems)
    return EntryForm(data, instance=submission)


@dataclass
class Changed:
    submission: Submission
    fields: list[str] = field(default_factory=list)

    @property
    def affects_boards(self) -> bool:
        return bool(set(self.fields) - NOT_ON_BOARDS)


def save(form: EntryForm, user) -> Changed:
    """Store a valid form's changes, log them in the admin history and, when a board shows them,
    rank the boards it is on again and
    bump the leaderboard generation after commit. Nothing changed: nothing is written."""
    submission = form.instance
    withdraw = form.cleaned_data.get("withdraw") and submission.withdrawn_at is None
    changed = Changed(submission, [name for name in form.changed_data if name in EDITABLE])
    if withdraw:
        submission.withdrawn_at = timezone.now()
        changed.fields.append("withdrawn")
    if not changed.fields:
        return changed
    with transaction.atomic():
        form.save()
        labels = [str(form.fields[name].label or name) if name in form.fields else name for name in changed.fields]
        message = [{"changed": {"fields": labels}}]  # the admin's history shows it like its own edits
        LogEntry.objects.log_actions(user.pk, [submission], CHANGE, change_message=message, single_object=True)
        if changed.affects_boards:
            transaction.on_commit(lambda: ranking.boards_changed(ranking.pairs_of_submissions([submission.pk])))
    return changed

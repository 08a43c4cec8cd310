"""Model-endpoint submissions: the rules behind /submit/endpoint/ and the API, kept out of views.

Instead of a bundle, a researcher gives an OpenAI-compatible endpoint (base URL, model
id, API key, optional limits). Accepting it charges the daily quota like a bundle and
creates, in one transaction, an endpoint :class:`Submission` and its
:class:`GenerationJob` holding the API key encrypted (:mod:`leaderboard.crypto`); the
wake-up on the ``generate`` queue is sent once that transaction has committed. The
platform only calls endpoints on the public internet (:func:`endpoint_problems`), checked
here and again by the worker before the first request (:mod:`leaderboard.worker.generating`).

The key is never shown again, never logged, and never part of a page, an API answer or an
error message; every update that ends the job erases it.
"""

from __future__ import annotations

import ipaddress
import socket
from functools import partial
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.db import transaction

from leaderboard import crypto, quotas, tasksets
from leaderboard.intake import dispatch
from leaderboard.intake.bundles import SubmissionForm
from leaderboard.models import GenerationJob, Submission

ENDPOINT_FIELDS = ("base_url", "model_id", "api_key", "max_tokens", "max_images", "max_frames",
                   "default_temperature", "length_parameter")
LENGTH_PARAMETERS = (("max_tokens", "max_tokens"),
                     ("max_completion_tokens", "max_completion_tokens (reasoning models)"))


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
    default_temperature = forms.BooleanField(
        required=False, label="Run at the model's default temperature",
        help_text="Send no temperature (the protocol asks for 0). For endpoints that refuse any other; "
                  "the page then says the model ran at its default.")
    length_parameter = forms.ChoiceField(
        choices=LENGTH_PARAMETERS, initial="max_tokens", required=False, label="Length parameter",
        help_text="How the answer-length limit is sent first; a refusal switches to the other one once.")

    field_order = ["split", "protocol", "base_url", "model_id", "api_key", "max_tokens", "max_images", "max_frames",
                   "default_temperature", "length_parameter"]

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

    def clean_length_parameter(self):
        return self.cleaned_data.get("length_parameter") or "max_tokens"

    def clean(self):
        cleaned = super().clean()
        split = cleaned.get("split")
        if split and not tasksets.split_tasks(split).exists():
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
            default_temperature=bool(data.get("default_temperature")),
            length_parameter=data.get("length_parameter") or "max_tokens",
        )
        transaction.on_commit(partial(dispatch.generation_job, job.pk))
    return job

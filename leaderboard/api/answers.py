"""Answers shared by the API's areas: a form's problems (400) and a quota refusal (429)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from leaderboard import quotas


def form_problems(form) -> dict:
    """Form errors as ``{field: [messages]}``; errors of the whole form under ``non_field_errors``."""
    problems = {field: [str(message) for message in messages] for field, messages in form.errors.items()}
    if "__all__" in problems:
        problems["non_field_errors"] = problems.pop("__all__")
    return problems


def quota_refused(current: quotas.QuotaStatus | None, message: str | None = None) -> Response:
    """429 with the reason and ``Retry-After`` (seconds to the next UTC midnight, when the quota day
    resets); a closed split (limit 0) gets no Retry-After, since waiting would not help."""
    text = message or (quotas.exceeded_message(current) if current else "No submission left today.")
    body = {"non_field_errors": [text]}
    headers = {}
    wait = current.retry_after() if current else None
    if wait is not None:
        body["resets_at"] = current.resets_at.isoformat()
        headers["Retry-After"] = str(wait)
    return Response(body, status=status.HTTP_429_TOO_MANY_REQUESTS, headers=headers)


def refused_or_invalid(form) -> Response:
    """A form that did not validate: 429 when the quota refused it, else 400 with every problem."""
    if getattr(form, "quota_refusal", None):
        return quota_refused(form.quota_refusal)
    return Response(form_problems(form), status=status.HTTP_400_BAD_REQUEST)


def form_data(data) -> dict:
    """Request data as a form expects it: JSON numbers and booleans pass through, lists become one value."""
    if hasattr(data, "dict"):
        return data.dict()
    return dict(data.items()) if isinstance(data, dict) else {}

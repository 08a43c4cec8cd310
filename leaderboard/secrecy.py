"""Ground-truth secrecy: what of a held-out (test-split) task only staff may see, and hiding it.

Evaluator logs, failure reasons and task errors can quote a task's descriptions, assertions,
typed text or site; everything non-staff see of them goes through :func:`scrub` first.
"""

from __future__ import annotations

import re

from leaderboard.models import Task
from leaderboard.models.tasks import Split

HIDDEN = "[hidden]"


def secrets_of(task: Task) -> list[str]:
    """Strings of a task that only staff may see: descriptions, assertions, typed text, the site."""
    record = task.record if isinstance(task.record, dict) else {}
    found = [record.get("source_website") or ""]
    for action in record.get("action_sequence") or []:
        params = action.get("parameters") or {}
        found += [params.get("description") or "", params.get("text") or "", action.get("logical_assertion") or ""]
    return [text for text in found if isinstance(text, str) and len(text.strip()) >= 4]


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret (case-insensitive) replaced by [hidden]."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = re.sub(re.escape(secret.strip()), HIDDEN, text, flags=re.IGNORECASE)
    return text


def split_secrets(tasks) -> list[str]:
    """Secrets to scrub from anything non-staff see of a job: test-split tasks only (dev is public)."""
    return [secret for task in tasks if task.split == Split.TEST for secret in secrets_of(task)]

"""Ground-truth secrecy: what of a held-out (test-split) task only staff may see, and hiding it.

Evaluator logs, failure reasons and task errors can quote a task's descriptions, assertions,
typed text or site; everything non-staff see of them goes through :func:`scrub` first. A log
also says how each task went (its score, its error, that its browser worker crashed or ran out of
time): :func:`job_level_log` keeps only the lines that name no task, for readers who may not see
per-task results of a held-out split (:func:`leaderboard.heldout.log_for`).
"""

from __future__ import annotations

import re

from leaderboard.models import Task
from leaderboard.models.tasks import Split

HIDDEN = "[hidden]"
TASK_LINES_HIDDEN = "(Lines about single held-out tasks are shown to maintainers only.)"
# The evaluator's per-task progress line ("[3/10] task 201: final 0.412"), dropped even if its id were not known.
PROGRESS_LINE = re.compile(r"^\[\d+/\d+\] task ")
TRACEBACK_HEAD = "Traceback (most recent call last):"
CHAINED = ("During handling of the above exception", "The above exception was the direct cause")


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


def job_level_log(text: str, task_keys) -> str:
    """``text`` without the lines that name one of ``task_keys`` (as a whole word: ``tasks/201/`` and
    ``(task 201)`` name task 201, ``2010`` does not) or are a per-task progress line, and without the
    traceback that follows a dropped line; a note at the end says that lines were left out."""
    naming = _naming(task_keys)
    kept, dropped, traceback = [], False, None
    for line in text.splitlines():
        if traceback is not None and traceback.takes(line):
            continue
        traceback = None
        if PROGRESS_LINE.match(line) or (naming is not None and naming.search(line)):
            dropped, traceback = True, _Traceback()
            continue
        kept.append(line)
    return "\n".join([*kept, TASK_LINES_HIDDEN] if dropped else kept)


def _naming(task_keys) -> re.Pattern | None:
    keys = sorted({str(key) for key in task_keys if str(key)}, key=len, reverse=True)
    if not keys:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(key) for key in keys) + r")(?![\w-])")


class _Traceback:
    """The traceback a dropped log line may carry on the lines after it (``log.exception``): its head,
    indented frames, each exception line and the chained exceptions, then nothing more."""

    def __init__(self):
        self.frames = False  # inside a traceback, before its exception line

    def takes(self, line: str) -> bool:
        if line.startswith(TRACEBACK_HEAD):
            self.frames = True
            return True
        if line.startswith((" ", "\t", *CHAINED)) or not line.strip():
            return True
        if self.frames:  # the exception line ends the frames; a chained traceback may follow
            self.frames = False
            return True
        return False

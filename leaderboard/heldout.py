"""The held-out split is not an oracle: what submitters learn from a test-split scoring, and what it costs.

What is shown (:func:`leaderboard.access.shows_task_results`). For test-split tasks, everyone but staff
sees a submission's aggregate scores
(with their intervals), its per-category scores and its failure reason; the per-task scores,
each task's pass/fail, its steps and its replay are shown to staff only (pages, the progress
JSON, the results download and the API alike). ``IWR_HELDOUT_TASK_RESULTS=1`` opens them to
everyone who may open the submission. Otherwise a few submissions a day could be steered task by
task towards the hidden ground truth.

What is charged. A scoring that fails because of the submitted pages (the evaluator running out
of memory, crashing, exiting with an error, running past the time limit, or the job writing output
that breaks a rule of :mod:`evaluator.outputs`) counts against the daily quota like a scored one:
refunding it would let a page probe the held-out tasks for free.
Only failures of the infrastructure (a worker or machine stopped, the protocol or tasks gone,
the evaluator finishing without results) are refunded. The Submit and About pages state this rule.
"""

from __future__ import annotations

import signal

from django.conf import settings

from leaderboard.models import Evaluation

Kind = Evaluation.FailureKind
# The submitter's doing: these failures stay charged; every other failure is refunded.
CHARGED_KINDS = frozenset({Kind.BUNDLE, Kind.TIME_LIMIT, Kind.PAGE})
# Someone stopped the evaluator (a shutting-down machine or container): not the page's doing, retried.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})
CHARGED_NOTE = ("Failures caused by the submitted pages count against your daily quota; only infrastructure "
                "failures are refunded.")


def failed_run(returncode: int, last_line: str, oom_killed: bool) -> tuple[str, str, str]:
    """(outcome status, failure kind, reason) of an evaluator that exited with ``returncode`` != 0."""
    if oom_killed:
        return "failed", Kind.PAGE, ("The evaluator ran out of memory while scoring your pages and was stopped. "
                                     "A page that allocates without bound is the usual cause. " + CHARGED_NOTE)
    if returncode < 0 and -returncode in STOP_SIGNALS:
        return "retry", Kind.INFRASTRUCTURE, f"the evaluator was stopped by signal {-returncode}"
    if "time limit" in last_line:
        return "failed", Kind.TIME_LIMIT, time_limit_reason(settings.EVALUATION_TIME_LIMIT_SECONDS)
    if returncode < 0:
        what = f"was killed by signal {-returncode} (a crash, or the system running out of memory)"
    else:
        what = f"stopped with exit status {returncode}"
    detail = f" Last message: {last_line[:300]}" if last_line else ""
    return "failed", Kind.PAGE, (f"The evaluator {what} while scoring your pages. {CHARGED_NOTE} Maintainers "
                                 f"can see the log and give the slot back when the fault was ours.{detail}")


def time_limit_reason(limit: int) -> str:
    return (f"Scoring took longer than the limit of {limit // 60} min {limit % 60} s and was stopped. "
            "A page that never settles (endless scripts, huge layouts) is the usual cause; check the log.")


def rejected_output(rule: str, message: str) -> tuple[str, str, str]:
    """(status, kind, reason) of a job whose output broke a rule of :mod:`evaluator.outputs`.

    Only a page that escaped its browser writes such output: charged like any page failure, so
    forged results cannot probe the held-out tasks for free."""
    return "failed", Kind.PAGE, (f"The job's output broke the rule '{rule}' and nothing of it was kept "
                                 f"({message[:300]}). {CHARGED_NOTE}")

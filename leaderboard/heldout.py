"""The held-out split is not an oracle: what submitters learn from a test-split scoring, and what it costs.

What is shown (:func:`leaderboard.access.shows_task_results`). For test-split tasks, everyone but staff
sees a submission's aggregate scores
(with their intervals), its per-category scores and its failure reason; the per-task scores,
each task's pass/fail, its steps and its replay are shown to staff only (pages, the progress
JSON, the results download and the API alike). ``IWR_HELDOUT_TASK_RESULTS=1`` opens them to
everyone who may open the submission. Otherwise a few submissions a day could be steered task by
task towards the hidden ground truth.

What the log says. The evaluator log names the task whose browser worker crashed or timed out, and
prints each task's score as it finishes: for those who may not see per-task results, its lines that
name a task of the split are left out (:func:`log_for`; held-out ground truth is scrubbed from the
stored log for everyone, :mod:`leaderboard.secrecy`). Failure reasons quote only such job-level lines.

What is charged. A scoring that fails because of the submitted pages (the evaluator running out
of memory, crashing, exiting with an error, running past the time limit, or the job writing output
that breaks a rule of :mod:`evaluator.outputs`) counts against the daily quota like a scored one:
refunding it would let a page probe the held-out tasks for free.
Only failures of the infrastructure (a worker or machine stopped, the protocol or tasks gone,
the evaluator finishing without results) are refunded. The Submit and About pages state this rule.

What a per-category score may say (:func:`categories_for`, :func:`board_categories`). A category
of one held-out task would publish that task's score; a category of two, that of the other as soon
as the submitter knows one (a page left out scores 0). So for everyone who may not see per-task
results, each published category averages at least ``HELDOUT_MIN_CATEGORY_TASKS`` tasks (default 3):
smaller ones are pooled into "other" (and, when "other" would itself be too small, the next smallest
with them). Categories of different axes overlap, and sums and differences of published means can
isolate tasks (L1 + V1 - the tasks both share...): while the published categories and the overall
score, combined linearly, still pin down one task's score (or two tasks' together), the smallest
category left is pooled as well (:func:`publish_plan`). The rule holds for pages, charts, the results
download and the API alike, and on the held-out board for every reader. What it does not stop is
what any aggregate allows: a submitter who varies one page between submissions learns how that
task's score moved; the daily quota bounds that.
"""

from __future__ import annotations

import hashlib
import json
import signal
from collections import Counter
from collections.abc import Mapping

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache

from evaluator.outputs import strip_server_paths
from evaluator.scoring import CATEGORY_AXES, UNLABELLED
from leaderboard import access
from leaderboard import cache as board_cache
from leaderboard.models import Evaluation, Task
from leaderboard.secrecy import job_level_log

Kind = Evaluation.FailureKind
# The submitter's doing: these failures stay charged; every other failure is refunded.
CHARGED_KINDS = frozenset({Kind.BUNDLE, Kind.TIME_LIMIT, Kind.PAGE})
# Someone stopped the evaluator (a shutting-down machine or container): not the page's doing, retried.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})
CHARGED_NOTE = ("Failures caused by the submitted pages count against your daily quota; only infrastructure "
                "failures are refunded.")


def failed_run(returncode: int, last_line: str, oom_killed: bool, quoted: str | None = None) -> tuple[str, str, str]:
    """(outcome status, failure kind, reason) of an evaluator that exited with ``returncode`` != 0, told by
    the log's ``last_line``; the reason quotes ``quoted`` (the last line its readers may see) instead when given."""
    shown = strip_server_paths(last_line if quoted is None else quoted)  # the job folder is the server's business
    detail = f" Last message: {shown[:300]}" if shown else ""
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


def log_for(viewer, evaluation: Evaluation) -> str:
    """The evaluation's log as ``viewer`` (who may manage it) may read it: whole where per-task results
    are shown to them, else without the lines naming a task of its split (:func:`leaderboard.secrecy.job_level_log`)."""
    split = evaluation.submission.split
    if access.shows_task_results(viewer, split) or not evaluation.log:
        return evaluation.log
    return job_level_log(evaluation.log, task_keys(split, evaluation))


def task_keys(split: str, evaluation: Evaluation | None = None) -> set[str]:
    """Every task id of ``split`` (published or not), and those ``evaluation`` has results for."""
    keys = set(Task.objects.for_split(split).values_list("key", flat=True))
    if evaluation is not None:
        keys |= set(evaluation.task_results.values_list("task__key", flat=True))
    return keys


# --------------------------------------------------------------------------- per-category scores

OTHER = "other"  # the published category pooling those too small to be shown on their own
METRICS = ("ifs", "vfs", "final")
EXACT = 1e-6  # a task is pinned down when its indicator lies in the span of the published categories
PAIR_BLOCK = 512  # rows of the pair check computed at once
PLAN_CACHE_SECONDS = 24 * 3600

Plan = dict[str, dict[str, str]]  # axis -> label -> the label its tasks are published under


def categories_for(viewer, split: str, categories: Mapping) -> dict:
    """One evaluation's per-category scores (axis -> label -> {"ifs", "vfs", "final", "n"}) as ``viewer``
    may see them: as they are where per-task results are shown to them, else pooled by :func:`split_plan`."""
    if access.shows_task_results(viewer, split) or settings.HELDOUT_MIN_CATEGORY_TASKS <= 1:
        return dict(categories)
    return published_categories(categories, split_plan(split))


def board_categories(split: str, per_entry: Mapping[int, Mapping]) -> dict[int, dict]:
    """Every entry's per-category scores as a held-out board publishes them: to all its readers alike
    (the board is cached once for everyone), so as an anonymous reader may see them."""
    if access.shows_task_results(AnonymousUser(), split) or settings.HELDOUT_MIN_CATEGORY_TASKS <= 1:
        return dict(per_entry)
    plan = split_plan(split)
    return {pk: published_categories(categories, plan) for pk, categories in per_entry.items()}


def summary_for(viewer, split: str, summary: Mapping | None) -> dict:
    """An evaluation summary (the results download) with its ``by_category`` as ``viewer`` may see it."""
    shown = dict(summary or {})
    if "by_category" in shown:
        shown["by_category"] = categories_for(viewer, split, shown["by_category"] or {})
    return shown


def split_plan(split: str) -> Plan:
    """How the categories of the published tasks of ``split`` are published (:func:`publish_plan`)."""
    rows = sorted(Task.objects.published().for_split(split).values_list("key", *CATEGORY_AXES))
    minimum = settings.HELDOUT_MIN_CATEGORY_TASKS
    # Cached by what it is computed from: thousands of tasks take seconds of linear algebra.
    cache_key = board_cache.key("category-plan", minimum, hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:32])
    plan = cache.get(cache_key)
    if plan is None:
        plan = publish_plan({key: dict(zip(CATEGORY_AXES, labels, strict=True)) for key, *labels in rows}, minimum)
        cache.set(cache_key, plan, PLAN_CACHE_SECONDS)
    return plan


def publish_plan(memberships: Mapping[str, Mapping[str, str]], minimum: int) -> Plan:
    """axis -> label -> published label, for tasks ``memberships`` (key -> axis -> label).

    Every published category holds at least ``minimum`` tasks (:func:`pool_small`); then, while the
    published categories and the overall score still pin down a task (:func:`pins_down_a_task`), the
    smallest category left is pooled into "other" too."""
    keys = sorted(memberships)
    plan = {axis: pool_small(Counter(_label(memberships[key], axis) for key in keys), minimum)
            for axis in CATEGORY_AXES}
    while pins_down_a_task(_indicators(keys, memberships, plan), pairs=minimum > 2):
        smallest = _smallest_category(keys, memberships, plan)
        if smallest is None:
            break
        axis, label = smallest
        plan[axis] = {name: OTHER if target == label else target for name, target in plan[axis].items()}
    return plan


def pool_small(sizes: Mapping[str, int], minimum: int) -> dict[str, str]:
    """label -> published label along one axis: labels of fewer than ``minimum`` tasks go to "other",
    and while "other" holds some tasks but fewer than ``minimum``, the smallest label left joins it.
    A label holding every task stays: its scores are the overall ones, published anyway."""
    total = sum(sizes.values())
    target = {label: OTHER if (size < minimum and size != total) or label == OTHER else label
              for label, size in sizes.items()}

    def pooled() -> int:
        return sum(size for label, size in sizes.items() if target[label] == OTHER)

    while 0 < pooled() < minimum:
        shown = sorted((size, label) for label, size in sizes.items() if target[label] != OTHER)
        if not shown:
            break
        target[shown[0][1]] = OTHER
    return target


def pins_down_a_task(indicators: np.ndarray, pairs: bool) -> bool:
    """Whether sums and differences of the rows of ``indicators`` (published categories x tasks, 0/1)
    give one task's score exactly (or, with ``pairs``, the sum of two tasks'): whether a task's (a pair's)
    indicator lies in their span, read off the orthogonal projection onto that span."""
    n_tasks = indicators.shape[1] if indicators.size else 0
    if n_tasks < 2:  # the overall score of a split of one task is that task's: nothing pooling could hide
        return False
    # The projection onto the span is B B^T, B an orthonormal basis of it (right singular vectors).
    _, singular, vt = np.linalg.svd(indicators, full_matrices=False)
    basis = vt[singular > EXACT * max(singular.max(), 1.0)].T  # tasks x rank
    diagonal = np.einsum("ij,ij->i", basis, basis)
    if np.any(diagonal > 1 - EXACT):
        return True
    if not pairs or n_tasks < 3:
        return False
    # |P(e_i + e_j)|^2 = P_ii + P_jj + 2 P_ij, which is 2 exactly when e_i + e_j lies in the span; in blocks
    # of rows, so a split of thousands of tasks never builds the whole tasks x tasks projection.
    for start in range(0, n_tasks, PAIR_BLOCK):
        rows = slice(start, start + PAIR_BLOCK)
        norms = diagonal[rows, None] + diagonal[None, :] + 2 * basis[rows] @ basis.T
        norms[np.arange(norms.shape[0]), np.arange(start, start + norms.shape[0])] = 0.0  # i == j is no pair
        if np.any(norms > 2 - EXACT):
            return True
    return False


def published_categories(categories: Mapping, plan: Plan) -> dict:
    """``categories`` pooled by ``plan`` (a label it does not know goes to "other"), means weighted by
    task counts. An evaluation scored on an older task set may still fall short of the minimum: such
    categories are pooled again; an axis left with "other" only (it says no more than the overall
    score) or without task counts is left out."""
    minimum = settings.HELDOUT_MIN_CATEGORY_TASKS
    shown = {}
    for axis, per_label in categories.items():
        if not per_label or not all(isinstance(values.get("n"), int) for values in per_label.values()):
            continue
        mapping = plan.get(axis) or {}
        groups: dict[str, list[Mapping]] = {}
        for label, values in per_label.items():
            groups.setdefault(mapping.get(label, OTHER), []).append(values)
        again = pool_small({name: sum(row["n"] for row in rows) for name, rows in groups.items()}, minimum)
        pooled: dict[str, list[Mapping]] = {}
        for name, rows in groups.items():
            pooled.setdefault(again[name], []).extend(rows)
        if set(pooled) != {OTHER}:
            shown[axis] = {name: _mean_of(rows) for name, rows in pooled.items()}
    return shown


def _mean_of(rows: list[Mapping]) -> dict:
    if len(rows) == 1:  # a category published as it is keeps its exact values
        return {**{name: rows[0].get(name) for name in METRICS}, "n": rows[0]["n"]}
    n = sum(row["n"] for row in rows)
    return {**{name: sum(row["n"] * float(row.get(name) or 0.0) for row in rows) / n for name in METRICS}, "n": n}


def _label(labels: Mapping[str, str], axis: str) -> str:
    value = labels.get(axis)
    return str(value) if value not in (None, "") else UNLABELLED


def _indicators(keys: list[str], memberships: Mapping, plan: Plan) -> np.ndarray:
    """The overall score and every published category (but "other", the rest of its axis) as rows."""
    rows = [np.ones(len(keys))]
    for axis, mapping in plan.items():
        published = [mapping[_label(memberships[key], axis)] for key in keys]
        rows += [np.array([name == label for name in published], dtype=float)
                 for label in sorted(set(published) - {OTHER})]
    return np.array(rows) if keys else np.zeros((0, 0))


def _smallest_category(keys: list[str], memberships: Mapping, plan: Plan) -> tuple[str, str] | None:
    sizes = Counter((axis, mapping[_label(memberships[key], axis)]) for axis, mapping in plan.items() for key in keys)
    shown = sorted((size, CATEGORY_AXES.index(axis), label, axis) for (axis, label), size in sizes.items()
                   if label != OTHER)
    return (shown[0][3], shown[0][2]) if shown else None

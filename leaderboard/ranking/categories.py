"""Per-category scores (interaction level, visual complexity, domain) of evaluations and of a view."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache

from evaluator.scoring import summarize
from leaderboard import cache as board_cache
from leaderboard import heldout
from leaderboard.cache import CACHE_SECONDS
from leaderboard.models import Evaluation, TaskResult
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.ranking.entries import Entry, Leaderboard
from leaderboard.ranking.query import CATEGORY_AXES, QueryError, natural_key


def category_scores(summary: Mapping | None) -> dict[str, dict[str, dict[str, float]]]:
    """axis -> label -> {"ifs", "vfs", "final", "n"} from an evaluation summary (may be empty)."""
    by_category = (summary or {}).get("by_category") or {}
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for axis in CATEGORY_AXES:
        labels = by_category.get(axis) or {}
        if isinstance(labels, Mapping):
            scores[axis] = {str(label): dict(values) for label, values in labels.items() if isinstance(values, Mapping)}
    return scores


def category_scores_from_results(results: Iterable[TaskResult]) -> dict[str, dict[str, dict[str, float]]]:
    """Per-category means computed from stored task results (for evaluations whose summary has none),
    with the evaluator's own aggregation."""
    results = list(results)
    if not results:
        return {}
    tasks = [result.task for result in results]
    by_key = {result.task.key: {name: getattr(result, name) for name in SCORE_FIELDS} | {"error": result.error}
              for result in results}
    return category_scores(summarize(by_key, tasks))


def evaluation_categories(evaluation: Evaluation) -> dict[str, dict[str, dict[str, float]]]:
    scores = category_scores(evaluation.summary)
    if any(scores.values()):
        return scores
    return category_scores_from_results(evaluation.task_results.select_related("task"))


def labels_of(per_entry: Iterable[Mapping[str, Mapping]], axis: str) -> list[str]:
    return sorted({label for scores in per_entry for label in (scores.get(axis) or {})}, key=natural_key)


def category_means(per_entry: list[Mapping[str, Mapping]], axis: str) -> dict[str, dict[str, float]]:
    """For the leaderboard as a whole: label -> mean IFS, VFS and Final over the entries scored on
    that label, and ``entries`` (how many)."""
    means: dict[str, dict[str, float]] = {}
    for label in labels_of(per_entry, axis):
        rows = [scores[axis][label] for scores in per_entry if label in (scores.get(axis) or {})]
        means[label] = {name: float(np.mean([row.get(name) or 0.0 for row in rows]))
                        for name in ("ifs", "vfs", "final")}
        means[label]["entries"] = len(rows)
    return means


@dataclass
class CategoryBreakdown:
    """Per-category scores of a leaderboard view along one axis."""

    axis: str
    labels: list[str]
    entries: list[Entry]  # ranked entries that carry per-category scores, best first
    scores: list[dict[str, dict[str, float]]]  # per entry: label -> {"ifs", "vfs", "final", "n"}
    means: dict[str, dict[str, float]]


def category_breakdown(board: Leaderboard, axis: str) -> CategoryBreakdown:
    """Per-category scores of the view's evaluated entries (cached with the board's generation).

    The three axes come from the same summaries, so the first one asked for builds and caches
    all three: a board's summaries are read and decoded once, not once per axis.
    """
    if axis not in CATEGORY_AXES:
        raise QueryError(f"axis={axis!r} is not valid: use one of {', '.join(CATEGORY_AXES)}")
    keys = {name: board_cache.key("categories", board.query.key(), name, generation=board.generation)
            for name in CATEGORY_AXES}
    breakdown = cache.get(keys[axis])
    if breakdown is None:
        built = _category_breakdowns(board)
        cache.set_many({keys[name]: value for name, value in built.items()}, CACHE_SECONDS)
        breakdown = built[axis]
    return breakdown


def _category_breakdowns(board: Leaderboard) -> dict[str, CategoryBreakdown]:
    evaluated = [entry for entry in board.entries if not entry.is_paper]
    summaries = dict(Evaluation.objects.filter(pk__in=[e.evaluation_id for e in evaluated])
                     .values_list("pk", "summary"))
    per_entry = {pk: category_scores(summary) for pk, summary in summaries.items()}
    bare = [pk for pk, scores in per_entry.items() if not any(scores.values())]
    if bare:  # summaries without categories (older evaluators): computed from the stored task results
        results = TaskResult.objects.filter(evaluation_id__in=bare).select_related("task")
        for pk, group in itertools.groupby(results.order_by("evaluation_id"), key=lambda r: r.evaluation_id):
            per_entry[pk] = category_scores_from_results(group)
    per_entry = heldout.board_categories(board.query.split, per_entry)  # held-out: small categories pooled
    return {axis: _breakdown(evaluated, per_entry, axis) for axis in CATEGORY_AXES}


def _breakdown(evaluated: list[Entry], per_entry: dict[int, dict], axis: str) -> CategoryBreakdown:
    kept, scores = [], []
    for entry in evaluated:
        per_axis = (per_entry.get(entry.evaluation_id) or {}).get(axis)
        if per_axis:
            kept.append(entry)
            scores.append(per_axis)
    labels = sorted({label for row in scores for label in row}, key=natural_key)
    ranked_scores = [{axis: row} for entry, row in zip(kept, scores, strict=True) if entry.rank is not None]
    return CategoryBreakdown(axis, labels, kept, scores, category_means(ranked_scores, axis))

"""Score formulas (protocol.md 3.4), aggregation over a fixed task set, and uncertainty.

All scores are fractions in [0, 1]:
- IFS = actions succeeded before the first failure / total actions;
- VFS = 0.5 low-level + 0.5 high-level, each the mean over the task's visual checkpoints
  (the initial screenshot and every flagged step reached);
- Final = 0.7 IFS + 0.3 VFS.
A model's score is the plain mean over ALL tasks of the set: a task whose page is missing or
failed to load scores 0 (the official script skips it, which flatters incomplete bundles).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

VFS_LOW_WEIGHT = 0.5
FINAL_IFS_WEIGHT = 0.7
SCORE_KEYS = ("ifs", "vfs", "final", "low_level", "high_level")
CATEGORY_AXES = ("interaction_complexity", "visual_complexity", "domain")
UNLABELLED = "(none)"


def ifs(steps_passed: int, steps_total: int) -> float:
    """Interaction functionality score: share of actions that succeeded before the first failure."""
    if steps_total <= 0:
        raise ValueError(f"a task needs at least one action, got steps_total={steps_total}")
    if not 0 <= steps_passed <= steps_total:
        raise ValueError(f"steps_passed={steps_passed} is outside 0..steps_total={steps_total}")
    return steps_passed / steps_total


def vfs(low: float, high: float) -> float:
    """Visual fidelity score from the low-level and high-level visual means."""
    return VFS_LOW_WEIGHT * low + (1.0 - VFS_LOW_WEIGHT) * high


def final(ifs_value: float, vfs_value: float) -> float:
    """Final score: functionality weighs 0.7, visual fidelity 0.3."""
    return FINAL_IFS_WEIGHT * ifs_value + (1.0 - FINAL_IFS_WEIGHT) * vfs_value


def zero_score() -> dict[str, float]:
    """The score of a task whose page is missing or could not be evaluated."""
    return dict.fromkeys(SCORE_KEYS, 0.0)


def task_score(steps_passed: int, steps_total: int, checkpoints: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """IFS, VFS, Final and the visual means of one task.

    ``checkpoints`` are :func:`evaluator.metrics.checkpoint.score_checkpoint` results for the
    checkpoints reached; none at all (the page never rendered) gives zero visual scores.
    """
    ifs_value = ifs(steps_passed, steps_total)
    low = float(np.mean([c["low_level"] for c in checkpoints])) if checkpoints else 0.0
    high = float(np.mean([c["high_level"] for c in checkpoints])) if checkpoints else 0.0
    vfs_value = vfs(low, high)
    return {"ifs": ifs_value, "vfs": vfs_value, "final": final(ifs_value, vfs_value),
            "low_level": low, "high_level": high}


def effective_score(result: Mapping[str, Any] | None) -> dict[str, float]:
    """A task result's scores as they count: missing result or an error -> zeros."""
    if not result or result.get("error"):
        return zero_score()
    return {key: float(result.get(key) or 0.0) for key in SCORE_KEYS}


def summarize(task_results: Mapping[str, Mapping[str, Any]], tasks: Iterable[Any]) -> dict[str, Any]:
    """Mean scores over every task of the set (missing or failed tasks count 0), with per-category means.

    ``tasks`` are :class:`evaluator.dataset.Task` objects (``key`` and the category attributes);
    results for keys outside the task set are ignored. ``by_category`` maps each axis to
    ``{label: {"ifs", "vfs", "final", "n"}}`` with labels exactly as in the data.
    """
    tasks = list(tasks)
    if not tasks:
        raise ValueError("cannot summarize an empty task set")
    scores = {task.key: effective_score(task_results.get(task.key)) for task in tasks}
    summary: dict[str, Any] = _means(list(scores.values()), SCORE_KEYS)
    summary["n_tasks"] = len(tasks)
    summary["n_missing"] = sum(1 for task in tasks if task.key not in task_results)
    summary["n_errors"] = sum(1 for task in tasks if (task_results.get(task.key) or {}).get("error"))
    summary["by_category"] = {axis: _by_label(tasks, scores, axis) for axis in CATEGORY_AXES}
    return summary


def _by_label(tasks: list[Any], scores: dict[str, dict[str, float]], axis: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, float]]] = {}
    for task in tasks:
        label = getattr(task, axis, None)
        groups.setdefault(str(label) if label not in (None, "") else UNLABELLED, []).append(scores[task.key])
    return {label: {**_means(rows, ("ifs", "vfs", "final")), "n": len(rows)} for label, rows in sorted(groups.items())}


def _means(rows: list[dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    return {key: float(np.mean([row[key] for row in rows])) for key in keys}


# --- uncertainty ------------------------------------------------------------------------------

def resample_counts(n_items: int, n_resamples: int, seed: int) -> np.ndarray:
    """How often each item is drawn in each bootstrap resample, shape (n_resamples, n_items).

    Draws ``rng.integers(0, n, (n_resamples, n))`` from ``numpy.random.default_rng(seed)``,
    so a reimplementation with the same seed reproduces every resample.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_resamples, n_items))
    offsets = (np.arange(n_resamples) * n_items)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=n_resamples * n_items).reshape(n_resamples, n_items)


def bootstrap_means(matrix: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Mean of each row over every resample of the columns (tasks), shape (rows, n_resamples).

    All rows share the same resamples (paired bootstrap: entries are scored on the same tasks).
    """
    counts = resample_counts(matrix.shape[1], n_resamples, seed)
    return matrix @ counts.T / matrix.shape[1]


def bootstrap_ci(values: Sequence[float], n_resamples: int = 2000, seed: int = 0,
                 alpha: float = 0.05) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean over tasks; deterministic for a seed."""
    data = _as_matrix([values], "values")
    _check_alpha(alpha)
    means = bootstrap_means(data, n_resamples, seed)[0]
    lo, hi = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(lo), float(hi)


def bootstrap_rank_ranges(matrix: Sequence[Sequence[float]] | np.ndarray, n_resamples: int = 1000,
                          seed: int = 0, alpha: float = 0.05) -> list[tuple[int, int]]:
    """(best, worst) plausible rank of each entry (row; columns = tasks), rank 1 = highest mean.

    In every resample the entries are ranked by mean (ties share the better rank); the range is
    the alpha/2 and 1 - alpha/2 percentiles of each entry's ranks, taken at observed ranks.
    """
    data = _as_matrix(matrix, "matrix")
    _check_alpha(alpha)
    # Rounding first: equal entries must tie even if the matrix product summed their rows in another order.
    ranks = competition_ranks(np.round(bootstrap_means(data, n_resamples, seed), 12))
    best = np.percentile(ranks, 100 * alpha / 2, axis=1, method="lower")
    worst = np.percentile(ranks, 100 * (1 - alpha / 2), axis=1, method="higher")
    return [(int(b), int(w)) for b, w in zip(best, worst, strict=True)]


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of each row in every column, 1 = highest, equal scores share the better rank (1, 1, 3).

    One ascending sort per column: a score's rank is 1 + the number of scores above it, which is
    the row count minus the last position its value holds in the sorted column. (Comparing every
    pair would need rows x rows x columns booleans: gigabytes for a board of thousands.)
    """
    scores = np.asarray(scores)
    n_rows = scores.shape[0]
    by_column = np.ascontiguousarray(scores.T)  # one sort per column, over contiguous memory
    order = np.argsort(by_column, axis=1)
    ordered = np.take_along_axis(by_column, order, axis=1)
    last = np.broadcast_to(np.arange(n_rows), ordered.shape)
    repeats = ordered[:, 1:] == ordered[:, :-1]
    if repeats.any():  # equal scores: every member of a run takes the run's last position
        run_ends = np.ones(ordered.shape, dtype=bool)
        run_ends[:, :-1] = ~repeats
        last = np.minimum.accumulate(np.where(run_ends, last, n_rows)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(by_column.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, n_rows - last, axis=1)
    return ranks.T


def rank_ranges(entries: Sequence[Sequence[float]], n_resamples: int = 1000, seed: int = 0) -> list[tuple[int, int]]:
    """(best, worst) rank of each entry from its per-task scores (all entries on the same tasks, same order)."""
    return bootstrap_rank_ranges(entries, n_resamples=n_resamples, seed=seed)


def overlapping(ci_a: tuple[float, float], ci_b: tuple[float, float]) -> bool:
    """Whether two intervals share any value (then the difference is within noise)."""
    return ci_a[0] <= ci_b[1] and ci_b[0] <= ci_a[1]


def _as_matrix(rows: Any, name: str) -> np.ndarray:
    try:
        data = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: every entry needs a score for every task (numbers, same length)") from None
    if data.ndim != 2 or data.shape[1] == 0:
        raise ValueError(f"{name}: need at least one task score per entry")
    if not np.isfinite(data).all():
        raise ValueError(f"{name}: scores must be finite numbers")
    return data


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")

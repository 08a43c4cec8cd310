"""How sure a ranking is: each ranked entry's 95 % rank range from a paired bootstrap over tasks.

Score intervals are not computed here: scoring (:mod:`leaderboard.worker.scoring`) stores each evaluation's percentile-
bootstrap intervals (:func:`evaluator.scoring.bootstrap_ci`) when it scores it, together with
its per-task Finals packed into one value (``Evaluation.task_finals``). A board's rank ranges
resample those per-task Finals of every ranked entry at once; they depend only on which
entries rank, so they are cached by that membership across generations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from django.core.cache import cache
from django.db import connection

from evaluator.scoring import bootstrap_means, competition_ranks
from leaderboard import cache as board_cache
from leaderboard.cache import CACHE_SECONDS
from leaderboard.models import Evaluation, TaskResult
from leaderboard.models.submissions import unpack_task_finals
from leaderboard.ranking.entries import Entry
from leaderboard.ranking.query import CONFIDENCE, RANK_RESAMPLES, RANK_SEED

TaskVector = tuple  # (task ids: int array, Finals: float array), both sorted by task id


def rank_ranges(ranked: Sequence[Entry]) -> list[tuple[int, int] | None]:
    """95 % rank range of each ranked entry (best first) from a paired bootstrap over tasks.

    Entries without per-task results (the paper's rows) enter with a constant score, so they
    hold their place in others' ranges; when no entry has per-task results there is nothing
    to resample and every range is None.
    """
    if not ranked:
        return []
    members = "|".join(f"{entry.evaluation_id}:{_stamp(entry.date)}" for entry in ranked)
    key = board_cache.key("rank-ranges", hashlib.sha256(members.encode()).hexdigest())
    ranges = cache.get(key)
    if ranges is None:  # the same entries (ranked alike) have the same ranges, whatever the generation
        vectors = task_vectors([entry.evaluation_id for entry in ranked if not entry.is_paper])
        if vectors:
            matrix = results_matrix([vectors.get(e.evaluation_id) for e in ranked], [e.final for e in ranked])
            ranges = list(rank_ranges_of(matrix))
        else:
            ranges = [None] * len(ranked)
        cache.set(key, ranges, CACHE_SECONDS)
    return ranges


def rank_ranges_of(matrix: np.ndarray) -> list[tuple[int, int]]:
    """:func:`evaluator.scoring.bootstrap_rank_ranges` (same resamples, same percentiles, same
    figures: a test holds them equal) with ranks found by sorting each resample, so a board of
    thousands of entries costs milliseconds and little memory (pairwise comparison would need
    entries x entries x resamples booleans)."""
    if matrix.shape[0] == 1:
        return [(1, 1)]
    alpha = 1 - CONFIDENCE
    ranks = competition_ranks(np.round(bootstrap_means(matrix, RANK_RESAMPLES, RANK_SEED), 12))
    # Each entry's ranks sorted: the "lower" / "higher" percentiles are then two columns, at the
    # positions np.percentile picks (asked of the positions themselves, so they always agree).
    # Small integers sort many times faster than np.percentile selects along the strided axis.
    small = np.int16 if ranks.shape[0] < np.iinfo(np.int16).max else np.int32
    ordered = np.sort(np.ascontiguousarray(ranks, dtype=small), axis=1)
    positions = np.arange(ranks.shape[1])
    best = int(np.percentile(positions, 100 * alpha / 2, method="lower"))
    worst = int(np.percentile(positions, 100 * (1 - alpha / 2), method="higher"))
    return list(zip(ordered[:, best].tolist(), ordered[:, worst].tolist(), strict=True))


def results_matrix(vectors: list[TaskVector | None], finals: list[float]) -> np.ndarray:
    """Rows = entries, columns = every task any entry was scored on; a task an entry lacks counts 0
    (as in scoring), an entry without per-task results is its Final on every task."""
    present = [vector for vector in vectors if vector is not None]
    columns = present[0][0]
    if any(not np.array_equal(vector[0], columns) for vector in present):
        columns = np.unique(np.concatenate([vector[0] for vector in present]))
    matrix = np.zeros((len(vectors), len(columns)))
    for row, (vector, final) in enumerate(zip(vectors, finals, strict=True)):
        if vector is None:
            matrix[row] = final
        elif len(vector[0]) == len(columns) and np.array_equal(vector[0], columns):
            matrix[row] = vector[1]
        else:
            matrix[row, np.searchsorted(columns, vector[0])] = vector[1]
    return matrix


def task_vectors(evaluation_ids: list[int]) -> dict[int, TaskVector]:
    """Evaluation id -> (task ids, their Finals), sorted by task id, for those of the given
    evaluations that have per-task results.

    One query reads the Finals each evaluation got packed when it was scored; an evaluation
    not packed (stored by other means than scoring) costs one more query, for all such
    evaluations together, over its task results.
    """
    vectors: dict[int, TaskVector] = {}
    unpacked = []
    for evaluation_id, packed in Evaluation.objects.filter(pk__in=evaluation_ids).values_list("pk", "task_finals"):
        if packed is None:
            unpacked.append(evaluation_id)
        elif vector := unpack_task_finals(packed):
            vectors[evaluation_id] = vector
    if unpacked:
        vectors.update(_read_task_vectors(unpacked))
    return vectors


def _read_task_vectors(evaluation_ids: list[int]) -> dict[int, TaskVector]:
    """One query for the given evaluations' per-task Finals from their task results.

    The rows go straight from the database cursor into an array: model rows would cost
    several times more.
    """
    sql, params = (TaskResult.objects.filter(evaluation_id__in=evaluation_ids).order_by("evaluation_id", "task_id")
                   .values_list("evaluation_id", "task_id", "final").query.sql_with_params())
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        data = np.array(cursor.fetchall(), dtype=float).reshape(-1, 3)
    vectors = {}
    if len(data):
        cuts = np.flatnonzero(np.diff(data[:, 0])) + 1
        for chunk in np.split(data, cuts):
            vectors[int(chunk[0, 0])] = (chunk[:, 1].astype(np.int64), chunk[:, 2].copy())
    return vectors


def _stamp(moment: datetime | None) -> str:
    return str(int(moment.timestamp() * 1_000_000)) if moment else "0"

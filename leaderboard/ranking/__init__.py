"""Which evaluations make a leaderboard, in what order, and how sure that order is.

A leaderboard *view* is one split under one protocol version (``iwr-det-2``, or the paper's
reported results), optionally narrowed by filters. The rules:

- Only scored evaluations of public, unflagged submissions of that split under exactly
  that protocol appear: protocols and protocol versions are never mixed.
- One entry per model per researcher: the best (highest Final) or the latest scored
  evaluation, as ``settings.LEADERBOARD_SELECTION`` says. Rows without an owner (the paper's
  results, the evaluator's baselines) are one per kind and model name.
- Baselines (reference pages, scripts-stripped snapshots, empty pages) are labelled rows
  placed by their score but given no rank: they are yardsticks, not competitors.
- Rank = 1 + the number of ranked entries with a strictly higher Final.
- Each evaluated score (Final, IFS, VFS, Low-level, High-level) carries the 95 % percentile-
  bootstrap interval stored when the evaluation was scored (:func:`evaluator.scoring.bootstrap_ci`,
  ``CI_RESAMPLES`` resamples of the tasks). Each ranked row gets a rank range from a paired
  bootstrap of every ranked entry's per-task Final (:func:`evaluator.scoring.bootstrap_rank_ranges`,
  ``RANK_RESAMPLES`` resamples). Rows whose Final intervals overlap are tied.

Everything computed here is cached under the leaderboard generation
(:mod:`leaderboard.cache`); each split's unfiltered board under each protocol version is also
ranked whenever what it shows changes and stored (``stored``: call :func:`boards_changed` after
every such change), so that even an empty cache reads it instead of ranking it.

Modules: ``query`` (the view and shared constants), ``entries`` (what a board is made of and
the percent formatter), ``board`` (which entries, ranks, ties), ``stored`` (the stored and cached
boards), ``confidence`` (rank ranges), ``categories`` (per-category breakdowns). The names below are the package's
interface.
"""

from evaluator.scoring import competition_ranks
from leaderboard.cache import CACHE_FORMAT, CACHE_SECONDS
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.ranking.board import (
    assign_ranks,
    assign_ties,
    build_entries,
    build_flagged,
    candidates,
    model_entries,
    one_per_model,
    overlap,
)
from leaderboard.ranking.categories import (
    CategoryBreakdown,
    category_breakdown,
    category_means,
    category_scores,
    category_scores_from_results,
    evaluation_categories,
    labels_of,
)
from leaderboard.ranking.confidence import (
    rank_ranges,
    rank_ranges_of,
    results_matrix,
    task_vectors,
)
from leaderboard.ranking.entries import ENTRY_FIELDS, INTERVAL_FIELDS, Entry, Flagged, Leaderboard, percent
from leaderboard.ranking.query import (
    AXIS_LABELS,
    CATEGORY_AXES,
    CI_RESAMPLES,
    CONFIDENCE,
    DEFAULT_PROTOCOL,
    DEFAULT_SPLIT,
    PAPER_PROTOCOL,
    PAPER_SLUG,
    RANK_RESAMPLES,
    RANK_SEED,
    SELECTIONS,
    SOURCES,
    WEIGHTS,
    Query,
    QueryError,
    board_tabs,
    natural_key,
    parse_query,
    protocol_label,
    protocol_slug,
    protocol_tabs,
    resolve_protocol,
    scored_judges,
    scored_protocols,
)
from leaderboard.ranking.stored import (
    boards_changed,
    evaluation_finished,
    is_stored,
    leaderboard,
    pairs_of_evaluations,
    pairs_of_submissions,
)

__all__ = [
    "AXIS_LABELS", "CACHE_FORMAT", "CACHE_SECONDS", "CATEGORY_AXES", "CI_RESAMPLES", "CONFIDENCE", "DEFAULT_PROTOCOL",
    "DEFAULT_SPLIT", "ENTRY_FIELDS", "INTERVAL_FIELDS", "PAPER_PROTOCOL", "PAPER_SLUG", "RANK_RESAMPLES", "RANK_SEED",
    "SCORE_FIELDS", "SELECTIONS", "SOURCES", "WEIGHTS", "CategoryBreakdown", "Entry", "Flagged", "Leaderboard",
    "Query", "QueryError", "assign_ranks", "assign_ties", "board_tabs", "boards_changed", "build_entries",
    "build_flagged", "candidates", "category_breakdown", "category_means", "category_scores",
    "category_scores_from_results", "competition_ranks", "evaluation_categories", "evaluation_finished", "is_stored",
    "labels_of", "leaderboard", "model_entries", "natural_key", "one_per_model", "overlap", "pairs_of_evaluations",
    "pairs_of_submissions", "parse_query", "percent", "protocol_label", "protocol_slug", "protocol_tabs",
    "rank_ranges", "rank_ranges_of", "resolve_protocol", "results_matrix", "scored_judges", "scored_protocols",
    "task_vectors",
]

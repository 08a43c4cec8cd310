"""Which evaluations make a leaderboard, in what order, and how sure that order is.

A leaderboard *view* is one split under one protocol version (``iwr-det-1``, or the paper's
reported results), optionally narrowed by filters. The rules:

- Only scored evaluations of public, unflagged submissions of that split under exactly
  that protocol appear: protocols and protocol versions are never mixed.
- One entry per model per researcher: the best (highest Final) or the latest scored
  evaluation, as ``settings.LEADERBOARD_SELECTION`` says. Rows without an owner (the paper's
  results, the evaluator's baselines) are one per kind and model name.
- Baselines (reference pages, scripts-stripped snapshots, empty pages) are labelled rows
  placed by their score but given no rank: they are yardsticks, not competitors.
- Rank = 1 + the number of ranked entries with a strictly higher Final.
- Each evaluated score carries the 95 % percentile-bootstrap interval the pipeline stored
  at scoring time (:func:`evaluator.scoring.bootstrap_ci`, ``CI_RESAMPLES`` resamples of
  the tasks). Each ranked row gets a rank range from a paired bootstrap of every ranked
  entry's per-task Final (:func:`evaluator.scoring.bootstrap_rank_ranges`,
  ``RANK_RESAMPLES`` resamples). Rows whose Final intervals overlap are tied.

Everything computed here is cached under the leaderboard generation
(:mod:`leaderboard.cache`), which the pipeline bumps whenever an evaluation finishes.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Case, F, Q, Value, When, Window
from django.db.models.functions import Lower, RowNumber

from leaderboard.cache import get_generation
from leaderboard.models import Evaluation, Submission, TaskResult
from leaderboard.models.submissions import PAPER_PROTOCOL
from leaderboard.models.tasks import Split

CI_RESAMPLES = 2000  # evaluator.scoring.bootstrap_ci's default, used by the pipeline at scoring time
RANK_RESAMPLES = 1000
RANK_SEED = 0
CONFIDENCE = 0.95
DEFAULT_SPLIT = "test"
DEFAULT_PROTOCOL = "iwr-det"
PAPER_SLUG = "paper"
CATEGORY_AXES = ("interaction_complexity", "visual_complexity", "domain")
AXIS_LABELS = {"interaction_complexity": "Interaction level", "visual_complexity": "Visual complexity",
               "domain": "Domain"}
SCORE_FIELDS = ("final", "ifs", "vfs", "low_level", "high_level")
WEIGHTS = ("all", "open", "proprietary")
SOURCES = ("all", "evaluated", "reported")
SELECTIONS = ("best", "latest")
CACHE_SECONDS = 24 * 3600  # generation keys make entries stale long before this
# Part of every cache key: bump it when what is cached changes shape, so a new release never
# reads values an older one left in a shared cache.
CACHE_FORMAT = 2
PER_EVALUATION_CACHE_LIMIT = 50
Kind = Submission.Kind
TaskVector = tuple  # (task ids: int array, Finals: float array), both sorted by task id


class QueryError(ValueError):
    """A leaderboard query parameter has a value we do not know; the message says which."""


# --------------------------------------------------------------------------- the query


@dataclass(frozen=True)
class Query:
    """One leaderboard view: split, protocol full name and filters."""

    split: str = DEFAULT_SPLIT
    protocol: str = ""
    weights: str = "all"
    verified: bool = False
    source: str = "all"
    selection: str = "best"

    def key(self) -> str:
        """A short cache-safe name of the view (protocol names may hold spaces)."""
        text = "|".join(str(value) for value in asdict(self).values())
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def params(self, **changes) -> dict[str, str]:
        """URL parameters that reproduce this view (defaults left out), with ``changes`` applied."""
        query = replace(self, **changes)
        params = {"split": query.split, "protocol": protocol_slug(query.protocol)}
        if query.weights != "all":
            params["weights"] = query.weights
        if query.verified:
            params["verified"] = "1"
        if query.source != "all":
            params["source"] = query.source
        if query.selection != settings.LEADERBOARD_SELECTION:
            params["selection"] = query.selection
        return params


def parse_query(params: Mapping[str, str]) -> Query:
    """The view asked for by URL parameters ``split``, ``protocol``, ``weights``, ``verified``,
    ``source`` and ``selection``; raises :class:`QueryError` naming a bad value."""
    split = _choice(params, "split", DEFAULT_SPLIT, tuple(Split.values))
    return Query(
        split=split,
        protocol=resolve_protocol(params.get("protocol") or ""),
        weights=_choice(params, "weights", "all", WEIGHTS),
        verified=_flag(params, "verified"),
        source=_choice(params, "source", "all", SOURCES),
        selection=_choice(params, "selection", settings.LEADERBOARD_SELECTION, SELECTIONS),
    )


def _choice(params: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = (params.get(name) or "").strip() or default
    if value not in allowed:
        raise QueryError(f"{name}={value!r} is not valid: use one of {', '.join(allowed)}")
    return value


def _flag(params: Mapping[str, str], name: str) -> bool:
    value = (params.get(name) or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise QueryError(f"{name}={value!r} is not valid: use 1 or 0")


def resolve_protocol(value: str) -> str:
    """The protocol full name a URL value stands for.

    Empty -> the default protocol's current version; ``paper`` -> the paper's reported
    results; a bare protocol name -> its current version; a full name -> itself when the
    evaluator knows it or scores under it exist.
    """
    from evaluator.protocols import get_protocol

    value = value.strip()
    if value in (PAPER_SLUG, PAPER_PROTOCOL):
        return PAPER_PROTOCOL
    try:
        return get_protocol(value or DEFAULT_PROTOCOL).full_name
    except ValueError:
        pass
    if value in scored_protocols():
        return value
    known = sorted({*scored_protocols(), *_registered_protocols()} - {PAPER_PROTOCOL}) + [PAPER_SLUG]
    raise QueryError(f"protocol={value!r} is not known: use one of {', '.join(known)}")


def protocol_slug(full_name: str) -> str:
    return PAPER_SLUG if full_name == PAPER_PROTOCOL else full_name


def protocol_label(full_name: str) -> str:
    return "Reported in paper (official judge)" if full_name == PAPER_PROTOCOL else full_name


def _registered_protocols() -> list[str]:
    from evaluator.protocols import PROTOCOLS

    return [protocol.full_name for protocol in PROTOCOLS.values()]


def scored_protocols() -> dict[str, set[str]]:
    """Protocol full name -> the splits holding scored public evaluations under it (cached)."""
    key = f"lb:v{CACHE_FORMAT}:{get_generation()}:protocols"
    found = cache.get(key)
    if found is None:
        rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, submission__public=True)
                .values_list("protocol", "submission__split").distinct().order_by())
        found = {}
        for protocol, split in rows:
            found.setdefault(protocol, set()).add(split)
        cache.set(key, found, CACHE_SECONDS)
    return found


def protocol_tabs(split: str) -> list[str]:
    """Protocols worth a tab on ``split``: the default's current version, then every protocol
    with scores on that split (newest versions first), the paper's results last."""
    default = resolve_protocol("")
    present = [name for name, splits in scored_protocols().items() if split in splits]
    others = sorted((name for name in present if name not in (default, PAPER_PROTOCOL)), key=natural_key,
                    reverse=True)
    return [default, *others, *([PAPER_PROTOCOL] if PAPER_PROTOCOL in present else [])]


# --------------------------------------------------------------------------- entries


def percent(value: float | None) -> str:
    """A fraction as the site prints it: percentage points with two decimals ("—" when missing)."""
    return "\u2014" if value is None else f"{100 * value:.2f}"


@dataclass
class Entry:
    """One row of a leaderboard: a model's chosen evaluation and its standing."""

    evaluation_id: int
    submission_id: int
    model_name: str
    organisation: str
    model_size: str
    kind: str
    open_weights: bool
    verified: bool
    paper_url: str
    code_url: str
    protocol: str
    evaluator_version: str
    final: float
    ifs: float
    vfs: float
    low_level: float | None
    high_level: float | None
    final_ci: tuple[float, float] | None
    ifs_ci: tuple[float, float] | None
    vfs_ci: tuple[float, float] | None
    n_tasks: int
    date: datetime | None
    rank: int | None = None
    rank_range: tuple[int, int] | None = None
    tie_group: int = 0
    tied_with_previous: bool = False

    @property
    def is_baseline(self) -> bool:
        return self.kind == Kind.BASELINE

    @property
    def is_paper(self) -> bool:
        return self.kind == Kind.PAPER

    @property
    def show(self) -> dict[str, str]:
        """Scores as the tables print them: percent with two decimals, intervals as "lo–hi"."""
        shown = {name: percent(getattr(self, name)) for name in SCORE_FIELDS}
        for name in ("final", "ifs", "vfs"):
            ci = getattr(self, f"{name}_ci")
            shown[f"{name}_ci"] = f"{percent(ci[0])}\u2013{percent(ci[1])}" if ci else ""
        return shown

    @property
    def rank_range_text(self) -> str:
        if not self.rank_range:
            return ""
        best, worst = self.rank_range
        return str(best) if best == worst else f"{best}\u2013{worst}"

    def as_dict(self) -> dict:
        """Plain data for the API and the JSON export (scores are fractions in [0, 1])."""
        data = {name: getattr(self, name) for name in ENTRY_FIELDS}  # flat: faster than asdict's deep copy
        data["date"] = self.date.isoformat() if self.date else None
        for name in ("final_ci", "ifs_ci", "vfs_ci", "rank_range"):
            data[name] = list(data[name]) if data[name] else None
        data["baseline"] = self.is_baseline
        data["reported_in_paper"] = self.is_paper
        return data


ENTRY_FIELDS = tuple(item.name for item in fields(Entry))


@dataclass
class Flagged:
    """A public entry maintainers took out of the ranking, with their public reason."""

    evaluation_id: int
    model_name: str
    organisation: str
    reason: str


@dataclass
class Leaderboard:
    query: Query
    entries: list[Entry]
    flagged: list[Flagged] = field(default_factory=list)
    generation: int = 0
    rank_resamples: int = RANK_RESAMPLES
    ci_resamples: int = CI_RESAMPLES

    @property
    def ranked(self) -> list[Entry]:
        return [entry for entry in self.entries if entry.rank is not None]

    @property
    def has_intervals(self) -> bool:
        return any(entry.final_ci for entry in self.entries)


_VALUE_FIELDS = (
    "pk", "submission_id", "submission__model_name", "submission__organisation", "submission__model_size",
    "submission__kind", "submission__open_weights", "submission__verified", "submission__paper_url",
    "submission__code_url", "protocol", "evaluator_version", *SCORE_FIELDS,
    "final_ci_low", "final_ci_high", "ifs_ci_low", "ifs_ci_high", "vfs_ci_low", "vfs_ci_high",
    "n_tasks", "finished_at", "created_at",
)


def candidates(query: Query):
    """Scored evaluations a view may show, before keeping one per model (a queryset)."""
    rows = Evaluation.objects.filter(
        status=Evaluation.Status.SCORED, protocol=query.protocol, submission__split=query.split,
        submission__public=True, submission__flagged=False, final__isnull=False,
    )
    baseline = Q(submission__kind=Kind.BASELINE)  # yardsticks stay visible under every filter
    if query.weights != "all":
        rows = rows.filter(baseline | Q(submission__open_weights=query.weights == "open"))
    if query.verified:
        rows = rows.filter(baseline | Q(submission__verified=True))
    if query.source == "reported":
        rows = rows.filter(baseline | Q(submission__kind=Kind.PAPER))
    elif query.source == "evaluated":
        rows = rows.exclude(submission__kind=Kind.PAPER)
    return rows


def one_per_model(rows, selection: str) -> list[int]:
    """Ids of each researcher's best (highest Final, then latest) or latest evaluation per model,
    chosen by the database with a window function. Rows without an owner (paper, baselines)
    are one per kind and model name."""
    group = Case(When(submission__owner__isnull=True, then=F("submission__kind")), default=Value(""))
    latest = [F("finished_at").desc(nulls_last=True), F("pk").desc()]
    order = [F("final").desc(nulls_last=True), *latest] if selection == "best" else latest
    window = Window(RowNumber(), partition_by=[F("submission__owner_id"), group, Lower("submission__model_name")],
                    order_by=order)
    return list(rows.order_by().annotate(position=window).filter(position=1).values_list("pk", flat=True))


def build_entries(query: Query) -> list[Entry]:
    """The view's entries, best Final first, with ranks, rank ranges and ties (uncached)."""
    ids = one_per_model(candidates(query), query.selection)
    values = Evaluation.objects.filter(pk__in=ids).order_by().values(*_VALUE_FIELDS)
    entries = sorted((_entry(row) for row in values), key=lambda e: (-e.final, e.model_name.lower(), e.evaluation_id))
    assign_ranks(entries)
    ranked = [entry for entry in entries if entry.rank is not None]
    for entry, span in zip(ranked, rank_ranges(ranked, scope=query.key()), strict=True):
        entry.rank_range = span
    assign_ties(ranked)
    return entries


def _entry(row: dict) -> Entry:
    def interval(name: str):
        low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
        return (low, high) if low is not None and high is not None else None

    return Entry(
        evaluation_id=row["pk"], submission_id=row["submission_id"], model_name=row["submission__model_name"],
        organisation=row["submission__organisation"], model_size=row["submission__model_size"],
        kind=row["submission__kind"], open_weights=row["submission__open_weights"],
        verified=row["submission__verified"], paper_url=row["submission__paper_url"],
        code_url=row["submission__code_url"], protocol=row["protocol"], evaluator_version=row["evaluator_version"],
        final=row["final"], ifs=row["ifs"] or 0.0, vfs=row["vfs"] or 0.0, low_level=row["low_level"],
        high_level=row["high_level"], final_ci=interval("final"), ifs_ci=interval("ifs"), vfs_ci=interval("vfs"),
        n_tasks=row["n_tasks"], date=row["finished_at"] or row["created_at"],
    )


def build_flagged(query: Query) -> list[Flagged]:
    """Public entries of the view that maintainers flagged: out of the ranking, reason shown."""
    rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, protocol=query.protocol,
                                      submission__split=query.split, submission__public=True,
                                      submission__flagged=True)
            .order_by("submission__model_name", "pk")
            .values_list("pk", "submission__model_name", "submission__organisation", "submission__flag_reason"))
    return [Flagged(*row) for row in rows[:200]]


# --------------------------------------------------------------------------- ranks and uncertainty


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12


def assign_ranks(entries: list[Entry]) -> None:
    """Competition ranking by Final ("1, 2, 2, 4") over non-baseline entries sorted best first."""
    position = 0
    previous: Entry | None = None
    for entry in entries:
        if entry.is_baseline:
            entry.rank = None
            continue
        position += 1
        entry.rank = previous.rank if previous is not None and _same(previous.final, entry.final) else position
        previous = entry


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None, final_a: float, final_b: float) -> bool:
    """Whether two entries are statistically tied: their Final intervals overlap (entries
    without an interval tie only on an equal score)."""
    from evaluator.scoring import overlapping

    if a is None or b is None:
        return _same(final_a, final_b)
    return overlapping(a, b)


def assign_ties(ranked: list[Entry]) -> None:
    """Mark runs of neighbours whose intervals overlap: each row knows whether it is tied with
    the row above, and rows of one run share a tie group number."""
    group = 0
    for index, entry in enumerate(ranked):
        above = ranked[index - 1] if index else None
        entry.tied_with_previous = bool(above) and overlap(above.final_ci, entry.final_ci, above.final, entry.final)
        if not entry.tied_with_previous:
            group += 1
        entry.tie_group = group


def rank_ranges(ranked: list[Entry], scope: str = "") -> list[tuple[int, int] | None]:
    """95 % rank range of each ranked entry from a paired bootstrap over tasks.

    Entries without per-task results (the paper's rows) enter with a constant score, so they
    hold their place in others' ranges; when no entry has per-task results there is nothing
    to resample and every range is None. ``scope`` names the board (see :func:`board_vectors`).
    """
    if not ranked:
        return []
    stamps = {entry.evaluation_id: _stamp(entry.date) for entry in ranked}
    members = "|".join(f"{evaluation_id}:{stamp}" for evaluation_id, stamp in stamps.items())
    key = f"lb:v{CACHE_FORMAT}:rank-ranges:{hashlib.sha256(members.encode()).hexdigest()}"
    ranges = cache.get(key)
    if ranges is None:  # the same entries (ranked alike) have the same ranges, whatever the generation
        vectors = board_vectors(scope, stamps)
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
    from evaluator.scoring import bootstrap_means

    if matrix.shape[0] == 1:
        return [(1, 1)]
    alpha = 1 - CONFIDENCE
    ranks = competition_ranks(np.round(bootstrap_means(matrix, RANK_RESAMPLES, RANK_SEED), 12))
    best = np.percentile(ranks, 100 * alpha / 2, axis=1, method="lower")
    worst = np.percentile(ranks, 100 * (1 - alpha / 2), axis=1, method="higher")
    return [(int(b), int(w)) for b, w in zip(best, worst, strict=True)]


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of each row in every column, 1 = highest, equal scores share the better rank (1, 1, 3)."""
    by_column = np.ascontiguousarray(scores.T)  # one sort per resample, over contiguous memory
    order = np.argsort(-by_column, axis=1)  # equal scores may come in any order: groups share a rank
    ordered = np.take_along_axis(by_column, order, axis=1)
    starts_group = np.ones(ordered.shape, dtype=bool)
    starts_group[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    positions = np.broadcast_to(np.arange(scores.shape[0])[None, :], ordered.shape)
    group_start = np.maximum.accumulate(np.where(starts_group, positions, 0), axis=1)
    ranks = np.empty(by_column.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, group_start + 1, axis=1)
    return ranks.T


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


def task_vectors(stamps: dict[int, str]) -> dict[int, TaskVector]:
    """Evaluation id -> (task ids, their Finals), sorted by task id, for the given evaluations
    (id -> :func:`_stamp` of when it was scored) that have per-task results.

    Results of a scored evaluation never change, so they are cached per evaluation across
    generations: a new generation only reads the results of evaluations scored since. The
    scoring time is part of the key, so a reused id can never return another run's results.
    """
    keys = {evaluation_id: f"lb:v{CACHE_FORMAT}:task-finals:{evaluation_id}:{stamp}"
            for evaluation_id, stamp in stamps.items()}
    found = cache.get_many(list(keys.values()))
    vectors = {evaluation_id: found[key] for evaluation_id, key in keys.items() if key in found}
    missing = [evaluation_id for evaluation_id in keys if evaluation_id not in vectors]
    if missing:
        fresh = _read_task_vectors(missing)
        if len(fresh) <= PER_EVALUATION_CACHE_LIMIT:  # newcomers; a whole board is kept by board_vectors
            cache.set_many({keys[evaluation_id]: vector for evaluation_id, vector in fresh.items()}, CACHE_SECONDS)
        vectors.update(fresh)
    return {evaluation_id: vector for evaluation_id, vector in vectors.items() if vector is not None}


def board_vectors(scope: str, stamps: dict[int, str]) -> dict[int, TaskVector]:
    """:func:`task_vectors` for a whole board, also kept together under the board's ``scope``: a
    board that gained an entry reads one cache value and the newcomer's results, not one
    value per entry. Vectors are stored as raw bytes, which (un)pickle far faster than arrays."""
    key = f"lb:v{CACHE_FORMAT}:board-vectors:{scope}"
    kept = cache.get(key) or {}
    vectors = {evaluation_id: _unpack(kept[(evaluation_id, stamp)]) for evaluation_id, stamp in stamps.items()
               if (evaluation_id, stamp) in kept}
    missing = {evaluation_id: stamp for evaluation_id, stamp in stamps.items() if evaluation_id not in vectors}
    if missing:
        vectors.update(task_vectors(missing))
        packed = {(evaluation_id, stamps[evaluation_id]): _pack(vector) for evaluation_id, vector in vectors.items()}
        cache.set(key, packed, CACHE_SECONDS)
    return vectors


def _pack(vector: TaskVector) -> tuple[bytes, bytes]:
    return vector[0].astype(np.int64).tobytes(), vector[1].astype(np.float64).tobytes()


def _unpack(packed: tuple[bytes, bytes]) -> TaskVector:
    return np.frombuffer(packed[0], dtype=np.int64), np.frombuffer(packed[1], dtype=np.float64)


def _read_task_vectors(evaluation_ids: list[int]) -> dict[int, TaskVector | None]:
    """One query for every evaluation's per-task Final (None for evaluations without results).

    The rows go straight from the database cursor into an array: a board of a thousand
    entries has over a hundred thousand of them, and model rows would cost several times more.
    """
    sql, params = (TaskResult.objects.filter(evaluation_id__in=evaluation_ids).order_by("evaluation_id", "task_id")
                   .values_list("evaluation_id", "task_id", "final").query.sql_with_params())
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        data = np.array(cursor.fetchall(), dtype=float).reshape(-1, 3)
    vectors: dict[int, TaskVector | None] = dict.fromkeys(evaluation_ids)
    if len(data):
        cuts = np.flatnonzero(np.diff(data[:, 0])) + 1
        for chunk in np.split(data, cuts):
            vectors[int(chunk[0, 0])] = (chunk[:, 1].astype(np.int64), chunk[:, 2].copy())
    return vectors


def _stamp(moment: datetime | None) -> str:
    return str(int(moment.timestamp() * 1_000_000)) if moment else "0"


# --------------------------------------------------------------------------- the cached board


def leaderboard(query: Query) -> Leaderboard:
    """The view's leaderboard, computed once per generation."""
    generation = get_generation()
    key = f"lb:v{CACHE_FORMAT}:{generation}:board:{query.key()}"
    board = cache.get(key)
    if board is None:
        board = Leaderboard(query=query, entries=build_entries(query), flagged=build_flagged(query),
                            generation=generation)
        cache.set(key, board, CACHE_SECONDS)
    return board


# --------------------------------------------------------------------------- categories


def natural_key(text: str) -> list:
    """Sort "L2" before "L10" and words alphabetically."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", str(text))]


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
    from evaluator.scoring import summarize

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
    """Per-category scores of the view's evaluated entries (cached with the board's generation)."""
    if axis not in CATEGORY_AXES:
        raise QueryError(f"axis={axis!r} is not valid: use one of {', '.join(CATEGORY_AXES)}")
    key = f"lb:v{CACHE_FORMAT}:{board.generation}:categories:{board.query.key()}:{axis}"
    breakdown = cache.get(key)
    if breakdown is None:
        breakdown = _category_breakdown(board, axis)
        cache.set(key, breakdown, CACHE_SECONDS)
    return breakdown


def _category_breakdown(board: Leaderboard, axis: str) -> CategoryBreakdown:
    evaluated = [entry for entry in board.entries if not entry.is_paper]
    summaries = dict(Evaluation.objects.filter(pk__in=[e.evaluation_id for e in evaluated])
                     .values_list("pk", "summary"))
    per_entry = {pk: category_scores(summary) for pk, summary in summaries.items()}
    bare = [pk for pk, scores in per_entry.items() if not any(scores.values())]
    if bare:  # summaries without categories (older evaluators): computed from the stored task results
        results = TaskResult.objects.filter(evaluation_id__in=bare).select_related("task")
        for pk, group in itertools.groupby(results.order_by("evaluation_id"), key=lambda r: r.evaluation_id):
            per_entry[pk] = category_scores_from_results(group)
    kept, scores = [], []
    for entry in evaluated:
        per_axis = (per_entry.get(entry.evaluation_id) or {}).get(axis)
        if per_axis:
            kept.append(entry)
            scores.append(per_axis)
    labels = sorted({label for row in scores for label in row}, key=natural_key)
    ranked_scores = [{axis: row} for entry, row in zip(kept, scores, strict=True) if entry.rank is not None]
    return CategoryBreakdown(axis, labels, kept, scores, category_means(ranked_scores, axis))

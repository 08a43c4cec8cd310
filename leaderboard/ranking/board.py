"""The rows of a leaderboard view: which evaluations, in what order, with ranks, rank ranges and ties
(ranked here; :mod:`leaderboard.ranking.stored` keeps and caches the boards)."""

from __future__ import annotations

import numpy as np
from django.db.models import Case, F, Q, Value, When, Window
from django.db.models.functions import Coalesce, Lower, RowNumber

from evaluator.scoring import competition_ranks, overlapping
from leaderboard import official
from leaderboard.models import Evaluation, Submission
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.ranking.confidence import rank_ranges
from leaderboard.ranking.entries import Entry, Flagged
from leaderboard.ranking.query import Query

Kind = Submission.Kind


# --------------------------------------------------------------------------- which evaluations

# Every column an entry shows, read in the query that picks the entries (tuples: no per-row dicts).
_VALUE_FIELDS = (
    "pk", "submission_id", "submission__model_name", "submission__organisation", "submission__model_size",
    "submission__kind", "submission__open_weights", "submission__verified", "submission__paper_url",
    "submission__code_url", "protocol", "evaluator_version", *SCORE_FIELDS,
    *(f"{name}_ci_{side}" for name in SCORE_FIELDS for side in ("low", "high")), "n_tasks", "date",
)


def candidates(query: Query):
    """Scored evaluations a view may show, before keeping one per model (a queryset)."""
    rows = Evaluation.objects.filter(
        status=Evaluation.Status.SCORED, protocol=query.protocol, submission__split=query.split,
        submission__public=True, submission__flagged=False, final__isnull=False, **judge_filter(query),
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


def judge_filter(query: Query) -> dict:
    """Only the view's judge: an official board holds one judge's scores (``judge`` "" = no judge)."""
    judge, grounding = official.judge_models(query.judge) if query.judge else ("", "")
    return {"judge_model": judge, "grounding_model": grounding}


def one_per_model(rows, selection: str):
    """``rows`` narrowed to each researcher's best (highest Final, then latest) or latest evaluation
    per model, chosen by the database with a window function. Rows without an owner (paper,
    baselines) are one per kind and model name."""
    group = Case(When(submission__owner__isnull=True, then=F("submission__kind")), default=Value(""))
    latest = [F("finished_at").desc(nulls_last=True), F("pk").desc()]
    order = [F("final").desc(nulls_last=True), *latest] if selection == "best" else latest
    window = Window(RowNumber(), partition_by=[F("submission__owner_id"), group, Lower("submission__model_name")],
                    order_by=order)
    return rows.order_by().annotate(position=window).filter(position=1)


def model_entries(model_name: str) -> list[Entry]:
    """Every public scored entry of one model (name compared case-insensitively) across splits and
    protocol versions, newest first: what the board would show of each of its evaluations, without
    ranks (a rank belongs to one view). Flagged entries stay off, as on the boards."""
    rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, submission__public=True,
                                      submission__flagged=False, final__isnull=False,
                                      submission__model_name__iexact=model_name.strip())
            .annotate(date=Coalesce("finished_at", "created_at")).order_by("-date", "-pk")
            .values_list(*_VALUE_FIELDS, "submission__split"))
    found = []
    for *values, split in rows:
        entry = _entry(tuple(values))
        found.append((split, entry))
    return found


def build_entries(query: Query) -> list[Entry]:
    """The view's entries, best Final first, with ranks, rank ranges and ties (uncached)."""
    entries = sorted(map(_entry, entry_rows(query)), key=lambda e: (-e.final, e.model_name.lower(), e.evaluation_id))
    assign_ranks(entries)
    ranked = [entry for entry in entries if entry.rank is not None]
    for entry, span in zip(ranked, rank_ranges(ranked), strict=True):
        entry.rank_range = span
    assign_ties(ranked)
    return entries


def entry_rows(query: Query):
    """One query that picks the view's entries and reads what they show (``_VALUE_FIELDS`` tuples).

    The window runs over the few columns it needs and the chosen rows are joined back by primary
    key, which costs PostgreSQL less than sorting every candidate's full row. (The rank ranges
    add at most one query, see :func:`leaderboard.ranking.confidence.task_vectors`, when they
    are not cached already.)
    """
    chosen = one_per_model(candidates(query), query.selection).values("pk")
    return (Evaluation.objects.filter(pk__in=chosen).order_by()
            .annotate(date=Coalesce("finished_at", "created_at")).values_list(*_VALUE_FIELDS))


def _interval(low: float | None, high: float | None) -> tuple[float, float] | None:
    return (low, high) if low is not None and high is not None else None


def _entry(row: tuple) -> Entry:
    (pk, submission_id, model_name, organisation, model_size, kind, open_weights, verified, paper_url, code_url,
     protocol, evaluator_version, final, ifs, vfs, low_level, high_level, *bounds, n_tasks, date) = row
    final_ci, ifs_ci, vfs_ci, low_level_ci, high_level_ci = map(_interval, bounds[::2], bounds[1::2])
    return Entry(
        evaluation_id=pk, submission_id=submission_id, model_name=model_name, organisation=organisation,
        model_size=model_size, kind=kind, open_weights=open_weights, verified=verified, paper_url=paper_url,
        code_url=code_url, protocol=protocol, evaluator_version=evaluator_version, final=final, ifs=ifs or 0.0,
        vfs=vfs or 0.0, low_level=low_level, high_level=high_level, final_ci=final_ci, ifs_ci=ifs_ci,
        vfs_ci=vfs_ci, n_tasks=n_tasks, date=date, low_level_ci=low_level_ci, high_level_ci=high_level_ci,
    )


def build_flagged(query: Query) -> list[Flagged]:
    """Public entries of the view that maintainers flagged: out of the ranking, reason shown."""
    rows = (Evaluation.objects.filter(status=Evaluation.Status.SCORED, protocol=query.protocol,
                                      submission__split=query.split, submission__public=True,
                                      submission__flagged=True, **judge_filter(query))
            .order_by("submission__model_name", "pk")
            .values_list("pk", "submission__model_name", "submission__organisation", "submission__flag_reason"))
    return [Flagged(*row) for row in rows[:200]]


# --------------------------------------------------------------------------- ranks and ties


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12


def assign_ranks(entries: list[Entry]) -> None:
    """Competition ranking by Final ("1, 2, 2, 4") over non-baseline entries: the rule of
    :func:`evaluator.scoring.competition_ranks`, which ranks the bootstrap resamples too (scores
    equal to 12 decimals tie, whatever order the sums were taken in)."""
    ranked = [entry for entry in entries if not entry.is_baseline]
    for entry in entries:
        entry.rank = None
    if ranked:
        finals = np.round(np.array([[entry.final] for entry in ranked], dtype=float), 12)
        for entry, rank in zip(ranked, competition_ranks(finals)[:, 0].tolist(), strict=True):
            entry.rank = rank


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None, final_a: float, final_b: float) -> bool:
    """Whether two entries are statistically tied: their Final intervals overlap (entries
    without an interval tie only on an equal score)."""
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

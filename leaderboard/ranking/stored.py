"""Boards ranked when they change and stored, so that a reader with an empty cache reads a row.

Ranking a board of a thousand entries (the entries query, their per-task Finals, the paired
bootstrap of rank ranges, the flagged rows) costs 100-200 ms of a request. Each split's board under
each protocol version, in both selections and without a filter, is therefore ranked once after
every change of what it shows and kept in a :class:`~leaderboard.models.board.StoredBoard` row;
filtered views and searches of other views are ranked on demand as before. The caches of
:mod:`leaderboard.cache` still hold every view per generation: a stored board only replaces the
ranking behind a cache miss.

Never an old ranking: whoever changes what a board shows calls :func:`boards_changed` once the
change is committed. It counts the change on the boards it touches (``marks``), then moves the
generation on (so no cached copy of the old board is read again), then ranks those boards again.
A build reads the count before it reads the entries and stores its result only as the build of
that count: a stored board is current while no change was counted after its build began, and a
reader that finds it stale ranks the view itself (and stores the result the same way). A row is
made before its first build, so a change committed before the row existed is in every build.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from leaderboard import cache as board_cache
from leaderboard.cache import CACHE_SECONDS, get_generation
from leaderboard.models import Evaluation, StoredBoard
from leaderboard.ranking.board import build_entries, build_flagged
from leaderboard.ranking.entries import ENTRY_FIELDS, Entry, Flagged, Leaderboard
from leaderboard.ranking.query import CONFIDENCE, RANK_RESAMPLES, RANK_SEED, SELECTIONS, Query

log = logging.getLogger(__name__)

_TUPLE_INDEXES = [i for i, name in enumerate(ENTRY_FIELDS) if name.endswith("_ci") or name == "rank_range"]
_DATE_INDEX = ENTRY_FIELDS.index("date")
# A stored board built by a release that shaped or ranked entries otherwise is stale: bump SHAPE
# when the ranking rules change; the entry's fields and the bootstrap's constants count by themselves.
SHAPE = 1
FORMAT = hashlib.sha256(repr((SHAPE, ENTRY_FIELDS, RANK_RESAMPLES, RANK_SEED, CONFIDENCE)).encode()).hexdigest()[:24]

Pair = tuple[str, str]  # (split, protocol full name)


# --------------------------------------------------------------------------- reading


def leaderboard(query: Query) -> Leaderboard:
    """The view's leaderboard, computed once per generation (from its stored board when it has a
    current one). A search keeps the whole view's ranks, intervals and rank ranges and only leaves
    out the entries it does not match."""
    if query.q:
        whole = leaderboard(replace(query, q=""))
        return replace(whole, query=query, entries=[e for e in whole.entries
                                                    if query.matches(e.model_name, e.organisation)])
    generation = get_generation()
    key = board_cache.key("board", query.key(), generation=generation)
    board = cache.get(key)
    if board is None:
        board = _stored_or_ranked(query, generation)
        cache.set(key, board, CACHE_SECONDS)
    return board


def is_stored(query: Query) -> bool:
    """Whether the view is one kept as a stored board: no filter, no search, no judge (an official
    protocol's boards, one per judge model, are few and small: they are ranked on demand)."""
    return (query.weights == "all" and not query.verified and query.source == "all" and not query.q
            and not query.judge)


def _stored_or_ranked(query: Query, generation: int) -> Leaderboard:
    if not is_stored(query):
        return _ranked(query, generation)
    row = (StoredBoard.objects.filter(split=query.split, protocol=query.protocol, selection=query.selection)
           .values_list("pk", "marks", "built_marks", "format", "entries", "flagged").first())
    if row is None:  # no board stored yet for this view: rank it (the next change stores one)
        return _ranked(query, generation)
    pk, marks, built_marks, shape, entries, flagged = row
    if built_marks == marks and shape == FORMAT:
        return Leaderboard(query=query, entries=decode_entries(entries), flagged=decode_flagged(flagged),
                           generation=generation)
    started = time.perf_counter()
    board = _ranked(query, generation)  # ``marks`` was read before the entries: store it as this build's
    _store(pk, marks, board, started)
    return board


def _ranked(query: Query, generation: int) -> Leaderboard:
    return Leaderboard(query=query, entries=build_entries(query), flagged=build_flagged(query), generation=generation)


# --------------------------------------------------------------------------- changes


def boards_changed(pairs: Iterable[Pair] | None = None, split: str | None = None) -> int:
    """Call after a change to what boards show has been committed: count it on the boards of
    ``pairs`` ((split, protocol) pairs), or of ``split``, or on every board; move the generation
    on; rank those boards again. Returns the new generation.

    Ranking again is the last step: should it fail, the boards stay stale (readers rank them
    themselves) and the change is still shown everywhere."""
    marked = mark(pairs, split)
    generation = board_cache.bump_generation()
    for board_split, protocol in marked:
        build(board_split, protocol)
    return generation


def evaluation_finished(evaluation_id: int) -> int:
    """:func:`boards_changed` for the boards an evaluation that just finished (scored or failed) is on."""
    return boards_changed(pairs_of_evaluations(Evaluation.objects.filter(pk=evaluation_id)))


def pairs_of_evaluations(evaluations) -> set[Pair]:
    """The (split, protocol) boards the given evaluations (a queryset) appear on, or would."""
    return set(evaluations.order_by().values_list("submission__split", "protocol").distinct())


def pairs_of_submissions(submission_ids: Iterable[int]) -> set[Pair]:
    return pairs_of_evaluations(Evaluation.objects.filter(submission_id__in=list(submission_ids)))


def mark(pairs: Iterable[Pair] | None = None, split: str | None = None) -> set[Pair]:
    """Count a change on the boards of ``pairs`` (their rows made first when missing), or on every
    stored board of ``split``, or on every board (stored ones, and one for every split and protocol
    holding scored public entries). Returns the (split, protocol) pairs marked."""
    if pairs is None:
        rows = StoredBoard.objects.all() if split is None else StoredBoard.objects.filter(split=split)
        found = set(rows.values_list("split", "protocol").distinct())
        if split is None:
            found |= _scored_pairs()
        pairs = found
    pairs = set(pairs)
    for pair in pairs:
        _make_rows(*pair)
        StoredBoard.objects.filter(split=pair[0], protocol=pair[1]).update(marks=F("marks") + 1)
    return pairs


def _scored_pairs() -> set[Pair]:
    scored = Evaluation.objects.filter(status=Evaluation.Status.SCORED, submission__public=True)
    return pairs_of_evaluations(scored)


def _make_rows(split: str, protocol: str) -> None:
    StoredBoard.objects.bulk_create(
        [StoredBoard(split=split, protocol=protocol, selection=selection) for selection in SELECTIONS],
        ignore_conflicts=True)


# --------------------------------------------------------------------------- building


def build(split: str, protocol: str) -> None:
    """Rank the boards of one split and protocol version (every selection) and store them."""
    _make_rows(split, protocol)  # made before the count is read: every change since is counted on it
    for pk, selection, marks in (StoredBoard.objects.filter(split=split, protocol=protocol)
                                 .values_list("pk", "selection", "marks")):
        started = time.perf_counter()
        query = Query(split=split, protocol=protocol, selection=selection)
        with _snapshot():
            board = _ranked(query, 0)
        _store(pk, marks, board, started)


def _snapshot():
    """One consistent view of the database for a whole build where it can be had: on PostgreSQL
    a repeatable-read transaction (the entries and their per-task Finals then agree even while
    other scorings commit); elsewhere, and inside a caller's transaction, the connection as it is."""
    atomic = transaction.atomic()
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        return _RepeatableRead(atomic)
    return atomic


class _RepeatableRead:
    def __init__(self, atomic):
        self.atomic = atomic

    def __enter__(self):
        self.atomic.__enter__()
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")

    def __exit__(self, *exc_info):
        return self.atomic.__exit__(*exc_info)


def _store(pk: int, marks: int, board: Leaderboard, started: float) -> bool:
    """Store ``board`` as the build of count ``marks``, unless a build of that count (in this
    release's format) or of a later one is stored already."""
    older = Q(built_marks__lt=marks) | (Q(built_marks=marks) & ~Q(format=FORMAT))
    stored = StoredBoard.objects.filter(older, pk=pk).update(
        built_marks=marks, format=FORMAT, entries=encode_entries(board.entries),
        flagged=encode_flagged(board.flagged), built_at=timezone.now(),
        build_ms=round(1000 * (time.perf_counter() - started)))
    return bool(stored)


# --------------------------------------------------------------------------- encoding


def encode_entries(entries: list[Entry]) -> str:
    """Entries as JSON lists of their fields' values in ``ENTRY_FIELDS`` order (floats round-trip exactly)."""
    rows = []
    for entry in entries:
        values = [getattr(entry, name) for name in ENTRY_FIELDS]
        rows.append([value.isoformat() if isinstance(value, datetime) else value for value in values])
    return json.dumps(rows, separators=(",", ":"))


def decode_entries(text: str) -> list[Entry]:
    """:func:`encode_entries`'s entries back (positional: the row's format says the fields match)."""
    entries = []
    for values in json.loads(text or "[]"):
        for index in _TUPLE_INDEXES:
            if values[index] is not None:
                values[index] = tuple(values[index])
        if values[_DATE_INDEX] is not None:
            values[_DATE_INDEX] = datetime.fromisoformat(values[_DATE_INDEX])
        entries.append(Entry(*values))
    return entries


def encode_flagged(flagged: list[Flagged]) -> str:
    return json.dumps([[f.evaluation_id, f.model_name, f.organisation, f.reason] for f in flagged],
                      separators=(",", ":"))


def decode_flagged(text: str) -> list[Flagged]:
    return [Flagged(*values) for values in json.loads(text or "[]")]

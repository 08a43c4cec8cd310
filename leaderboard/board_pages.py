"""Everything cached about a leaderboard page, built here and nowhere else: the entries being
scored now (the note above an empty or changing board), the rendered page below the header,
the API's encoded pages, and warming the most read ones right after a scoring.

Every value is keyed on the leaderboard generation (:mod:`leaderboard.cache`), so a finished
scoring makes them all stale at once; the being-scored note is also dropped as soon as a
submission is queued or cancelled (:func:`forget_being_scored`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Paginator
from django.template.loader import render_to_string
from django.urls import reverse

from leaderboard import access, exports, official, ranking
from leaderboard import cache as board_cache
from leaderboard.cache import CACHE_SECONDS, get_generation
from leaderboard.models import Evaluation, Submission
from leaderboard.models.tasks import Split

SCORING_SHOWN = 5  # entries named in a leaderboard view's "being scored now" note
SCORING_SECONDS = 30  # how long that note is cached (a new submission clears it at once)
DEFAULT_LIMIT = 100  # rows of an API page unless asked otherwise
LIST_PATH = "/api/v1/leaderboard/"

COLUMNS = (  # (sort key, heading, numeric)
    ("rank", "Rank", True), ("model", "Model", False), ("organisation", "Organisation", False),
    ("final", "Final", True), ("ifs", "IFS", True), ("vfs", "VFS", True), ("low_level", "Low-level", True),
    ("high_level", "High-level", True), ("n_tasks", "Tasks", True), ("date", "Date", True),
)
HIDDEN_ON_PHONES = {"organisation", "low_level", "high_level", "n_tasks", "date"}
OPTIONAL_COLUMNS = {"organisation", "ifs", "vfs", "low_level", "high_level", "n_tasks", "date"}  # the column chooser
SPLIT_LABELS = {"test": "Test split (held out)", "dev": "Dev split (public)"}


SORTS = {
    "rank": None,  # the board's own order
    "model": lambda e: (e.model_name.lower(),),
    "organisation": lambda e: (e.organisation.lower(), e.model_name.lower()),
    "final": lambda e: (e.final,),
    "ifs": lambda e: (e.ifs,),
    "vfs": lambda e: (e.vfs,),
    "low_level": lambda e: (e.low_level if e.low_level is not None else -1.0,),
    "high_level": lambda e: (e.high_level if e.high_level is not None else -1.0,),
    "n_tasks": lambda e: (e.n_tasks,),
    "date": lambda e: (e.date.timestamp() if e.date else 0.0,),
}
TEXT_SORTS = {"model", "organisation"}


def link(name: str, params: dict) -> str:
    """The URL of a named page with these query parameters."""
    return f"{reverse(name)}?{urlencode(params)}" if params else reverse(name)


def parse_sort(params: Mapping[str, str]) -> tuple[str, bool]:
    """(column, descending) from ``sort`` and ``dir``; unknown values fall back to rank order."""
    column = params.get("sort") or "rank"
    if column not in SORTS:
        column = "rank"
    default_descending = column not in TEXT_SORTS
    direction = params.get("dir")
    descending = default_descending if direction not in ("asc", "desc") else direction == "desc"
    return column, descending


def sorted_entries(entries: list[ranking.Entry], column: str, descending: bool) -> list[ranking.Entry]:
    """Entries ordered by a column; the sort is stable, so equal values keep their rank order."""
    if column == "rank":
        return list(entries) if descending else list(reversed(entries))
    return sorted(entries, key=SORTS[column], reverse=descending)


def page_body(query: ranking.Query, sort: str = "rank", descending: bool = True, number: str = "1") -> dict:
    """The leaderboard page below the header for one view, ordering and page (cached per generation):
    ``html``, and ``waiting`` (no entry to show yet, but some are being scored)."""
    scoring = being_scored(query.split, query.protocol)
    key = board_cache.key("page", query.key(), sort, int(descending), number, "scoring", scoring.signature(),
                          generation=get_generation())
    body = cache.get(key)
    if body is None:
        board = ranking.leaderboard(query)
        context = {**_board_context(board, sort, descending, number), "scoring": scoring}
        body = {"html": render_to_string("leaderboard/rankings/_board.html", context),
                "waiting": bool(scoring.count and not board.entries)}
        cache.set(key, body, CACHE_SECONDS)
    return body


def warm_default_views(splits=("test", "dev")) -> None:
    """Build the most read pages of the new generation ahead of their readers: each split's board
    under the default protocol, its first page and its first API page. Meant to run in the worker
    right after it bumps the generation, so the first reader after a scoring gets a cached page."""
    for split in splits:
        query = ranking.parse_query({"split": split})
        page_body(query)
        cached_page(query, 0, DEFAULT_LIMIT, api_base())


def _board_context(board, sort: str, descending: bool, number: str) -> dict:
    query = board.query
    rows = sorted_entries(board.entries, sort, descending)
    page = Paginator(rows, settings.LEADERBOARD_PAGE_SIZE).get_page(number)
    return {
        "board": board, "query": query, "params": query.params(),
        "protocol_label": ranking.protocol_label(query.protocol, query.judge),
        "is_paper": query.protocol == ranking.PAPER_PROTOCOL,
        "split_tabs": _split_tabs(query), "protocol_tabs": _protocol_tabs(query),
        "page": page, "headers": _headers(query, sort, descending), "in_rank_order": sort == "rank" and descending,
        "page_links": _page_links(query, sort, descending, page),
        "exports": {fmt: link("leaderboard-export", {**query.params(), "format": fmt}) for fmt in exports.FORMATS},
        # Per-task scores of a held-out split are not public: the page (cached for everyone) does not link them.
        "matrix": ({fmt: link("leaderboard-matrix", {**query.params(), "format": fmt})
                    for fmt in exports.MATRIX_FORMATS} if access.per_task_public(query.split) else None),
        "api_url": link("api-leaderboard-list", query.params()),
        "scores_chart": link("leaderboard-chart-scores", query.params()),
        "categories_url": link("leaderboard-categories", query.params()),
        "category_charts": [
            {"axis": axis, "label": label,
             "url": link("leaderboard-chart-categories", {**query.params(), "axis": axis})}
            for axis, label in ranking.AXIS_LABELS.items()
        ],
        "counts": _counts(board),
        "agreement_url": link("leaderboard-agreement", query.params()) if official.is_official(query.protocol) else "",
        "clear_search": link("home", query.params(q="")),
    }


def _counts(board) -> dict:
    return {"ranked": len(board.ranked), "baselines": sum(e.is_baseline for e in board.entries),
            "flagged": len(board.flagged)}


def _split_tabs(query) -> list[dict]:
    return [{"label": SPLIT_LABELS.get(split, split), "current": split == query.split,
             "url": link("home", query.params(split=split, protocol=ranking.resolve_protocol(""), judge=""))}
            for split in Split.values]


def _protocol_tabs(query) -> list[dict]:
    return [{"label": ranking.protocol_label(name, judge), "current": (name, judge) == (query.protocol, query.judge),
             "url": link("home", query.params(protocol=name, judge=judge))}
            for name, judge in ranking.board_tabs(query.split)]


def _headers(query, sort: str, descending: bool) -> list[dict]:
    headers = []
    for key, label, numeric in COLUMNS:
        current = key == sort
        default_desc = key not in TEXT_SORTS
        next_desc = (not descending) if current else default_desc
        headers.append({
            "key": key, "label": label, "numeric": numeric, "current": current, "hide_mobile": key in HIDDEN_ON_PHONES,
            "optional": key in OPTIONAL_COLUMNS,
            "aria": ("descending" if descending else "ascending") if current else "none",
            "url": link("home", {**query.params(), "sort": key, "dir": "desc" if next_desc else "asc"}),
        })
    return headers


def _page_links(query, sort: str, descending: bool, page) -> dict:
    params = {**query.params(), "sort": sort, "dir": "desc" if descending else "asc"}
    links = {}
    if page.has_previous():
        links["previous"] = link("home", {**params, "page": page.previous_page_number()})
    if page.has_next():
        links["next"] = link("home", {**params, "page": page.next_page_number()})
    return links



# --------------------------------------------------------------------------- the API's pages


def api_base() -> str:
    """The list's absolute URL as readers reach it (the site's address), for warming its pages."""
    return settings.SITE_URL.rstrip("/") + LIST_PATH


def cached_page(query: ranking.Query, offset: int, limit: int, base: str = LIST_PATH, per_task: bool = False) -> bytes:
    """The encoded page, served from the cache without unpickling the board (one cache read when warm).

    ``base`` is the list's absolute URL (its links start with it); ``per_task`` adds each entry's
    per-task scores (callers decide whether the reader may see them: :func:`access.may_see_per_task`)."""
    base_key = hashlib.sha256(base.encode()).hexdigest()[:16]
    key = board_cache.key("api", query.key(), offset, limit, base_key, int(per_task), generation=get_generation())
    body = cache.get(key)
    if body is None:
        document = page_document(ranking.leaderboard(query), offset, limit, base, per_task)
        body = json.dumps(document, separators=(",", ":")).encode()
        cache.set(key, body, CACHE_SECONDS)
    return body


def page_document(board: ranking.Leaderboard, offset: int, limit: int, base: str = LIST_PATH,
                  per_task: bool = False) -> dict:
    """One page of the view's document, with the total count and links to the neighbouring pages
    (``base`` and the view's parameters); ``per_task`` adds each entry's ``tasks`` scores."""
    data = exports.document(board, offset, offset + limit, per_task=per_task)
    data.update(offset=offset, limit=limit, next=None, previous=None)
    params = {**board.query.params(), **({"per_task": 1} if per_task else {})}
    if offset + limit < len(board.entries):
        data["next"] = f"{base}?{urlencode({**params, 'offset': offset + limit, 'limit': limit})}"
    if offset > 0:
        data["previous"] = f"{base}?{urlencode({**params, 'offset': max(0, offset - limit), 'limit': limit})}"
    return data


# --------------------------------------------------------------------------- entries being scored


@dataclass(frozen=True)
class BeingScored:
    """The public entries of one leaderboard view (split, protocol version) queued or being scored now:
    how many, and the first few (``id`` of the submission, ``model_name``, ``baseline``, ``status``)."""

    count: int = 0
    entries: tuple = ()

    @property
    def more(self) -> int:
        """How many are not named in ``entries``."""
        return self.count - len(self.entries)

    @property
    def baselines_only(self) -> bool:
        return self.count == len(self.entries) and all(entry["baseline"] for entry in self.entries)

    def signature(self) -> str:
        """What the leaderboard page shows of this, as a cache-key part."""
        return f"{self.count}:" + ",".join(f"{entry['id']}{entry['status'][0]}" for entry in self.entries)


def being_scored(split: str, protocol: str) -> BeingScored:
    """:class:`BeingScored` of a view, cached briefly per leaderboard generation (a finished scoring
    bumps the generation; a new or cancelled submission clears it: :func:`forget_being_scored`)."""
    key = _being_scored_key(split, protocol)
    found = cache.get(key)
    if found is None:
        found = _being_scored(split, protocol)
        cache.set(key, found, SCORING_SECONDS)
    return found


def forget_being_scored(split: str, protocol: str) -> None:
    cache.delete(_being_scored_key(split, protocol))


def _being_scored_key(split: str, protocol: str) -> str:
    protocol_key = hashlib.sha256(protocol.encode()).hexdigest()[:24]
    return board_cache.key("being-scored", split, protocol_key, generation=get_generation())


def _being_scored(split: str, protocol: str) -> BeingScored:
    live = Evaluation.objects.filter(
        status__in=(Evaluation.Status.QUEUED, Evaluation.Status.RUNNING), protocol=protocol,
        submission__split=split, submission__public=True, submission__flagged=False)
    rows = list(live.order_by("-status", "priority", "created_at").values_list(
        "submission_id", "submission__model_name", "submission__kind", "status")[:SCORING_SHOWN + 1])
    count = len(rows) if len(rows) <= SCORING_SHOWN else live.count()
    entries = tuple({"id": pk, "model_name": name, "baseline": kind == Submission.Kind.BASELINE, "status": status}
                    for pk, name, kind, status in rows[:SCORING_SHOWN])
    return BeingScored(count, entries)

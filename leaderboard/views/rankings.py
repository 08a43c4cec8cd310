"""Leaderboard pages: the ranked table (the home page), per-category breakdowns, exports and
the JSON behind the charts.

Every page reads one cached :class:`leaderboard.ranking.Leaderboard` (per view and
generation), so its database work does not grow with the number of submissions; the
rendered table is cached too.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from leaderboard import charts, exports, ranking, submissions
from leaderboard.cache import get_generation
from leaderboard.models.tasks import Split

COLUMNS = (  # (sort key, heading, numeric)
    ("rank", "Rank", True), ("model", "Model", False), ("organisation", "Organisation", False),
    ("final", "Final", True), ("ifs", "IFS", True), ("vfs", "VFS", True), ("low_level", "Low-level", True),
    ("high_level", "High-level", True), ("n_tasks", "Tasks", True), ("date", "Date", True),
)
HIDDEN_ON_PHONES = {"organisation", "low_level", "high_level", "n_tasks", "date"}
SPLIT_LABELS = {"test": "Test split (held out)", "dev": "Dev split (public)"}
METRICS = ("final", "ifs", "vfs")
RELOAD_SECONDS = 20  # an empty view whose first entries are being scored reloads itself this often
CATEGORY_PAGE_SIZE = 50  # rows per per-category table: thousands of rows would cost a second to render


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


def _query_or_error(request):
    """(query, None) for good parameters, else (None, a 400 page saying which one is wrong)."""
    try:
        return ranking.parse_query(request.GET), None
    except ranking.QueryError as exc:
        page = render(request, "leaderboard/rankings/bad_query.html", {"message": str(exc)}, status=400)
        return None, page


def _url(name: str, params: dict) -> str:
    return f"{reverse(name)}?{urlencode(params)}" if params else reverse(name)


@require_GET
def home(request):
    """The leaderboard of a split under one protocol (default: test split, iwr-det).

    Everything below the site header is the same for every reader, so it is rendered once per
    view, ordering, page, generation and set of entries being scored, and served from the cache
    until the next scoring. While a view has no entry yet but some are being scored (the baselines,
    right after the site's first start), the page says so and reloads itself until they are done.
    """
    query, error = _query_or_error(request)
    if error:
        return error
    sort, descending = parse_sort(request.GET)
    body = page_body(query, sort, descending, (request.GET.get("page") or "1")[:6])
    return render(request, "leaderboard/rankings/leaderboard.html",
                  {"body": body["html"], "reload_seconds": RELOAD_SECONDS if body["waiting"] else None})


def page_body(query: ranking.Query, sort: str = "rank", descending: bool = True, number: str = "1") -> dict:
    """The leaderboard page below the header for one view, ordering and page (cached per generation):
    ``html``, and ``waiting`` (no entry to show yet, but some are being scored)."""
    scoring = submissions.being_scored(query.split, query.protocol)
    key = (f"lb:v{ranking.CACHE_FORMAT}:{get_generation()}:page:{query.key()}:{sort}:{int(descending)}:{number}"
           f":scoring:{scoring.signature()}")
    body = cache.get(key)
    if body is None:
        board = ranking.leaderboard(query)
        context = {**_board_context(board, sort, descending, number), "scoring": scoring}
        body = {"html": render_to_string("leaderboard/rankings/_board.html", context),
                "waiting": bool(scoring.count and not board.entries)}
        cache.set(key, body, ranking.CACHE_SECONDS)
    return body


def warm_default_views(splits=("test", "dev")) -> None:
    """Build the most read pages of the new generation ahead of their readers: each split's board
    under the default protocol, its first page and its first API page. Meant to run in the worker
    right after it bumps the generation, so the first reader after a scoring gets a cached page."""
    from leaderboard.api.leaderboard import DEFAULT_LIMIT, cached_page

    for split in splits:
        query = ranking.parse_query({"split": split})
        page_body(query)
        cached_page(query, 0, DEFAULT_LIMIT)


def _board_context(board, sort: str, descending: bool, number: str) -> dict:
    query = board.query
    rows = sorted_entries(board.entries, sort, descending)
    page = Paginator(rows, settings.LEADERBOARD_PAGE_SIZE).get_page(number)
    return {
        "board": board, "query": query, "params": query.params(),
        "protocol_label": ranking.protocol_label(query.protocol),
        "is_paper": query.protocol == ranking.PAPER_PROTOCOL,
        "split_tabs": _split_tabs(query), "protocol_tabs": _protocol_tabs(query),
        "page": page, "headers": _headers(query, sort, descending), "in_rank_order": sort == "rank" and descending,
        "page_links": _page_links(query, sort, descending, page),
        "exports": {fmt: _url("leaderboard-export", {**query.params(), "format": fmt}) for fmt in exports.FORMATS},
        "api_url": _url("api-leaderboard-list", query.params()),
        "scores_chart": _url("leaderboard-chart-scores", query.params()),
        "categories_url": _url("leaderboard-categories", query.params()),
        "category_charts": [
            {"axis": axis, "label": label,
             "url": _url("leaderboard-chart-categories", {**query.params(), "axis": axis})}
            for axis, label in ranking.AXIS_LABELS.items()
        ],
        "counts": _counts(board),
    }


def _counts(board) -> dict:
    return {"ranked": len(board.ranked), "baselines": sum(e.is_baseline for e in board.entries),
            "flagged": len(board.flagged)}


def _split_tabs(query) -> list[dict]:
    return [{"label": SPLIT_LABELS.get(split, split), "current": split == query.split,
             "url": _url("home", query.params(split=split, protocol=ranking.resolve_protocol("")))}
            for split in Split.values]


def _protocol_tabs(query) -> list[dict]:
    return [{"label": ranking.protocol_label(name), "current": name == query.protocol,
             "url": _url("home", query.params(protocol=name))}
            for name in ranking.protocol_tabs(query.split)]


def _headers(query, sort: str, descending: bool) -> list[dict]:
    headers = []
    for key, label, numeric in COLUMNS:
        current = key == sort
        default_desc = key not in TEXT_SORTS
        next_desc = (not descending) if current else default_desc
        headers.append({
            "key": key, "label": label, "numeric": numeric, "current": current, "hide_mobile": key in HIDDEN_ON_PHONES,
            "aria": ("descending" if descending else "ascending") if current else "none",
            "url": _url("home", {**query.params(), "sort": key, "dir": "desc" if next_desc else "asc"}),
        })
    return headers


def _page_links(query, sort: str, descending: bool, page) -> dict:
    params = {**query.params(), "sort": sort, "dir": "desc" if descending else "asc"}
    links = {}
    if page.has_previous():
        links["previous"] = _url("home", {**params, "page": page.previous_page_number()})
    if page.has_next():
        links["next"] = _url("home", {**params, "page": page.next_page_number()})
    return links


@require_GET
def categories(request):
    """Per-category tables (interaction level, visual complexity, domain) for a leaderboard view,
    ``CATEGORY_PAGE_SIZE`` rows a page (``page``): the three tables page together, so a row keeps
    its place across them, and a large board costs no more to render than a small one."""
    query, error = _query_or_error(request)
    if error:
        return error
    board = ranking.leaderboard(query)
    metric = request.GET.get("metric") if request.GET.get("metric") in METRICS else "final"
    breakdowns = [ranking.category_breakdown(board, axis) for axis in ranking.AXIS_LABELS]
    longest = max((len(breakdown.entries) for breakdown in breakdowns), default=0)
    page = Paginator(range(longest), CATEGORY_PAGE_SIZE).get_page((request.GET.get("page") or "1")[:6])
    window = slice(page.start_index() - 1, page.end_index()) if longest else slice(0, 0)
    sections = [_category_section(query, breakdown, metric, window) for breakdown in breakdowns]
    params = {**query.params(), "metric": metric}
    context = {
        "board": board, "query": query, "sections": sections, "metric": metric, "page": page,
        "page_links": _numbered_links("leaderboard-categories", params, page),
        "metric_label": charts.METRIC_LABELS[metric], "protocol_label": ranking.protocol_label(query.protocol),
        "metric_tabs": [{"label": charts.METRIC_LABELS[m], "current": m == metric,
                         "url": _url("leaderboard-categories", {**query.params(), "metric": m})} for m in METRICS],
        "board_url": _url("home", query.params()),
    }
    return render(request, "leaderboard/rankings/categories.html", context)


def _category_section(query, breakdown, metric: str, window: slice) -> dict:
    rows = zip(breakdown.entries[window], breakdown.scores[window], strict=True)
    return {
        "axis": breakdown.axis, "label": ranking.AXIS_LABELS[breakdown.axis], "breakdown": breakdown,
        "rows": [{"entry": entry, "cells": _cells(scores, breakdown.labels, metric)} for entry, scores in rows],
        "means": _cells(breakdown.means, breakdown.labels, metric),
        "chart_url": _url("leaderboard-chart-categories", {**query.params(), "axis": breakdown.axis}),
    }


def _numbered_links(name: str, params: dict, page) -> dict:
    """Previous / next links and one link per page around the current one (first and last always)."""
    links = {"pages": []}
    if page.has_previous():
        links["previous"] = _url(name, {**params, "page": page.previous_page_number()})
    if page.has_next():
        links["next"] = _url(name, {**params, "page": page.next_page_number()})
    for number in page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1):
        links["pages"].append({"number": number, "current": number == page.number,
                               "url": None if number == page.paginator.ELLIPSIS else
                               _url(name, {**params, "page": number})})
    return links


def _cells(scores: dict, labels: list[str], metric: str) -> list[dict]:
    """One table row: the metric per label in percent with a shade for the heat-map look (None where
    the entry has no task of that label)."""
    cells = []
    for label in labels:
        value = scores[label].get(metric) if label in scores else None
        cells.append(None if value is None else {"text": ranking.percent(value), "shade": f"{0.04 + 0.36 * value:.3f}"})
    return cells


@require_GET
def export(request):
    """The view as CSV, JSON or LaTeX (``format=csv|json|tex``), every row."""
    fmt = request.GET.get("format", "csv")
    if fmt not in exports.FORMATS:
        return HttpResponse(f"format={fmt!r} is not valid: use one of {', '.join(exports.FORMATS)}",
                            status=400, content_type="text/plain; charset=utf-8")
    try:
        query = ranking.parse_query(request.GET)
    except ranking.QueryError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    board = ranking.leaderboard(query)
    render_export, content_type = exports.FORMATS[fmt]
    response = HttpResponse(render_export(board), content_type=content_type)
    filename = f"iwr-bench-{query.split}-{ranking.protocol_slug(query.protocol)}".replace(" ", "-")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def _json_error(exc: Exception) -> JsonResponse:
    return JsonResponse({"detail": str(exc)}, status=400)


@require_GET
def chart_scores(request):
    """Final score with its interval for the best entries of a view (Plotly figure JSON)."""
    try:
        board = ranking.leaderboard(ranking.parse_query(request.GET))
    except ranking.QueryError as exc:
        return _json_error(exc)
    return JsonResponse({"scores": charts.score_chart(board)})


@require_GET
def chart_categories(request):
    """Per-category figures of a view along ``axis``: grouped bars (IFS, VFS) and a heat map (Final)."""
    try:
        board = ranking.leaderboard(ranking.parse_query(request.GET))
        breakdown = ranking.category_breakdown(board, request.GET.get("axis") or "interaction_complexity")
    except ranking.QueryError as exc:
        return _json_error(exc)
    key = f"lb:v{ranking.CACHE_FORMAT}:{board.generation}:chart-categories:{board.query.key()}:{breakdown.axis}"
    data = cache.get(key)
    if data is None:
        data = {
            "axis": breakdown.axis, "labels": breakdown.labels,
            "means": {label: {k: charts.pct(v) if k != "entries" else v for k, v in values.items()}
                      for label, values in breakdown.means.items()},
            "ifs": charts.category_bars(breakdown, "ifs"), "vfs": charts.category_bars(breakdown, "vfs"),
            "heatmap": charts.category_heatmap(breakdown, "final"),
        }
        cache.set(key, data, ranking.CACHE_SECONDS)
    return JsonResponse(data)

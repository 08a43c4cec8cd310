"""Leaderboard pages: the ranked table (the home page), per-category breakdowns, exports and
the JSON behind the charts.

Every page reads one cached :class:`leaderboard.ranking.Leaderboard` (per view and
generation), so its database work does not grow with the number of submissions; the
rendered table is cached too (:mod:`leaderboard.board_pages`).
"""

from __future__ import annotations

from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from leaderboard import access, board_pages, charts, exports, ranking
from leaderboard import cache as board_cache
from leaderboard.board_pages import link
from leaderboard.cache import CACHE_SECONDS

METRICS = ("final", "ifs", "vfs")
RELOAD_SECONDS = 20  # an empty view whose first entries are being scored reloads itself this often
CATEGORY_PAGE_SIZE = 50  # rows per per-category table: thousands of rows would cost a second to render


def _query_or_error(request):
    """(query, None) for good parameters, else (None, a 400 page saying which one is wrong)."""
    try:
        return ranking.parse_query(request.GET), None
    except ranking.QueryError as exc:
        page = render(request, "leaderboard/rankings/bad_query.html", {"message": str(exc)}, status=400)
        return None, page


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
    sort, descending = board_pages.parse_sort(request.GET)
    body = board_pages.page_body(query, sort, descending, (request.GET.get("page") or "1")[:6])
    return render(request, "leaderboard/rankings/leaderboard.html",
                  {"body": body["html"], "reload_seconds": RELOAD_SECONDS if body["waiting"] else None})


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
        "metric_label": charts.METRIC_LABELS[metric],
        "protocol_label": ranking.protocol_label(query.protocol, query.judge),
        "metric_tabs": [{"label": charts.METRIC_LABELS[m], "current": m == metric,
                         "url": link("leaderboard-categories", {**query.params(), "metric": m})} for m in METRICS],
        "board_url": link("home", query.params()),
    }
    return render(request, "leaderboard/rankings/categories.html", context)


def _category_section(query, breakdown, metric: str, window: slice) -> dict:
    rows = zip(breakdown.entries[window], breakdown.scores[window], strict=True)
    return {
        "axis": breakdown.axis, "label": ranking.AXIS_LABELS[breakdown.axis], "breakdown": breakdown,
        "rows": [{"entry": entry, "cells": _cells(scores, breakdown.labels, metric)} for entry, scores in rows],
        "means": _cells(breakdown.means, breakdown.labels, metric),
        "chart_url": link("leaderboard-chart-categories", {**query.params(), "axis": breakdown.axis}),
    }


def _numbered_links(name: str, params: dict, page) -> dict:
    """Previous / next links and one link per page around the current one (first and last always)."""
    links = {"pages": []}
    if page.has_previous():
        links["previous"] = link(name, {**params, "page": page.previous_page_number()})
    if page.has_next():
        links["next"] = link(name, {**params, "page": page.next_page_number()})
    for number in page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1):
        links["pages"].append({"number": number, "current": number == page.number,
                               "url": None if number == page.paginator.ELLIPSIS else
                               link(name, {**params, "page": number})})
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


@require_GET
def model_page(request, name: str):
    """Every public entry of one model across splits and protocol versions (404 when it has none)."""
    found = ranking.model_entries(name)
    if not found:
        raise Http404("No public scored entry of this model.")
    rows = [{"split": split, "entry": entry, "protocol_label": ranking.protocol_label(entry.protocol),
             "board": link("home", {"split": split, "protocol": ranking.protocol_slug(entry.protocol),
                                    "q": entry.model_name})}
            for split, entry in found]
    return render(request, "leaderboard/rankings/model.html", {"name": found[0][1].model_name, "rows": rows})


@require_GET
def matrix_export(request):
    """Entries x tasks of a view (``format=csv|json``): each entry's IFS, VFS and Final on every task.
    On the held-out split only staff may download it (:func:`leaderboard.access.may_see_per_task`)."""
    fmt = request.GET.get("format", "csv")
    if fmt not in exports.MATRIX_FORMATS:
        return HttpResponse(f"format={fmt!r} is not valid: use one of {', '.join(exports.MATRIX_FORMATS)}",
                            status=400, content_type="text/plain; charset=utf-8")
    try:
        query = ranking.parse_query(request.GET)
    except ranking.QueryError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    if not access.may_see_per_task(request.user, query.split):
        return HttpResponse(f"Per-task scores of the {query.split} split (held out) are not public.",
                            status=403, content_type="text/plain; charset=utf-8")
    board = ranking.leaderboard(query)
    if fmt == "json":
        response = JsonResponse(exports.matrix(board))
    else:
        response = HttpResponse(exports.matrix_csv(board), content_type="text/csv; charset=utf-8")
    filename = f"iwr-bench-{query.split}-{ranking.protocol_slug(query.protocol)}-tasks".replace(" ", "-")
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
    key = board_cache.key("chart-categories", board.query.key(), breakdown.axis, generation=board.generation)
    data = cache.get(key)
    if data is None:
        data = {
            "axis": breakdown.axis, "labels": breakdown.labels,
            "means": {label: {k: charts.pct(v) if k != "entries" else v for k, v in values.items()}
                      for label, values in breakdown.means.items()},
            "ifs": charts.category_bars(breakdown, "ifs"), "vfs": charts.category_bars(breakdown, "vfs"),
            "heatmap": charts.category_heatmap(breakdown, "final"),
        }
        cache.set(key, data, CACHE_SECONDS)
    return JsonResponse(data)

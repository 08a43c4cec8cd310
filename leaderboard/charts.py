"""Plotly figures as plain JSON (``{"data": [...], "layout": {...}}``) for the chart endpoints.

Figures are built as dictionaries rather than with ``plotly.graph_objects``: the browser's
Plotly (served from static files) draws them, and the server stays fast. Scores are shown
in percent with two decimals, like the tables.
"""

from __future__ import annotations

import re
from collections import Counter

from leaderboard.ranking import AXIS_LABELS, CategoryBreakdown, Entry, Leaderboard

PALETTE = ("#1d4ed8", "#059669", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#4b5563",
           "#ea580c")
MEAN_COLOUR = "#9ca3af"
# Baselines are yardsticks, not models: light grey bars hatched in dark grey on every chart.
BASELINE_EDGE = "#4b5563"
BASELINE_STYLES = (("#e5e7eb", "/"), ("#f3f4f6", "x"), ("#f9fafb", "."))  # (fill, hatch) per baseline
FONT = {"family": 'system-ui, -apple-system, "Segoe UI", "Liberation Sans", "DejaVu Sans", sans-serif',
        "size": 13, "color": "#111827"}
METRIC_LABELS = {"final": "Final", "ifs": "IFS", "vfs": "VFS"}
SHORT_LABEL = 40  # characters of a model name on an axis or in a legend; hover text keeps the whole name
CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def pct(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 2)


def layout(**extra) -> dict:
    base = {
        "font": FONT, "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
        "margin": {"l": 56, "r": 16, "t": 36, "b": 48},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "font": {"size": 12}},
        "hoverlabel": {"font": {"family": FONT["family"]}},
    }
    return {**base, **extra}


def figure(data: list[dict], **layout_extra) -> dict:
    return {"data": data, "layout": layout(**layout_extra), "config": CONFIG}


def entry_labels(entries: list[Entry]) -> list[str]:
    """Axis labels for entries, made unique (two researchers may name their models alike)."""
    counts = Counter(entry.model_name for entry in entries)
    labels = []
    for entry in entries:
        label = entry.model_name
        if counts[label] > 1:
            label = f"{label} ({entry.organisation or 'entry'} #{entry.evaluation_id})"
        labels.append(label + (" \u2013 baseline" if entry.is_baseline else ""))
    return labels


def short_labels(entries: list[Entry], labels: list[str]) -> list[str]:
    """Labels for axes and legends: long names would squeeze the plot to a sliver. A baseline drops its
    parenthesis ("Scripts-stripped snapshot – baseline"), anything still long is cut with an ellipsis."""
    shown = []
    for entry, label in zip(entries, labels, strict=True):
        if len(label) > SHORT_LABEL and entry.is_baseline:
            label = re.sub(r"\s*\([^)]*\)", "", label)
        shown.append(label if len(label) <= SHORT_LABEL else label[:SHORT_LABEL - 1].rstrip() + "\u2026")
    return shown


def entry_axis(entries: list[Entry], labels: list[str]) -> dict:
    """A category axis of entries, ticks written with their short labels."""
    return {"tickvals": labels, "ticktext": short_labels(entries, labels)}


def score_chart(board: Leaderboard, limit: int = 25) -> dict:
    """Final score of the best ``limit`` ranked entries (and the baselines), with 95 % intervals."""
    shown = [entry for entry in board.entries if entry.is_baseline or (entry.rank or 0) <= limit]
    values = [pct(entry.final) for entry in shown]
    labels = entry_labels(shown)
    trace = {
        "type": "bar", "orientation": "h", "name": "Final",
        "x": values, "y": labels,
        "marker": {"color": [BASELINE_STYLES[0][0] if e.is_baseline else PALETTE[0] for e in shown],
                   "line": {"color": [BASELINE_EDGE if e.is_baseline else PALETTE[0] for e in shown], "width": 1},
                   "pattern": {"shape": [BASELINE_STYLES[0][1] if e.is_baseline else "" for e in shown],
                               "fgcolor": BASELINE_EDGE, "size": 6, "solidity": 0.25}},
        "hovertemplate": "%{y}: %{x:.2f}<extra></extra>",
    }
    if any(entry.final_ci for entry in shown):
        pairs = list(zip(shown, values, strict=True))
        trace["error_x"] = {
            "type": "data", "symmetric": False, "color": "#374151", "thickness": 1.2, "width": 3,
            "array": [round(pct(e.final_ci[1]) - v, 2) if e.final_ci else 0 for e, v in pairs],
            "arrayminus": [round(v - pct(e.final_ci[0]), 2) if e.final_ci else 0 for e, v in pairs],
        }
    height = max(220, 28 * len(shown) + 80)
    return figure([trace], height=height, showlegend=False, margin={"l": 200, "r": 24, "t": 16, "b": 44},
                  xaxis={"title": {"text": "Final (%)"}, "range": [0, 100], "gridcolor": "#eef0f3"},
                  yaxis={"autorange": "reversed", "automargin": True, **entry_axis(shown, labels)})


def category_bars(breakdown: CategoryBreakdown, metric: str, limit: int = 6) -> dict:
    """Grouped bars per category: the mean of all ranked entries, the best ``limit`` entries, then each
    baseline (hatched grey, so yardsticks never pass for models). A board holding only its baselines
    (a site's first start) thus still draws them. Traces without any value are left out."""
    labels = breakdown.labels
    data = [{
        "type": "bar", "name": "All ranked models (mean)", "x": labels,
        "y": [pct(breakdown.means.get(label, {}).get(metric)) for label in labels],
        "marker": {"color": MEAN_COLOUR}, "hovertemplate": "%{x}: %{y:.2f}<extra>mean</extra>",
    }]
    pairs = list(zip(breakdown.entries, breakdown.scores, strict=True))
    top = [(entry, scores) for entry, scores in pairs if entry.rank is not None][:limit]
    baselines = [(entry, scores) for entry, scores in pairs if entry.is_baseline]
    shown = [entry for entry, _ in top + baselines]
    names = entry_labels(shown)
    for index, ((entry, scores), name, short) in enumerate(zip(top + baselines, names, short_labels(shown, names),
                                                                strict=True)):
        values = [pct(scores.get(label, {}).get(metric)) for label in labels]
        if entry.is_baseline:
            marker = baseline_marker(index - len(top))
        else:
            marker = {"color": PALETTE[index % len(PALETTE)]}
        data.append({
            "type": "bar", "name": short, "x": labels, "y": values, "marker": marker,
            "hovertemplate": "%{x}: %{y:.2f}<extra>" + name.replace("<", "&lt;") + "</extra>",
        })
    data = [trace for trace in data if any(value is not None for value in trace["y"])]
    # The legend sits above the plot, often one entry a line: grow with it so the bars keep their room.
    return figure(data, barmode="group", height=280 + 20 * len(data),
                  xaxis={"title": {"text": AXIS_LABELS[breakdown.axis]}, "type": "category"},
                  yaxis={"title": {"text": f"{METRIC_LABELS[metric]} (%)"}, "range": [0, 100],
                         "gridcolor": "#eef0f3"})


def baseline_marker(index: int) -> dict:
    """Grey bars hatched differently per baseline: told apart from each other and from any model."""
    fill, shape = BASELINE_STYLES[index % len(BASELINE_STYLES)]
    return {"color": fill, "line": {"color": BASELINE_EDGE, "width": 1},
            "pattern": {"shape": shape, "fgcolor": BASELINE_EDGE, "size": 6, "solidity": 0.25}}


def category_heatmap(breakdown: CategoryBreakdown, metric: str, limit: int = 25) -> dict:
    """Entries (rows, best first) by categories (columns), coloured by the metric."""
    rows = list(zip(breakdown.entries, breakdown.scores, strict=True))[:limit]
    entries = [entry for entry, _ in rows]
    names = entry_labels(entries)
    z = [[pct(scores.get(label, {}).get(metric)) for label in breakdown.labels] for _, scores in rows]
    trace = {
        "type": "heatmap", "x": breakdown.labels, "y": names, "z": z, "zmin": 0, "zmax": 100,
        "colorscale": [[0, "#f8fafc"], [0.5, "#93c5fd"], [1, "#1e3a8a"]],
        "colorbar": {"title": {"text": "%"}, "thickness": 12},
        "hovertemplate": "%{y}<br>%{x}: %{z:.2f}<extra></extra>", "xgap": 2, "ygap": 2,
        "texttemplate": "%{z:.0f}" if len(breakdown.labels) <= 12 else "",
    }
    height = max(240, 26 * len(rows) + 110)
    return figure([trace], height=height, margin={"l": 200, "r": 16, "t": 16, "b": 64},
                  xaxis={"type": "category", "title": {"text": AXIS_LABELS[breakdown.axis]}},
                  yaxis={"autorange": "reversed", "type": "category", "automargin": True,
                         **entry_axis(entries, names)})


def evaluation_bars(per_axis: dict[str, dict[str, float]], axis: str) -> dict:
    """One evaluation's IFS, VFS and Final per category of ``axis`` (grouped bars)."""
    from leaderboard.ranking import natural_key

    labels = sorted(per_axis, key=natural_key)
    data = []
    for index, metric in enumerate(("ifs", "vfs", "final")):
        data.append({
            "type": "bar", "name": METRIC_LABELS[metric], "x": labels,
            "y": [pct(per_axis[label].get(metric)) for label in labels],
            "marker": {"color": PALETTE[index]},
            "customdata": [per_axis[label].get("n") for label in labels],
            "hovertemplate": "%{x}: %{y:.2f} (%{customdata} tasks)<extra>" + METRIC_LABELS[metric] + "</extra>",
        })
    return figure(data, barmode="group", height=320,
                  xaxis={"title": {"text": AXIS_LABELS.get(axis, axis)}, "type": "category"},
                  yaxis={"title": {"text": "Score (%)"}, "range": [0, 100], "gridcolor": "#eef0f3"})

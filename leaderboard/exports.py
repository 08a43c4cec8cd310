"""Exports of a leaderboard view: CSV, JSON and a LaTeX table (booktabs) ready for a paper.

CSV and LaTeX give scores in percentage points with two decimals, as the IWR-Bench paper
prints them; JSON is the API's document: fractions in [0, 1] at full precision. Every
export names its split, protocol version, selection rule and confidence method, so a
table copied out of context still says what it measures.
"""

from __future__ import annotations

import csv
import io
import json

from django.utils import timezone

from leaderboard.models import TaskResult
from leaderboard.ranking import CONFIDENCE, SCORE_FIELDS, Entry, Leaderboard, percent, protocol_label
from leaderboard.tasksets import natural_key

CSV_COLUMNS = (
    "rank", "rank_best", "rank_worst", "tied_with_previous", "model", "organisation", "model_size", "kind",
    "open_weights", "verified", "reported_in_paper", "baseline",
    *(column for name in SCORE_FIELDS for column in (name, f"{name}_ci_low", f"{name}_ci_high")),
    "n_tasks", "date", "protocol", "evaluator_version", "evaluation_id",
)
# A spreadsheet runs a cell starting with one of these as a formula: researchers choose model names.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
    "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def method(board: Leaderboard) -> dict:
    return {
        "confidence_level": CONFIDENCE,
        "interval_method": "percentile bootstrap over tasks (resampling tasks with replacement)",
        "ci_resamples": board.ci_resamples,
        "rank_range_method": "paired bootstrap over tasks; 2.5th and 97.5th percentile of each entry's rank",
        "rank_resamples": board.rank_resamples,
        "selection": board.query.selection,
    }


PER_TASK_FIELDS = ("ifs", "vfs", "final")


def per_task_scores(entries) -> dict[int, list[dict]]:
    """Each evaluated entry's stored per-task scores (``task``, IFS, VFS, Final), tasks in natural
    order, by evaluation id: one query for all of them. Entries reported in the paper have none."""
    ids = [entry.evaluation_id for entry in entries if not entry.is_paper]
    found: dict[int, list[dict]] = {pk: [] for pk in ids}
    rows = TaskResult.objects.filter(evaluation_id__in=ids).values_list("evaluation_id", "task__key", *PER_TASK_FIELDS)
    for evaluation_id, key, *values in rows:
        found[evaluation_id].append({"task": key, **dict(zip(PER_TASK_FIELDS, values, strict=True))})
    for scores in found.values():
        scores.sort(key=lambda row: natural_key(row["task"]))
    return found


def document(board: Leaderboard, start: int = 0, stop: int | None = None, per_task: bool = False) -> dict:
    """The JSON document of a view (the JSON export; the API's pages hold entries[start:stop]).

    ``per_task`` adds ``tasks`` to every entry (null for the paper's reported rows); whether the
    reader may see them is the caller's rule (:func:`leaderboard.access.may_see_per_task`)."""
    query = board.query
    shown = board.entries[start:stop]
    rows = [entry.as_dict() for entry in shown]
    if per_task:
        scores = per_task_scores(shown)
        for entry, row in zip(shown, rows, strict=True):
            row["tasks"] = scores.get(entry.evaluation_id)
    return {
        "split": query.split,
        "protocol": query.protocol,
        "judge": query.judge,  # iwr-official: "JUDGE+GROUNDING" model ids; "" for protocols without a judge
        "filters": {"weights": query.weights, "verified": query.verified, "source": query.source},
        "selection": query.selection,
        "generation": board.generation,
        "scores": "fractions in [0, 1]",
        "method": method(board),
        "count": len(board.entries),
        "entries": rows,
        "flagged": [{"evaluation_id": f.evaluation_id, "model_name": f.model_name, "organisation": f.organisation,
                     "reason": f.reason} for f in board.flagged],
    }


def to_json(board: Leaderboard) -> str:
    return json.dumps(document(board), indent=1, sort_keys=False)


def pct(value: float | None) -> str:
    """A score in percent for a table cell (empty where there is none)."""
    return percent(value, missing="")


def _interval(ci: tuple[float, float] | None, side: int) -> str:
    return pct(ci[side]) if ci else ""


def _cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_START) else text


def _scores_with_intervals(entry: Entry) -> list[str]:
    """Each score in percent followed by its interval's ends (empty where there is none)."""
    cells = []
    for name in SCORE_FIELDS:
        ci = getattr(entry, f"{name}_ci")
        cells += [pct(getattr(entry, name)), _interval(ci, 0), _interval(ci, 1)]
    return cells


def csv_row(entry: Entry) -> list[str]:
    best, worst = entry.rank_range or ("", "")
    return [
        "" if entry.rank is None else str(entry.rank), str(best), str(worst), str(int(entry.tied_with_previous)),
        _cell(entry.model_name), _cell(entry.organisation), _cell(entry.model_size), entry.kind,
        str(int(entry.open_weights)), str(int(entry.verified)), str(int(entry.is_paper)), str(int(entry.is_baseline)),
        *_scores_with_intervals(entry), str(entry.n_tasks),
        entry.date.date().isoformat() if entry.date else "", entry.protocol, entry.evaluator_version,
        str(entry.evaluation_id),
    ]


def to_csv(board: Leaderboard) -> str:
    """One header line, then one line per entry in rank order (scores in percent)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for entry in board.entries:
        writer.writerow(csv_row(entry))
    return out.getvalue()


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(char, char) for char in text)


def _latex_score(value: float | None, ci: tuple[float, float] | None, with_ci: bool) -> str:
    if value is None:
        return "--"
    if not with_ci:
        return pct(value)
    interval = rf" {{\scriptsize [{pct(ci[0])}, {pct(ci[1])}]}}" if ci else ""
    return pct(value) + interval


def latex_row(entry: Entry, with_ci: bool) -> str:
    rank = "--" if entry.rank is None else str(entry.rank)
    if entry.rank_range and entry.rank_range[0] != entry.rank_range[1]:
        rank += rf" {{\scriptsize ({entry.rank_range[0]}--{entry.rank_range[1]})}}"
    name = latex_escape(entry.model_name)
    if entry.is_baseline:
        name = rf"\textit{{{name} (baseline)}}"
    scores = [_latex_score(getattr(entry, name), getattr(entry, f"{name}_ci"), with_ci) for name in SCORE_FIELDS]
    cells = [rank, name, latex_escape(entry.organisation), *scores]
    return " & ".join(cells) + r" \\"


def to_latex(board: Leaderboard) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``): rank (and rank range), model, organisation,
    Final, IFS, VFS, Low- and High-level in percent, each with its 95 % interval when the view has them."""
    query, with_ci = board.query, board.has_intervals
    caption = (f"IWR-Bench leaderboard, {latex_escape(query.split)} split, protocol "
               f"{latex_escape(protocol_label(query.protocol, query.judge))}. Scores in percent")
    if with_ci:
        caption += (f"; brackets: {int(CONFIDENCE * 100)}\\% percentile-bootstrap intervals over tasks "
                    f"({board.ci_resamples} resamples); rank ranges from {board.rank_resamples} paired resamples")
    lines = [
        f"% IWR-Bench leaderboard exported {timezone.now().date().isoformat()}; needs \\usepackage{{booktabs}}",
        r"\begin{table}[t]", r"\centering", r"\small",
        r"\begin{tabular}{rllrrrrr}", r"\toprule",
        r"Rank & Model & Organisation & Final & IFS & VFS & Low-level & High-level \\", r"\midrule",
        *(latex_row(entry, with_ci) for entry in board.entries),
        r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}.}}", r"\end{table}", "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the entries x tasks matrix

MATRIX_FORMATS = ("csv", "json")


def matrix(board: Leaderboard) -> dict:
    """Entries x tasks: every evaluated entry of the view (rank order) with its IFS, VFS and Final on
    each task of the view (fractions; null where the entry has no result for that task)."""
    evaluated = [entry for entry in board.entries if not entry.is_paper]
    scores = per_task_scores(evaluated)
    tasks = sorted({row["task"] for rows in scores.values() for row in rows}, key=natural_key)
    entries = []
    for entry in evaluated:
        by_task = {row["task"]: row for row in scores[entry.evaluation_id]}
        entries.append({
            "rank": entry.rank, "evaluation_id": entry.evaluation_id, "model_name": entry.model_name,
            "organisation": entry.organisation, "baseline": entry.is_baseline,
            **{name: [by_task[key][name] if key in by_task else None for key in tasks] for name in PER_TASK_FIELDS},
        })
    query = board.query
    return {"split": query.split, "protocol": query.protocol, "selection": query.selection,
            "generation": board.generation, "scores": "fractions in [0, 1]", "tasks": tasks, "entries": entries}


def matrix_csv(board: Leaderboard) -> str:
    """One line per entry and score (final, ifs, vfs), one column per task; fractions in [0, 1]."""
    data = matrix(board)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rank", "evaluation_id", "model", "organisation", "score", *data["tasks"]])
    for row in data["entries"]:
        for name in ("final", "ifs", "vfs"):
            cells = ["" if value is None else f"{value:.6g}" for value in row[name]]
            writer.writerow(["" if row["rank"] is None else row["rank"], row["evaluation_id"],
                             _cell(row["model_name"]), _cell(row["organisation"]), name, *cells])
    return out.getvalue()


FORMATS = {
    "csv": (to_csv, "text/csv; charset=utf-8"),
    "json": (to_json, "application/json"),
    "tex": (to_latex, "application/x-tex; charset=utf-8"),
}

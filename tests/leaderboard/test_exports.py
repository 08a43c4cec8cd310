"""CSV, JSON and LaTeX exports of a leaderboard view parse back to the numbers on the board."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from leaderboard import exports, ranking
from leaderboard.cache import bump_generation
from leaderboard.models import Submission
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture
def board():
    """Three ranked entries with intervals (two tied), a baseline, and awkward names."""
    tasks = make_tasks(5)
    make_entry(make_user(), model_name="Alpha_7B & co", organisation="Lab #1 {x}", tasks=tasks,
               finals=[0.9, 0.8, 0.95, 0.85, 0.9], open_weights=True, verified=True)
    make_entry(make_user(), model_name="=HYPERLINK(\"x\")", organisation="+evil", tasks=tasks,
               finals=[0.5, 0.1, 0.4, 0.2, 0.6])
    make_entry(make_user(), model_name="Gamma", tasks=tasks, finals=[0.1, 0.5, 0.2, 0.4, 0.3])
    make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page (lower bound)", final=0.02)
    bump_generation()
    return ranking.leaderboard(ranking.parse_query({}))


def pct(value):
    return round(100 * value, 2)


def test_csv_parses_back_to_the_same_numbers(board):
    """Every CSV row holds the entry's rank, range and scores (percent, two decimals) in board order."""
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(board))))
    assert [row["evaluation_id"] for row in rows] == [str(e.evaluation_id) for e in board.entries]
    for row, entry in zip(rows, board.entries, strict=True):
        assert row["rank"] == ("" if entry.rank is None else str(entry.rank))
        for name in ("final", "ifs", "vfs", "low_level", "high_level"):
            assert float(row[name]) == pytest.approx(pct(getattr(entry, name)), abs=0.005)
            interval = getattr(entry, f"{name}_ci")
            if interval:
                assert float(row[f"{name}_ci_low"]) == pytest.approx(pct(interval[0]), abs=0.005)
                assert float(row[f"{name}_ci_high"]) == pytest.approx(pct(interval[1]), abs=0.005)
            else:
                assert row[f"{name}_ci_low"] == row[f"{name}_ci_high"] == ""
        if entry.final_ci:
            assert (int(row["rank_best"]), int(row["rank_worst"])) == entry.rank_range
        assert row["baseline"] == str(int(entry.is_baseline))
    assert rows[0]["model"] == "Alpha_7B & co" and rows[0]["open_weights"] == "1" and rows[0]["verified"] == "1"
    assert rows[0]["low_level_ci_low"] and rows[0]["high_level_ci_high"]  # every score's interval, not only Final's


def test_csv_cells_cannot_run_as_spreadsheet_formulas(board):
    """Text starting with = + - @ is prefixed with a quote so spreadsheets show it as text."""
    rows = list(csv.DictReader(io.StringIO(exports.to_csv(board))))
    hostile = next(row for row in rows if "HYPERLINK" in row["model"])
    assert hostile["model"] == "'=HYPERLINK(\"x\")"
    assert hostile["organisation"] == "'+evil"


def test_json_parses_back_to_the_same_numbers(board):
    """The JSON export carries full-precision fractions, intervals, ranges and the method."""
    document = json.loads(exports.to_json(board))
    assert document["split"] == "test" and document["protocol"] == "iwr-det-17"
    assert document["method"]["ci_resamples"] == ranking.CI_RESAMPLES
    assert document["method"]["rank_resamples"] == ranking.RANK_RESAMPLES
    for item, entry in zip(document["entries"], board.entries, strict=True):
        assert item["final"] == entry.final and item["ifs"] == entry.ifs
        for name in ranking.INTERVAL_FIELDS:
            assert item[name] == (list(getattr(entry, name)) if getattr(entry, name) else None)
        assert item["rank_range"] == (list(entry.rank_range) if entry.rank_range else None)
        assert item["baseline"] == entry.is_baseline
    assert document["entries"][0]["low_level_ci"] is not None


LATEX_ROW = re.compile(r"^(?P<rank>--|\d+)(?: \{\\scriptsize \((?P<best>\d+)--(?P<worst>\d+)\)\})? & (?P<model>.*?) & "
                       r"(?P<org>.*?) & (?P<final>[\d.]+)(?: \{\\scriptsize \[(?P<lo>[\d.]+), (?P<hi>[\d.]+)\]\})? & "
                       r"(?P<ifs>[\d.]+).*? & (?P<vfs>[\d.]+).*? & (?P<low>[\d.]+).*? & (?P<high>[\d.]+)"
                       r"(?: \{\\scriptsize \[(?P<high_lo>[\d.]+), (?P<high_hi>[\d.]+)\]\})? \\\\$")


def test_latex_is_a_booktabs_table_that_parses_back(board):
    """The LaTeX table has booktabs rules, escaped names and the same numbers, intervals and ranges."""
    text = exports.to_latex(board)
    assert "\\toprule" in text and "\\midrule" in text and "\\bottomrule" in text and "booktabs" in text
    body = text.split("\\midrule\n", 1)[1].split("\n\\bottomrule", 1)[0].splitlines()
    assert len(body) == len(board.entries)
    for line, entry in zip(body, board.entries, strict=True):
        match = LATEX_ROW.match(line)
        assert match, line
        assert match["rank"] == ("--" if entry.rank is None else str(entry.rank))
        assert float(match["final"]) == pytest.approx(pct(entry.final), abs=0.005)
        assert float(match["ifs"]) == pytest.approx(pct(entry.ifs), abs=0.005)
        assert float(match["high"]) == pytest.approx(pct(entry.high_level), abs=0.005)
        if entry.final_ci:
            assert float(match["lo"]) == pytest.approx(pct(entry.final_ci[0]), abs=0.005)
        if entry.high_level_ci:
            assert float(match["high_hi"]) == pytest.approx(pct(entry.high_level_ci[1]), abs=0.005)
        else:
            assert match["high_hi"] is None
        if entry.rank_range and entry.rank_range[0] != entry.rank_range[1]:
            assert (int(match["best"]), int(match["worst"])) == entry.rank_range
    assert "Alpha\\_7B \\& co" in text and "Lab \\#1 \\{x\\}" in text
    assert "\\textit{Empty page (lower bound) (baseline)}" in text


def test_the_export_view_serves_each_format_as_a_download(client, board):
    """/leaderboard/export/ answers CSV, JSON and LaTeX for the view in the URL; unknown formats get 400."""
    for fmt, content_type in (("csv", "text/csv"), ("json", "application/json"), ("tex", "application/x-tex")):
        response = client.get("/leaderboard/export/", {"format": fmt, "split": "test"})
        assert response.status_code == 200
        assert response["Content-Type"].startswith(content_type)
        assert response["Content-Disposition"] == f'attachment; filename="iwr-bench-test-iwr-det-17.{fmt}"'
    assert client.get("/leaderboard/export/", {"format": "xlsx"}).status_code == 400
    bad = client.get("/leaderboard/export/", {"format": "csv", "split": "train"})
    assert bad.status_code == 400 and b"split='train'" in bad.content


def test_exports_follow_the_filters_of_the_view(client, board):
    """An export of a filtered view holds only that view's rows."""
    response = client.get("/leaderboard/export/", {"format": "csv", "weights": "open"})
    models = [row["model"] for row in csv.DictReader(io.StringIO(response.content.decode()))]
    assert models == ["Alpha_7B & co", "Empty page (lower bound)"]

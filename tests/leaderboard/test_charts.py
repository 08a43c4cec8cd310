"""Chart JSON: Plotly figures whose numbers are the board's, served by small endpoints."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders

from leaderboard import charts, ranking
from leaderboard.cache import bump_generation
from leaderboard.models import Submission
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

SUMMARY_A = {"by_category": {"interaction_complexity": {"L1": {"ifs": 0.5, "vfs": 0.7, "final": 0.56, "n": 2},
                                                        "L3": {"ifs": 0.1, "vfs": 0.4, "final": 0.19, "n": 1}},
                             "domain": {"shop": {"ifs": 0.3, "vfs": 0.6, "final": 0.39, "n": 3}}}}
SUMMARY_B = {"by_category": {"interaction_complexity": {"L1": {"ifs": 0.3, "vfs": 0.5, "final": 0.36, "n": 2}}}}


@pytest.fixture
def board():
    tasks = make_tasks(4)
    make_entry(make_user(), model_name="A", tasks=tasks, finals=[0.9, 0.7, 0.8, 0.6],
               evaluation_fields={"summary": SUMMARY_A})
    make_entry(make_user(), model_name="B", tasks=tasks, finals=[0.3, 0.5, 0.2, 0.4],
               evaluation_fields={"summary": SUMMARY_B})
    make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page", final=0.05)
    bump_generation()
    return ranking.leaderboard(ranking.parse_query({}))


def test_the_score_chart_shows_final_with_interval_error_bars(board):
    """Bars are Final in percent; error bars reach the interval's ends; baselines are labelled."""
    trace = charts.score_chart(board)["data"][0]
    assert trace["y"] == ["A", "B", "Empty page \u2013 baseline"]
    assert trace["x"] == [round(100 * e.final, 2) for e in board.entries]
    first = board.entries[0]
    assert trace["x"][0] + trace["error_x"]["array"][0] == pytest.approx(100 * first.final_ci[1], abs=0.02)
    assert trace["x"][0] - trace["error_x"]["arrayminus"][0] == pytest.approx(100 * first.final_ci[0], abs=0.02)
    assert trace["error_x"]["array"][2] == 0


def test_category_bars_group_models_per_category_after_the_overall_mean(board):
    """Grouped bars: one trace for the mean of ranked models, then one per model, x = categories."""
    breakdown = ranking.category_breakdown(board, "interaction_complexity")
    figure = charts.category_bars(breakdown, "ifs")
    assert figure["layout"]["barmode"] == "group"
    assert [trace["name"] for trace in figure["data"]] == ["All ranked models (mean)", "A", "B"]
    assert figure["data"][0]["x"] == ["L1", "L3"]
    assert figure["data"][0]["y"] == [40.0, 10.0]
    assert figure["data"][2]["y"] == [30.0, None]


def test_the_heat_map_has_one_row_per_model_and_one_column_per_category(board):
    """Heat map z = Final per model (rows, best first) and category (columns)."""
    figure = charts.category_heatmap(ranking.category_breakdown(board, "interaction_complexity"), "final")
    trace = figure["data"][0]
    assert trace["type"] == "heatmap" and trace["y"] == ["A", "B"] and trace["x"] == ["L1", "L3"]
    assert trace["z"] == [[56.0, 19.0], [36.0, None]]


def test_duplicate_model_names_get_distinct_labels(board):
    """Two researchers' models of the same name stay apart on a chart axis."""
    entries = [*board.entries[:2]]
    entries[1].model_name = entries[0].model_name
    labels = charts.entry_labels(entries)
    assert len(set(labels)) == 2


def test_the_chart_endpoints_answer_json_for_the_view(client, board):
    """Scores and per-category figures come from small JSON endpoints; bad parameters get 400 JSON."""
    scores = client.get("/leaderboard/charts/scores.json", {"split": "test"}).json()
    assert scores["scores"]["data"][0]["type"] == "bar"
    categories = client.get("/leaderboard/charts/categories.json", {"axis": "domain"}).json()
    assert categories["labels"] == ["shop"] and categories["means"]["shop"]["final"] == 39.0
    assert {"ifs", "vfs", "heatmap"} <= set(categories)
    bad = client.get("/leaderboard/charts/categories.json", {"axis": "colour"})
    assert bad.status_code == 400 and "axis='colour'" in bad.json()["detail"]


def test_an_evaluations_category_chart_has_ifs_vfs_and_final_per_label(client, board):
    """One evaluation's endpoint holds its per-category scores in percent and a grouped bar chart per axis."""
    evaluation_id = board.entries[0].evaluation_id
    data = client.get(f"/results/{evaluation_id}/categories.json").json()
    assert data["by_category"]["interaction_complexity"]["L3"] == {"ifs": 10.0, "vfs": 40.0, "final": 19.0, "n": 1}
    figure = data["interaction_complexity"]
    assert [trace["name"] for trace in figure["data"]] == ["IFS", "VFS", "Final"]
    assert figure["data"][2]["y"] == [56.0, 19.0]


def test_plotly_is_served_from_the_installed_package_not_a_cdn(client):
    """static/vendor/plotly/plotly.min.js is Plotly's own bundle, found by the static finders."""
    path = finders.find("vendor/plotly/plotly.min.js")
    assert path and "plotly/package_data" in path
    response = client.get("/static/vendor/plotly/plotly.min.js")
    assert response.status_code == 200
    assert b"plotly" in b"".join(response.streaming_content)[:2000].lower()

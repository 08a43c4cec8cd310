"""Chart JSON: Plotly figures whose numbers are the board's, served by small endpoints."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.staticfiles import finders

from leaderboard import charts, ranking
from leaderboard.cache import bump_generation
from leaderboard.models import Submission
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_tasks

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


@pytest.fixture(autouse=True)
def _every_category_shown(settings):
    """These boards are on the held-out split with categories of one or two tasks: the charts' and tables'
    mechanics are tested with every category shown (IWR_HELDOUT_MIN_CATEGORY_TASKS=1; pooling the small
    ones is test_heldout_categories.py's)."""
    settings.HELDOUT_MIN_CATEGORY_TASKS = 1

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


def test_plotly_is_the_cartesian_bundle_fetched_from_npm_not_a_cdn(client):
    """static/vendor/plotly/plotly-cartesian.min.js is the npm package's bundle (set-up fetches it), found by the
    static finders; the full bundle is gone and no page names another source for it."""
    path = finders.find("vendor/plotly/plotly-cartesian.min.js")
    assert path and Path(path).parent.name == "plotly.js-cartesian-dist-min"
    body = b"".join(client.get("/static/vendor/plotly/plotly-cartesian.min.js").streaming_content)
    assert b"plotly.js (cartesian" in body[:200] and b"heatmap" in body and b"barmode" in body
    assert len(body) < 2_500_000  # the full bundle is 4.8 MB
    assert finders.find("vendor/plotly/plotly.min.js") is None
    assert Path(path).parent.name in (ROOT / "scripts/npm-static.txt").read_text()


# --------------------------------------------------------------------------- a board of baselines only

LEVELS = {"by_category": {"interaction_complexity": {"L1": {"ifs": 1.0, "vfs": 0.9, "final": 0.97, "n": 2},
                                                     "L2": {"ifs": 0.8, "vfs": 0.9, "final": 0.83, "n": 1}}}}
BASELINES = (("Reference pages (upper bound)", 0.95, 1.0), ("Scripts-stripped snapshot", 0.3, 0.4),
             ("Empty page (lower bound)", 0.0, 0.0))


def make_baselines() -> None:
    """The three baseline rows `scripts/run.sh` leaves on a fresh site, each with per-level scores."""
    for name, final, ifs in BASELINES:
        levels = {label: {"ifs": ifs, "vfs": final, "final": final, "n": 1} for label in ("L1", "L2")}
        make_entry(None, kind=Submission.Kind.BASELINE, model_name=name, final=final,
                   evaluation_fields={"summary": {"by_category": {"interaction_complexity": levels}}})
    bump_generation()


def test_a_board_of_baselines_only_charts_each_baseline_as_its_own_hatched_trace(client):
    """With no ranked model, the category bars are the three baselines (labelled, grey and hatched), not an
    all-empty mean."""
    make_baselines()
    figure = client.get("/leaderboard/charts/categories.json", {"axis": "interaction_complexity"}).json()["ifs"]
    assert [trace["name"] for trace in figure["data"]] == [f"{name} \u2013 baseline" for name, _, _ in BASELINES]
    assert [trace["y"] for trace in figure["data"]] == [[100.0, 100.0], [40.0, 40.0], [0.0, 0.0]]
    shapes = [trace["marker"]["pattern"]["shape"] for trace in figure["data"]]
    assert len(set(shapes)) == 3 and all(trace["marker"]["color"] not in charts.PALETTE for trace in figure["data"])


def test_baselines_follow_the_ranked_models_and_their_mean(client):
    """Ranked models keep the palette after their mean; the baselines come last, hatched."""
    make_baselines()
    make_entry(make_user(), model_name="model-x", final=0.5, evaluation_fields={"summary": LEVELS})
    bump_generation()
    breakdown = ranking.category_breakdown(ranking.leaderboard(ranking.parse_query({})), "interaction_complexity")
    data = charts.category_bars(breakdown, "final")["data"]
    assert [trace["name"] for trace in data][:2] == ["All ranked models (mean)", "model-x"]
    assert data[0]["y"] == [97.0, 83.0] and data[1]["marker"]["color"] == charts.PALETTE[0]
    assert all("pattern" in trace["marker"] for trace in data[2:]) and len(data) == 5


def test_no_chart_trace_is_all_empty(client):
    """Every trace of every category figure holds at least one value: the browser would draw bare axes."""
    make_baselines()
    for axis in ranking.CATEGORY_AXES:
        document = client.get("/leaderboard/charts/categories.json", {"axis": axis}).json()
        for key in ("ifs", "vfs"):
            assert all(any(v is not None for v in trace["y"]) for trace in document[key]["data"]), (axis, key)
    empty = ranking.category_breakdown(ranking.leaderboard(ranking.parse_query({"split": "dev"})), "domain")
    assert charts.category_bars(empty, "ifs")["data"] == []


def test_long_names_get_short_axis_and_legend_labels_with_full_hover_text(board):
    """A long baseline name loses its parenthesis on axes and legends, a long model name is cut; hover keeps both."""
    snapshot = "Scripts-stripped snapshot (looks right, does nothing)"
    make_entry(None, kind=Submission.Kind.BASELINE, model_name=snapshot, final=0.4,
               evaluation_fields={"summary": SUMMARY_B})
    make_entry(make_user(), model_name="x" * 60, final=0.2, evaluation_fields={"summary": SUMMARY_B})
    bump_generation()
    shown = ranking.leaderboard(ranking.parse_query({}))
    bars = charts.category_bars(ranking.category_breakdown(shown, "interaction_complexity"), "ifs")["data"]
    assert "Scripts-stripped snapshot \u2013 baseline" in [trace["name"] for trace in bars]
    assert "x" * 39 + "\u2026" in [trace["name"] for trace in bars]
    assert any(f"<extra>{snapshot} \u2013 baseline</extra>" in trace["hovertemplate"] for trace in bars)
    scores = charts.score_chart(shown)
    axis = scores["layout"]["yaxis"]
    assert axis["tickvals"] == scores["data"][0]["y"] and f"{snapshot} \u2013 baseline" in axis["tickvals"]
    assert "Scripts-stripped snapshot \u2013 baseline" in axis["ticktext"]


@pytest.mark.browser
def test_the_browser_says_no_data_for_a_figure_whose_traces_are_all_null():
    """charts.js draws a figure with values and writes "No data for this chart yet." for one whose only
    trace is nulls (a stand-in Plotly records what it is asked to draw)."""
    from evaluator.browser import launch

    figures = {"empty": {"data": [{"type": "bar", "x": ["L1", "L2"], "y": [None, None]}], "layout": {}},
               "drawn": {"data": [{"type": "bar", "x": ["L1", "L2"], "y": [None, 40.0]}], "layout": {}}}
    page_html = ('<div class="chart" id="empty" data-chart-url="/c.json" data-chart-key="empty"></div>'
                 '<div class="chart" id="drawn" data-chart-url="/c.json" data-chart-key="drawn"></div>'
                 '<script src="/charts.js" data-plotly="/plotly.js"></script>')
    stub = "window.Plotly = {react: function (el) { el.setAttribute('data-plotted', '1'); }, purge: function () {}};"
    bodies = {"/": (page_html, "text/html"), "/c.json": (json.dumps(figures), "application/json"),
              "/plotly.js": (stub, "text/javascript"),
              "/charts.js": (Path(finders.find("js/charts.js")).read_text(), "text/javascript")}
    with pytest.MonkeyPatch.context() as patch, launch(sandbox=True) as browser:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        context = browser.new_context()
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.route("http://charts.test/**", lambda route: route.fulfill(
            body=bodies[urlsplit(route.request.url).path][0], content_type=bodies[urlsplit(route.request.url).path][1]))
        page.goto("http://charts.test/")
        page.wait_for_selector("#drawn[data-drawn]", state="attached")
        page.wait_for_function("document.querySelector('#empty').textContent.includes('No data')")
        assert page.get_attribute("#drawn", "data-plotted") == "1"
        assert page.get_attribute("#empty", "data-plotted") is None
        assert page.inner_text("#empty") == "No data for this chart yet."
        context.close()


@pytest.mark.browser
@pytest.mark.parametrize("scheme, paper, body", [("light", "#ffffff", "rgb(255, 255, 255)"),
                                                  ("dark", "#131d33", "rgb(15, 23, 42)")])
def test_the_cartesian_bundle_draws_bars_and_heat_maps_in_the_systems_colour_scheme(scheme, paper, body):
    """The served cartesian bundle draws the site's trace types; with the system set to dark, the site's
    stylesheet and the charts follow it (light figures re-coloured in the browser)."""
    from evaluator.browser import launch

    light = charts.layout(xaxis={"gridcolor": "#eef0f3"})
    figures = {"bars": {"data": [{"type": "bar", "orientation": "h", "x": [40.0], "y": ["m"],
                                  "error_x": {"type": "data", "array": [2], "color": "#374151"}}], "layout": light},
               "heat": {"data": [{"type": "heatmap", "x": ["L1"], "y": ["m"], "z": [[40.0]],
                                  "colorscale": [[0, "#f8fafc"], [1, "#1e3a8a"]]}], "layout": charts.layout()}}
    page_html = ('<link rel="stylesheet" href="/site.css"><div class="chart" id="bars" data-chart-url="/c.json" '
                 'data-chart-key="bars"></div><div class="chart" id="heat" data-chart-url="/c.json" '
                 'data-chart-key="heat"></div><script src="/charts.js" data-plotly="/plotly.js"></script>')
    plotly = Path(finders.find("vendor/plotly/plotly-cartesian.min.js")).read_text()
    bodies = {"/": (page_html, "text/html"), "/c.json": (json.dumps(figures), "application/json"),
              "/plotly.js": (plotly, "text/javascript"),
              "/site.css": (Path(finders.find("css/site.css")).read_text(), "text/css"),
              "/charts.js": (Path(finders.find("js/charts.js")).read_text(), "text/javascript")}
    with pytest.MonkeyPatch.context() as patch, launch(sandbox=True) as browser:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        context = browser.new_context(color_scheme=scheme)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.route("http://charts.test/**", lambda route: route.fulfill(
            body=bodies[urlsplit(route.request.url).path][0], content_type=bodies[urlsplit(route.request.url).path][1]))
        page.goto("http://charts.test/")
        for key in ("bars", "heat"):
            page.wait_for_selector(f"#{key}[data-drawn] .main-svg", state="attached")
            assert page.get_attribute(f"#{key}", "data-theme") == scheme
            assert page.evaluate(f"document.getElementById('{key}')._fullLayout.paper_bgcolor") == paper
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == body
        error_colour = page.evaluate("document.getElementById('bars')._fullData[0].error_x.color")
        assert (error_colour == "#374151") == (scheme == "light")
        assert page.locator("#heat .hm image, #heat .heatmaplayer image").count() >= 1
        context.close()

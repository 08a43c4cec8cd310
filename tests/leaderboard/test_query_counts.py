"""Pages and JSON endpoints cost a constant number of queries, whatever the number of entries on the
board, tasks in the split or steps in a replay (the home page and the leaderboard API have their own
tests in test_leaderboard_pages.py and test_leaderboard_api.py).

Each URL is fetched with an empty cache, so the board is built from the database every time; an
empty cache also holds no copy of the leaderboard generation, so leaderboard views read that row too
(one query, counted in their bounds). The world's boards are not stored (its entries are made
directly, not scored): views of a stored board's kind look for it first and rank it themselves,
one more query in their bounds (test_stored_board.py counts a stored board's reads).
"""

from __future__ import annotations

import pytest
from django.core.cache import cache

from leaderboard.cache import bump_generation
from leaderboard.models import Evaluation
from tests.leaderboard.base import logged_in, make_user
from tests.leaderboard.factories import (
    make_bundle_submission,
    make_entry,
    make_scored_evaluation,
    make_task,
    make_task_result,
    make_task_set,
)

pytestmark = pytest.mark.django_db
SIZES = [3, 24]  # entries on the board = tasks in the split = steps per task
SUMMARY = {"by_category": {"domain": {"games": {"ifs": 0.5, "vfs": 0.5, "final": 0.5, "n": 1}}}}


@pytest.fixture(autouse=True)
def _heldout_task_results_opened(settings):
    """The world's entries are on the test split: their per-task tables, whose cost is measured here, are
    shown when an operator opens held-out per-task results (IWR_HELDOUT_TASK_RESULTS=1; test_heldout.py
    covers the default)."""
    settings.HELDOUT_TASK_RESULTS_PUBLIC = True


def world(n: int, owner) -> dict:
    """``n`` ranked entries on ``n`` test tasks, and ``owner``'s scored submission with a bundle whose
    every task ran ``n`` steps (the last one failing with a reason)."""
    task_set = make_task_set()
    tasks = [make_task(task_set, split="test", domain=f"domain-{k % 4}") for k in range(n)]
    for index in range(n):
        make_entry(make_user(), model_name=f"model-{index}", tasks=tasks,
                   finals=[((index + k) % 10) / 10 for k in range(n)], evaluation_fields={"summary": SUMMARY})
    submission = make_bundle_submission(owner, split="test", pages={task.key: "<p>page</p>" for task in tasks})
    evaluation = make_scored_evaluation(submission, n_tasks=n)
    steps = [{"index": k, "passed": k < n - 1, "screenshot": f"step_{k}.png", "elapsed_ms": 300,
              "reason": "" if k < n - 1 else "not found"} for k in range(n)]
    for task in tasks:
        make_task_result(evaluation, task, steps=steps, steps_passed=n - 2, steps_total=n - 1)
    make_scored_evaluation(submission, is_rescore=True)  # an earlier/later evaluation listed on the page
    bump_generation()
    return {"tasks": tasks, "evaluation": evaluation, "submission": submission}


def fetch_cold(client, url: str, bound: int, django_assert_max_num_queries):
    cache.clear()
    with django_assert_max_num_queries(bound, info=url):
        response = client.get(url)
    assert response.status_code == 200, url
    return response


@pytest.mark.parametrize("n", SIZES)
def test_leaderboard_views_and_chart_data_cost_constant_queries(client, owner, n, django_assert_max_num_queries):
    """The per-category page and the chart JSON read the board in eight queries at most, cold
    (the generation row and the look for a stored board included)."""
    made = world(n, owner)
    page = fetch_cold(client, "/leaderboard/categories/", 8, django_assert_max_num_queries)
    assert page.content.decode().count("model-") >= n
    scores = fetch_cold(client, "/leaderboard/charts/scores.json", 8, django_assert_max_num_queries).json()
    assert scores["scores"]["data"]
    for axis in ("interaction_complexity", "visual_complexity", "domain"):
        fetch_cold(client, f"/leaderboard/charts/categories.json?axis={axis}", 8, django_assert_max_num_queries)
    own = fetch_cold(client, f"/results/{made['evaluation'].pk}/categories.json", 3, django_assert_max_num_queries)
    assert own.json()["by_category"]["domain"]


@pytest.mark.parametrize("n", SIZES)
def test_every_page_of_the_categories_tables_costs_the_same_queries(client, owner, n, monkeypatch,
                                                                    django_assert_max_num_queries):
    """Paging the per-category tables reads the same cached board: eight queries at most cold
    (the generation row and the look for a stored board included), whichever page."""
    from leaderboard.views import rankings

    monkeypatch.setattr(rankings, "CATEGORY_PAGE_SIZE", 2)
    world(n, owner)
    for number in (1, 2):
        page = fetch_cold(client, f"/leaderboard/categories/?page={number}", 8, django_assert_max_num_queries)
        shown = page.content.decode().count('<td><a href="/results/')  # the world's entries score domains only
        assert shown == min(2, n - 2 * (number - 1))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("reader", ["anonymous", "owner", "staff"])
def test_the_submission_page_costs_constant_queries(client, owner, staff, n, reader, django_assert_max_num_queries):
    """Summary, standing on the board, per-task table, categories, preview links, other evaluations:
    thirteen queries cold, the generation's and the look for a stored board included (two more for a
    signed-in reader's session)."""
    made = world(n, owner)
    if reader != "anonymous":
        logged_in(client, owner if reader == "owner" else staff)
    bound = 13 if reader == "anonymous" else 15
    page = fetch_cold(client, f"/submissions/{made['submission'].pk}/", bound, django_assert_max_num_queries)
    assert page.content.decode().count("/tasks/") >= n
    progress = f"/submissions/{made['submission'].pk}/progress.json"
    assert len(fetch_cold(client, progress, bound, django_assert_max_num_queries).json()["rows"]) == n
    results = fetch_cold(client, f"/results/{made['evaluation'].pk}/", bound, django_assert_max_num_queries)
    assert results.content.decode().count("Replay") >= n


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("reader", ["anonymous", "staff"])
def test_a_replay_page_costs_constant_queries(client, owner, staff, n, reader, django_assert_max_num_queries):
    """The replay of one task (every step of its timeline, its neighbours) and the comparison of two
    replays: four and six queries, plus the session's for a signed-in reader."""
    made = world(n, owner)
    if reader == "staff":
        logged_in(client, staff)
    extra = 0 if reader == "anonymous" else 2
    evaluation, key = made["evaluation"], made["tasks"][1].key
    replay = fetch_cold(client, f"/results/{evaluation.pk}/tasks/{key}/", 4 + extra, django_assert_max_num_queries)
    assert replay.content.decode().count('class="step-panel"') == n
    other = Evaluation.objects.filter(submission__model_name="model-0").get()
    fetch_cold(client, f"/compare/{evaluation.pk}/{other.pk}/", 8 + extra, django_assert_max_num_queries)
    fetch_cold(client, f"/compare/{evaluation.pk}/{other.pk}/tasks/{key}/", 6 + extra, django_assert_max_num_queries)


@pytest.mark.parametrize("n", SIZES)
def test_the_task_api_costs_one_query(client, owner, n, django_assert_max_num_queries):
    """/api/v1/tasks/ reads its page of tasks with their sets in one query (plus the count);
    /api/v1/tasks/ID/ in one."""
    made = world(n, owner)
    listing = fetch_cold(client, "/api/v1/tasks/", 2, django_assert_max_num_queries).json()
    assert listing["count"] == n and len(listing["results"]) == n
    task = made["tasks"][0]
    detail = fetch_cold(client, f"/api/v1/tasks/{task.pk}/", 1, django_assert_max_num_queries).json()
    assert detail["key"] == task.key and detail["task_set"] == task.task_set.slug

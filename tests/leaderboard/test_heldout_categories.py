"""Per-category scores of the held-out split never publish a task's score: categories of fewer than
``HELDOUT_MIN_CATEGORY_TASKS`` tasks are pooled into "other" for everyone who may not see per-task
results (pages, charts, the results download, the API, the held-out board), and overlapping categories
are pooled until no sum or difference of them isolates a task."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from evaluator.scoring import summarize
from leaderboard import heldout
from leaderboard.cache import bump_generation
from leaderboard.heldout import OTHER
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_entry, make_task, make_task_set

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]
AXES = ("interaction_complexity", "visual_complexity", "domain")
# Three L2 tasks, three L3 and one L4: the L4 task's score is the one that must not come out.
LEVELS = ["L2"] * 3 + ["L3"] * 3 + ["L4"]
FINALS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.777]
LONE = "77.70"  # the L4 task's Final as pages print it


def scored_entry(owner, split: str, public: bool):
    """A scored entry on ``split`` over the seven tasks above, with the evaluator's own summary."""
    task_set = make_task_set()
    tasks = [make_task(task_set, split=split, interaction_complexity=level) for level in LEVELS]
    by_key = {task.key: {"ifs": f, "vfs": f, "final": f, "error": None} for task, f in zip(tasks, FINALS, strict=True)}
    evaluation = make_entry(owner, tasks=tasks, finals=FINALS, split=split, public=public,
                            evaluation_fields={"summary": summarize(by_key, tasks)})
    bump_generation()
    return evaluation


def owner_views(client, evaluation) -> dict[str, str]:
    """Everything an owner reads per-category scores from, as text."""
    pk = evaluation.submission_id
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=evaluation.submission.owner).key}")
    return {
        "page": client.get(f"/submissions/{pk}/").content.decode(),
        "results": client.get(f"/results/{evaluation.pk}/").content.decode(),
        "chart": client.get(f"/results/{evaluation.pk}/categories.json").content.decode(),
        "download": client.get(f"/submissions/{pk}/results.json").content.decode(),
        "api": api.get(f"/api/v1/submissions/{pk}/results/").content.decode(),
    }


def test_small_categories_go_to_other_and_other_takes_the_next_smallest_when_it_is_too_small():
    assert heldout.pool_small({"L1": 5, "L2": 3, "L4": 1}, 3) == {"L1": "L1", "L2": OTHER, "L4": OTHER}
    assert heldout.pool_small({"L1": 5, "L2": 3, "L4": 4}, 3) == {"L1": "L1", "L2": "L2", "L4": "L4"}
    # Everything too small: one pool of all tasks (the overall score, nothing more).
    assert set(heldout.pool_small({"a": 1, "b": 1}, 3).values()) == {OTHER}


def test_pooled_means_are_weighted_by_task_counts(settings):
    settings.HELDOUT_MIN_CATEGORY_TASKS = 3
    plan = {"domain": {"shop": OTHER, "news": OTHER, "docs": "docs"}}
    categories = {"domain": {"shop": {"ifs": 0.9, "vfs": 0.9, "final": 0.9, "n": 1},
                             "news": {"ifs": 0.3, "vfs": 0.3, "final": 0.3, "n": 2},
                             "docs": {"ifs": 0.5, "vfs": 0.1, "final": 0.2, "n": 3}}}
    shown = heldout.published_categories(categories, plan)["domain"]
    assert set(shown) == {"docs", OTHER} and shown[OTHER]["n"] == 3
    assert shown[OTHER]["final"] == pytest.approx((0.9 + 2 * 0.3) / 3)
    assert shown["docs"] == {"ifs": 0.5, "vfs": 0.1, "final": 0.2, "n": 3}


def attack_matrix(memberships: dict, plan: dict) -> np.ndarray:
    """Rows: the overall score and each published category, as someone reading the pages could write them."""
    keys = sorted(memberships)
    rows = [np.ones(len(keys))]
    for axis in AXES:
        published = [plan[axis][memberships[key][axis]] for key in keys]
        rows += [np.array([p == label for p in published], float) for label in sorted(set(published))]
    return np.array(rows)


def solvable(matrix: np.ndarray, task: int) -> bool:
    """Whether some combination of the published rows equals the indicator of ``task`` (least squares)."""
    target = np.eye(matrix.shape[1])[task]
    weights, *_ = np.linalg.lstsq(matrix.T, target, rcond=None)
    return bool(np.allclose(matrix.T @ weights, target, atol=1e-8))


def test_overlapping_categories_that_isolate_a_task_are_pooled_too():
    """Each category holds two tasks or more, yet a1 + b1 - c1 = twice task 1: the plan pools until no
    task can be solved for."""
    groups = {"interaction_complexity": [{1, 2}, {3, 4, 5, 6}], "visual_complexity": [{1, 3}, {2, 4, 5, 6}],
              "domain": [{2, 3}, {1, 4, 5, 6}]}
    memberships = {str(task): {axis: f"{axis[0]}{next(i for i, g in enumerate(gs) if task in g)}"
                               for axis, gs in groups.items()} for task in range(1, 7)}
    per_axis_only = {axis: heldout.pool_small(
        {label: sum(1 for m in memberships.values() if m[axis] == label) for label in
         {m[axis] for m in memberships.values()}}, 2) for axis in AXES}
    assert solvable(attack_matrix(memberships, per_axis_only), 0)  # the attack works on size alone

    plan = heldout.publish_plan(memberships, 2)
    matrix = attack_matrix(memberships, plan)
    assert not any(solvable(matrix, task) for task in range(6))
    assert sum(len(set(mapping.values()) - {OTHER}) for mapping in plan.values()) >= 1  # not everything pooled


def test_with_three_no_pair_of_tasks_is_isolated_either():
    memberships = {str(t): {"interaction_complexity": "L1" if t < 3 else "L2",
                            "visual_complexity": "V1" if t in (0, 1, 2, 3) else "V2",
                            "domain": "x"} for t in range(8)}
    plan = heldout.publish_plan(memberships, 3)
    matrix = attack_matrix(memberships, plan)
    for i, j in itertools.combinations(range(8), 2):
        target = np.eye(8)[i] + np.eye(8)[j]
        weights, *_ = np.linalg.lstsq(matrix.T, target, rcond=None)
        assert not np.allclose(matrix.T @ weights, target, atol=1e-8), (i, j)


def test_the_owner_sees_a_one_task_category_only_pooled_into_other(client, owner):
    evaluation = scored_entry(owner, "test", public=False)
    views = owner_views(logged_in(client, owner), evaluation)
    for name, text in views.items():
        assert '"L4"' not in text and ">L4<" not in text, name
        assert LONE not in text and "0.777" not in text, name
    chart = client.get(f"/results/{evaluation.pk}/categories.json").json()["by_category"]["interaction_complexity"]
    # L4 alone is too small; "other" would hold one task, so the smaller of L2 / L3 joins it.
    assert set(chart) == {"L3", OTHER} and chart[OTHER]["n"] == 4
    assert chart[OTHER]["final"] == pytest.approx(100 * (0.1 + 0.2 + 0.3 + 0.777) / 4, abs=0.01)
    assert chart["L3"]["final"] == pytest.approx(50.0)
    download = client.get(f"/submissions/{evaluation.submission_id}/results.json").json()
    assert set(download["summary"]["by_category"]["interaction_complexity"]) == {"L3", OTHER}
    assert download["summary"]["final"] == pytest.approx(sum(FINALS) / 7)  # the aggregate stays


def test_staff_and_the_opening_setting_see_every_category(client, owner, staff, settings):
    evaluation = scored_entry(owner, "test", public=False)
    chart = logged_in(client, staff).get(f"/results/{evaluation.pk}/categories.json").json()["by_category"]
    assert chart["interaction_complexity"]["L4"]["final"] == pytest.approx(77.7)
    settings.HELDOUT_TASK_RESULTS_PUBLIC = True
    views = owner_views(logged_in(Client(), owner), evaluation)
    assert '"L4"' in views["chart"] and '"L4"' in views["api"]


def test_the_held_out_board_pools_small_categories_for_every_reader(client, owner, staff):
    scored_entry(owner, "test", public=True)
    for reader in (client, logged_in(Client(), staff)):  # one cached board for everyone
        page = reader.get("/leaderboard/categories/?split=test").content.decode()
        assert ">L4<" not in page and LONE not in page and ">other<" in page
        chart = reader.get("/leaderboard/charts/categories.json?split=test&axis=interaction_complexity").json()
        assert chart["labels"] == ["L3", OTHER] and "L4" not in str(chart)


def test_the_dev_board_and_dev_submissions_keep_every_category(client, owner):
    evaluation = scored_entry(owner, "dev", public=True)
    chart = client.get("/leaderboard/charts/categories.json?split=dev&axis=interaction_complexity").json()
    assert chart["labels"] == ["L2", "L3", "L4"]
    own = logged_in(client, owner).get(f"/results/{evaluation.pk}/categories.json").json()
    assert own["by_category"]["interaction_complexity"]["L4"]["final"] == pytest.approx(77.7)


def test_an_evaluation_of_an_older_task_set_is_pooled_by_its_own_counts(settings):
    """A summary whose categories are smaller than the current tasks' (tasks withdrawn since) is pooled again."""
    settings.HELDOUT_MIN_CATEGORY_TASKS = 3
    plan = {"domain": {"shop": "shop", "docs": "docs", "news": "news"}}
    def row(score, n):
        return {"ifs": score, "vfs": score, "final": score, "n": n}

    old = {"domain": {"shop": row(1, 1), "docs": row(0, 3), "news": row(0.5, 3), "gone": row(0, 1)}}
    shown = heldout.published_categories(old, plan)["domain"]
    assert all(values["n"] >= 3 for values in shown.values()) and "shop" not in shown and "gone" not in shown


def test_the_submit_about_and_categories_pages_state_the_pooling_rule(client, owner, settings):
    settings.HELDOUT_MIN_CATEGORY_TASKS = 4
    for url in ("/submit/", "/about/", "/leaderboard/categories/?split=test"):
        text = " ".join(logged_in(client, owner).get(url).content.decode().split())
        assert "categories of fewer than 4" in text and "pooled into &ldquo;other&rdquo;" in text, url
    dev = " ".join(client.get("/leaderboard/categories/?split=dev").content.decode().split())
    assert "pooled into" not in dev

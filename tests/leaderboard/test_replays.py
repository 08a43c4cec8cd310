"""Results pages, per-task replays, their files and comparisons: who sees what, and no held-out ground truth."""

from __future__ import annotations

import json
import shutil

import pytest
from django.core.cache import cache
from PIL import Image

from leaderboard.views import replays
from tests.leaderboard import secrecy
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_entry

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # imported_sample, tiny_video


@pytest.fixture(autouse=True)
def _heldout_task_results_opened(settings):
    """These tests follow what readers see of test-split tasks when an operator opens their per-task
    results (IWR_HELDOUT_TASK_RESULTS=1): still never ground truth. The default, per-task results of
    the held-out split for staff only, is tested in test_heldout.py."""
    settings.HELDOUT_TASK_RESULTS_PUBLIC = True


def secret_marker(split: str, task_id, what: str, n: int = 0) -> str:
    """The marker tests.leaderboard.datasets writes into each secret field of its tasks."""
    return f"SECRET-{split.upper()}-{task_id}-{what}-{n}"


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache (ids are reused between tests)."""
    cache.clear()


def steps_for(split: str, key: str, passed_first: bool) -> list[dict]:
    """Step records like the evaluator's, quoting the task's secrets where a careless page would leak them."""
    description = secret_marker(split, key, "DESCRIPTION", 1)
    return [
        {"index": 0, "type": "Load", "passed": True, "executed": True, "reason": "loaded", "screenshot": "step_0.png",
         "flagged": True, "elapsed_ms": 1200, "visual": {"ocr": 0.9, "global": 0.8, "low_level": 0.85,
                                                         "high_level": 0.7}},
        {"index": 1, "type": "Click", "passed": passed_first, "executed": True, "screenshot": "step_1.png",
         "elapsed_ms": 800, "reason": "clicked" if passed_first else f"not found: {description}",
         "target": {"tag": "button", "text": f"chosen for {description}", "score": 0.81},
         "runner_up": {"tag": "a", "text": "Other", "score": 0.4}, "ambiguous": False,
         "assertion": {"passed": passed_first, "evidence": {"phrases": secret_marker(split, key, "ASSERTION", 1),
                                                            "changed": True}}},
    ]


@pytest.fixture
def scored(imported_sample, settings, tmp_path, tiny_video, owner):
    """A public and a private evaluation of the owner on both splits, with artifacts on disk."""
    settings.ARTIFACTS_ROOT = tmp_path / "artifacts"
    tasks = {task.key: task for task in imported_sample}
    made = {}
    for name, split, keys, public in (("public-test", "test", ["201", "202"], True),
                                      ("other-test", "test", ["201", "202"], True),
                                      ("private-test", "test", ["201", "202"], False),
                                      ("public-dev", "dev", ["101", "dev-b"], True)):
        evaluation = make_entry(owner, model_name=name, split=split, public=public, tasks=[tasks[k] for k in keys],
                                finals=[0.6, 0.2] if name != "other-test" else [0.3, 0.5])
        for index, result in enumerate(evaluation.task_results.select_related("task")):
            result.steps = steps_for(split, result.task.key, passed_first=index == 0)
            result.steps_passed = 1 if index == 0 else 0
            result.steps_total = result.task.n_actions
            result.save()
            write_artifacts(settings.ARTIFACTS_ROOT / str(evaluation.pk) / "tasks" / result.task.key, tiny_video,
                            result.steps)
        evaluation.artifacts_dir = str(evaluation.pk)
        evaluation.save()
        made[name] = evaluation
    return made


def write_artifacts(folder, video, steps) -> None:
    folder.mkdir(parents=True)
    shutil.copy(video, folder / "replay.mp4")
    for k in range(2):
        Image.new("RGB", (32, 24), (10 * k, 120, 200)).save(folder / f"step_{k}.png")
    (folder / "result.json").write_text(json.dumps({"steps": steps}))


def body(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace")


# --------------------------------------------------------------------------- access


def test_private_results_are_visible_to_owner_and_staff_only(client, scored, owner, outsider, staff):
    """Every URL of a private evaluation is a 404 for others; the owner and staff see it."""
    evaluation = scored["private-test"]
    urls = [f"/results/{evaluation.pk}/", f"/results/{evaluation.pk}/categories.json",
            f"/results/{evaluation.pk}/tasks/201/", f"/results/{evaluation.pk}/tasks/201/files/replay.mp4",
            f"/compare/{evaluation.pk}/{scored['public-test'].pk}/"]
    for url in urls:
        assert client.get(url).status_code == 404, url
    logged_in(client, outsider)
    assert all(client.get(url).status_code == 404 for url in urls)
    for user in (owner, staff):
        logged_in(client, user)
        assert all(client.get(url).status_code == 200 for url in urls)


def test_the_results_page_shows_scores_intervals_categories_and_tasks(client, scored):
    """Summary with intervals and rank, per-category tables, and a per-task table linking each replay."""
    evaluation = scored["public-test"]
    page = body(client.get(f"/results/{evaluation.pk}/"))
    assert "public-test" in page and "95% CI" in page and "#1" in page
    assert "Scores by category" in page and "Interaction level" in page
    assert f"/results/{evaluation.pk}/tasks/201/" in page and "step 1 failed" in page
    assert f'data-chart-url="/results/{evaluation.pk}/categories.json"' in page


# --------------------------------------------------------------------------- replays and secrecy


def test_a_dev_replay_reveals_the_action_the_element_and_the_reference(client, scored):
    """On dev tasks each step shows its description, assertion, the element chosen, the verdict and both screenshots."""
    evaluation = scored["public-dev"]
    page = body(client.get(f"/results/{evaluation.pk}/tasks/101/"))
    assert secret_marker("dev", 101, "DESCRIPTION", 1) in page and secret_marker("dev", 101, "ASSERTION", 1) in page
    assert "Element chosen" in page and "score 0.81" in page and "Runner-up" in page
    assert f"/results/{evaluation.pk}/tasks/101/files/reference_1.png" in page
    assert f"/results/{evaluation.pk}/tasks/101/files/step_1.png" in page
    assert f"/results/{evaluation.pk}/tasks/101/files/replay.mp4" in page
    assert f"/results/{evaluation.pk}/tasks/101/files/reference.mp4" in page
    assert client.get(f"/results/{evaluation.pk}/tasks/101/files/reference_1.png").status_code == 200


def test_a_test_replay_shows_only_pass_or_fail_per_step(client, scored):
    """On test tasks no description, assertion, chosen element, reason or reference reaches a non-staff reader."""
    evaluation = scored["public-test"]
    for key in ("201", "202"):
        page = body(client.get(f"/results/{evaluation.pk}/tasks/{key}/"))
        assert "SECRET-TEST" not in page and "Element chosen" not in page and "reference_1.png" not in page
        assert "held-out <strong>test</strong> split" in page and "Step 1" in page
        assert f"/results/{evaluation.pk}/tasks/{key}/files/step_1.png" in page
    assert client.get(f"/results/{evaluation.pk}/tasks/201/files/reference_1.png").status_code == 404


def test_staff_see_test_split_ground_truth_in_replays(client, scored, staff):
    """Maintainers see everything, test split included."""
    logged_in(client, staff)
    evaluation = scored["public-test"]
    page = body(client.get(f"/results/{evaluation.pk}/tasks/202/"))
    assert secret_marker("test", 202, "DESCRIPTION", 1) in page
    assert client.get(f"/results/{evaluation.pk}/tasks/202/files/reference_1.png").status_code == 200


@pytest.mark.parametrize("reader", ["anonymous", "outsider"])
def test_no_leaderboard_page_export_or_api_reveals_held_out_ground_truth(client, scored, reader, outsider):
    """The secrecy crawl over the leaderboard, results, replays, comparisons, exports and API finds no secret."""
    if reader == "outsider":
        logged_in(client, outsider)
    secrets = secrecy.held_out_secrets()
    public, other = scored["public-test"], scored["other-test"]
    start = ["/", f"/results/{public.pk}/", f"/compare/{public.pk}/{other.pk}/",
             "/leaderboard/export/?format=csv", "/leaderboard/export/?format=json", "/leaderboard/export/?format=tex",
             "/api/v1/leaderboard/", "/leaderboard/categories/", f"/results/{public.pk}/categories.json",
             "/leaderboard/charts/scores.json", "/leaderboard/charts/categories.json?axis=domain"]
    visited = secrecy.crawl(client, start, secrets, limit=400)
    for url in (f"/results/{public.pk}/tasks/201/", f"/compare/{public.pk}/{other.pk}/tasks/202/",
                f"/results/{public.pk}/tasks/201/files/step_1.png", f"/results/{public.pk}/categories.json"):
        assert url in visited, url


def test_replay_files_are_a_short_whitelist(client, scored, settings):
    """Only the replay video, step screenshots, the task video and revealed references are served; never result.json."""
    evaluation = scored["public-dev"]
    base = f"/results/{evaluation.pk}/tasks/101/files/"
    for name in ("result.json", "console.json", "..%2Fresult.json", "step_x.png", "step_7.png"):
        assert client.get(base + name).status_code == 404, name
    response = client.get(base + "step_0.png")
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "sandbox" in response["Content-Security-Policy"] and response["X-Content-Type-Options"] == "nosniff"
    assert client.get(f"/results/{evaluation.pk}/tasks/nope/files/step_0.png").status_code == 404


def test_videos_answer_byte_ranges_so_browsers_can_seek(client, scored, tiny_video):
    """A Range request gets 206 with exactly those bytes; an impossible range gets 416."""
    url = f"/results/{scored['public-dev'].pk}/tasks/101/files/replay.mp4"
    data = tiny_video.read_bytes()
    partial = client.get(url, HTTP_RANGE="bytes=10-19")
    assert partial.status_code == 206 and partial.content == data[10:20]
    assert partial["Content-Range"] == f"bytes 10-19/{len(data)}"
    tail = client.get(url, HTTP_RANGE="bytes=-5")
    assert tail.content == data[-5:]
    assert client.get(url, HTTP_RANGE=f"bytes={len(data) + 5}-").status_code == 416
    assert client.get(url)["Accept-Ranges"] == "bytes"


def test_the_timeline_lists_recorded_steps_then_steps_never_reached(scored):
    """Steps get labels, pass/fail, cumulative video times; actions after the failure show as not reached."""
    evaluation = scored["public-dev"]
    result = evaluation.task_results.select_related("task").get(task__key="dev-b")
    result.steps_total = 3
    steps = replays.step_views(evaluation, result, reveal=False, pages=True)
    assert [(s["label"], s["status"], s["time"]) for s in steps] == [
        ("Page load", "pass", 1.2), ("Step 1", "fail", 2.0), ("Step 2", "skipped", None), ("Step 3", "skipped", None)]
    assert "description" not in steps[1] and "reason" not in steps[1]


def test_failure_reasons_never_quote_test_split_secrets(scored):
    """A test-split task's stop reason is generic for readers; dev tasks say what happened."""
    test_result = scored["public-test"].task_results.select_related("task").get(task__key="202")
    assert replays.failure_reason(test_result, reveal=False) == "step 1 failed"
    dev_result = scored["public-dev"].task_results.select_related("task").get(task__key="dev-b")
    assert replays.failure_reason(dev_result, reveal=True).startswith("step 1 (Click): not found: SECRET-DEV")
    test_result.error = f"load: page crashed near {secret_marker('test', 202, 'DESCRIPTION', 1)}"
    assert "SECRET" not in replays.failure_reason(test_result, reveal=False)


# --------------------------------------------------------------------------- comparing


def test_compare_shows_headline_category_and_task_deltas(client, scored):
    """B minus A per score, per category and per task, each task linking both replays."""
    a, b = scored["public-test"], scored["other-test"]
    page = body(client.get(f"/compare/{a.pk}/{b.pk}/"))
    assert "public-test" in page and "other-test" in page
    assert "+0.00" in page or "&minus;" in page or "-30.00" in page
    assert "-30.00" in page and "+30.00" in page  # task 201: 60 -> 30; task 202: 20 -> 50
    assert f"/compare/{a.pk}/{b.pk}/tasks/201/" in page and "By category" in page


def test_compare_replay_puts_both_replays_and_the_recording_side_by_side(client, scored):
    """The task page of a comparison plays the reference and both replays with one set of controls."""
    a, b = scored["public-test"], scored["other-test"]
    page = body(client.get(f"/compare/{a.pk}/{b.pk}/tasks/201/"))
    assert page.count("data-sync") == 3 and page.count("data-timeline=") == 2
    for evaluation in (a, b):
        assert f"/results/{evaluation.pk}/tasks/201/files/replay.mp4" in page


def test_comparing_across_splits_or_with_bad_input_is_explained(client, scored):
    """Different splits get a 400 explanation; the form redirects two ticked rows and asks for two otherwise."""
    a, dev = scored["public-test"], scored["public-dev"]
    response = client.get(f"/compare/{a.pk}/{dev.pk}/")
    assert response.status_code == 400 and "different splits" in body(response)
    redirect = client.get(f"/compare/?e={a.pk}&e={scored['other-test'].pk}")
    assert redirect.status_code == 302 and redirect["Location"] == f"/compare/{a.pk}/{scored['other-test'].pk}/"
    assert client.get(f"/compare/?e={a.pk}").status_code == 400
    assert client.get("/compare/").status_code == 200


@pytest.mark.parametrize(("kind", "split", "hidden"), [("baseline", "test", True), ("baseline", "dev", False),
                                                      ("bundle", "test", False)])
def test_one_rule_keeps_held_out_baselines_pages_from_replays_and_previews(kind, split, hidden, staff, outsider):
    """A held-out split's baseline shows no screenshot, replay video or preview to anyone but staff; others' pages,
    and the dev split's baselines, are shown to whoever may open them."""
    from django.contrib.auth.models import AnonymousUser

    from leaderboard import access, previews
    from tests.leaderboard.factories import make_submission

    submission = make_submission(None, kind=kind, split=split, bundle="bundles/x.zip")
    assert access.reveals_ground_truth(submission) is hidden
    for reader in (AnonymousUser(), outsider):
        assert access.shows_pages(reader, submission) is not hidden
        assert previews.allowed(submission, previews.audience(reader, submission)) is not hidden
    assert access.shows_pages(staff, submission) and previews.allowed(submission, previews.STAFF)

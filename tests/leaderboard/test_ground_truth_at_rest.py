"""Ground truth at rest: never under MEDIA_ROOT, and staff-only files never kept by a shared cache."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from leaderboard.intake import baselines
from leaderboard.models.submissions import copy_bundle
from leaderboard.storage import ground_truth_checks
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation, make_task_result
from tests.leaderboard.pipeline_support import write_bundle

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.django_db
PAGE = "<!doctype html><button class='btn'>Go</button>"


@pytest.fixture
def roots(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.GROUND_TRUTH_ROOT = tmp_path / "ground-truth"
    return tmp_path


def test_a_held_out_reference_baseline_bundle_is_stored_outside_media_root(roots, settings, tmp_path):
    zipped = write_bundle(tmp_path / "reference.zip", ["201", "202"])
    submission = baselines._create("test", "reference", zipped)
    stored = Path(default_storage.path(submission.bundle.name))
    assert Path(settings.GROUND_TRUTH_ROOT) in stored.parents and stored.is_file()
    assert not any(path.is_file() for path in Path(settings.MEDIA_ROOT).rglob("*"))
    assert copy_bundle(submission, tmp_path / "copy.zip").read_bytes() == zipped.read_bytes()  # the worker reads it
    with pytest.raises(ValueError, match="no public address"):
        default_storage.url(submission.bundle.name)


def test_an_uploaded_bundle_still_goes_to_media_root(roots, owner, settings):
    submission = make_bundle_submission(owner, pages={"101": PAGE})
    assert Path(settings.MEDIA_ROOT) in Path(submission.bundle.path).parents


def test_ground_truth_nested_in_a_served_folder_is_a_configuration_error(roots, settings):
    assert ground_truth_checks() == []
    settings.TASKS_ROOT = Path(settings.MEDIA_ROOT) / "tasks"
    settings.GROUND_TRUTH_ROOT = Path(settings.STATIC_ROOT) / "gt"
    problems = ground_truth_checks()
    assert {problem.id for problem in problems} == {"leaderboard.E010"}
    assert any("TASKS_ROOT" in p.msg and "MEDIA_ROOT" in p.msg for p in problems)
    assert any("GROUND_TRUTH_ROOT" in p.msg and "STATIC_ROOT" in p.msg for p in problems)


def scored(owner, imported_sample, split: str):
    pages = {task.key: PAGE for task in imported_sample if task.split == split}
    submission = make_bundle_submission(owner, pages=pages, split=split, public=True)
    evaluation = make_queued_evaluation(submission, status="scored", final=0.3, n_tasks=len(pages))
    for task in imported_sample:
        if task.split == split:
            make_task_result(evaluation, task, final=0.5, steps_passed=1, steps_total=3,
                             steps=[{"index": 1, "passed": True}])
    return evaluation


def test_staff_only_replay_files_are_sent_private_and_not_stored(client, staff, owner, imported_sample, roots):
    evaluation = scored(owner, imported_sample, "test")
    response = logged_in(client, staff).get(f"/results/{evaluation.pk}/tasks/201/files/reference.mp4")
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"


def test_public_replay_files_stay_cacheable(client, owner, imported_sample, roots):
    evaluation = scored(owner, imported_sample, "dev")
    key = next(task.key for task in imported_sample if task.split == "dev")
    response = client.get(f"/results/{evaluation.pk}/tasks/{key}/files/reference.mp4")
    assert response.status_code == 200
    assert response["Cache-Control"] == "public, max-age=3600"


def test_a_baseline_bundle_an_earlier_version_left_in_media_root_is_moved_out(roots, settings, tmp_path):
    from django.core.files import File

    from leaderboard.models import Submission
    from tests.leaderboard.factories import make_submission

    zipped = write_bundle(tmp_path / "old.zip", ["201"])
    submission = make_submission(None, kind=Submission.Kind.BASELINE, model_name="Reference pages", split="test")
    with open(zipped, "rb") as handle:
        submission.bundle.save("bundles/2025/01/baseline-test-reference.zip", File(handle))
    old = Path(submission.bundle.path)
    assert Path(settings.MEDIA_ROOT) in old.parents
    assert baselines.move_out_of_media("test") == 1
    submission.refresh_from_db()
    assert not old.exists() and submission.bundle.name.startswith("ground-truth/baselines/")
    assert copy_bundle(submission, tmp_path / "copy.zip").read_bytes() == zipped.read_bytes()
    assert baselines.move_out_of_media("test") == 0


def test_a_staff_preview_of_a_held_out_reference_page_is_kept_by_no_cache(owner, imported_sample, roots, settings,
                                                                          client):
    from leaderboard import previews
    from leaderboard.models import Submission

    settings.PREVIEW_ROOT = roots / "previews"
    held_out = [task.key for task in imported_sample if task.split == "test"]
    baseline = make_bundle_submission(None, pages={key: PAGE for key in held_out}, split="test",
                                      kind=Submission.Kind.BASELINE)
    mine = make_bundle_submission(owner, pages={key: PAGE for key in held_out}, split="test")
    staff_view = client.get(previews.link(baseline, held_out[0], previews.STAFF))
    assert staff_view.status_code == 200 and b"<button" in staff_view.content
    assert staff_view["Cache-Control"] == "private, no-store"
    own_view = client.get(previews.link(mine, held_out[0], previews.MANAGER))
    assert own_view.status_code == 200 and own_view["Cache-Control"] == "private, max-age=300"


def test_the_results_download_is_kept_by_no_cache(client, staff, owner, imported_sample, roots):
    evaluation = scored(owner, imported_sample, "test")
    response = logged_in(client, staff).get(f"/submissions/{evaluation.submission.pk}/results.json")
    assert response.status_code == 200 and b'"steps"' in response.content
    assert response["Cache-Control"] == "private, no-store"

"""Public task pages, task files, input downloads and the tasks API."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from leaderboard.models import Task
from tests.leaderboard.base import logged_in

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures


def zip_names(response) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()


def test_the_task_list_shows_published_tasks_with_their_facts(client, imported_sample):
    """/tasks/ lists every published task with split, categories, resolution and action count."""
    Task.objects.filter(key="202").update(status=Task.Status.DRAFT)
    response = client.get("/tasks/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "/tasks/sample/101/" in html and "/tasks/sample/201/" in html
    assert "/tasks/sample/202/" not in html  # drafts are not public
    assert "320x240" in html and "L3" in html and "e-commerce" in html
    assert "/tasks/sample/inputs-dev.zip" in html and "/tasks/sample/inputs-test.zip" in html


def test_the_task_list_filters_by_split_and_category(client, imported_sample):
    """Filters narrow the list and keep the chosen value selected."""
    html = client.get("/tasks/?split=test&interaction=L3").content.decode()
    assert "/tasks/sample/201/" in html
    assert "/tasks/sample/202/" not in html and "/tasks/sample/101/" not in html
    assert '<option value="L3" selected>' in html


def test_a_test_task_page_shows_inputs_only(client, imported_sample):
    """A held-out task's page has the video, stitched assets and download, and no ground truth."""
    response = client.get("/tasks/sample/201/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "/tasks/sample/201/files/video.mp4" in html
    assert "/tasks/sample/201/files/stitched_assets/stitched_image1.png" in html
    assert "/tasks/sample/201/inputs.zip" in html
    assert "checkpoints/" not in html and "SECRET" not in html and "Action sequence" not in html


def test_a_dev_task_page_shows_actions_and_checkpoints(client, imported_sample):
    """A dev task's page also shows its action sequence and reference screenshots."""
    html = client.get("/tasks/sample/101/").content.decode()
    assert "SECRET-DEV-101-DESCRIPTION-1" in html and "SECRET-DEV-101-ASSERTION-2" in html
    assert "/tasks/sample/101/files/checkpoints/step_2.png" in html
    assert "Initial view" in html and "After action 2" in html


def test_unpublished_and_unknown_tasks_are_not_found(client, imported_sample):
    """Retired tasks and unknown keys answer 404."""
    Task.objects.filter(key="101").update(status=Task.Status.RETIRED)
    assert client.get("/tasks/sample/101/").status_code == 404
    assert client.get("/tasks/sample/101/files/video.mp4").status_code == 404
    assert client.get("/tasks/sample/nope/").status_code == 404


@pytest.mark.parametrize("path, dev_status, test_status", [
    ("video.mp4", 200, 200),
    ("assets/asset001.png", 200, 200),
    ("stitched_assets/stitched_image1.png", 200, 200),
    ("checkpoints/step_0.png", 200, 404),
    ("reference/step_0.json", 404, 404),
    ("metadata.json", 404, 404),
    ("assets/../checkpoints/step_0.png", 404, 404),
    ("assets/../../../201/checkpoints/step_0.png", 404, 404),
    ("assets", 404, 404),
    ("assets/.hidden", 404, 404),
])
def test_task_files_are_served_from_a_whitelist(client, imported_sample, path, dev_status, test_status):
    """Only video, assets, stitched assets (and dev checkpoints) are served; nothing else."""
    assert client.get(f"/tasks/sample/101/files/{path}").status_code == dev_status
    assert client.get(f"/tasks/sample/201/files/{path}").status_code == test_status


def test_served_files_cannot_run_scripts_on_the_site(client, imported_sample):
    """Task files carry a sandboxing CSP and the right type."""
    response = client.get("/tasks/sample/201/files/assets/asset001.png")
    assert response["Content-Type"] == "image/png"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"


def test_videos_can_be_seeked_with_range_requests(client, imported_sample):
    """A byte range is answered with 206 and exactly those bytes; a range past the end with 416."""
    url = "/tasks/sample/201/files/video.mp4"
    full = b"".join(client.get(url).streaming_content)
    response = client.get(url, HTTP_RANGE="bytes=10-19")
    assert response.status_code == 206 and response.content == full[10:20]
    assert response["Content-Range"] == f"bytes 10-19/{len(full)}"
    assert client.get(url, HTTP_RANGE="bytes=-5").content == full[-5:]
    assert client.get(url, HTTP_RANGE=f"bytes={len(full)}-").status_code == 416


def test_a_test_task_download_holds_public_inputs_only(client, imported_sample):
    """The per-task zip has video, assets, stitched images and task.json, but no checkpoints or records."""
    response = client.get("/tasks/sample/201/inputs.zip")
    assert response.status_code == 200
    assert 'filename="sample-201-inputs.zip"' in response["Content-Disposition"]
    names = zip_names(response)
    base = "sample-201/data/201/"
    assert {base + "video.mp4", base + "assets/asset001.png", base + "stitched_assets/stitched_image1.png",
            base + "task.json", "sample-201/tasks.jsonl"} == set(names)


def test_the_dev_split_download_is_a_dataset_the_evaluator_accepts(client, imported_sample, tmp_path):
    """The dev split zip holds data.jsonl and checkpoints: it validates as a task set."""
    from evaluator.dataset import validate_dataset

    response = client.get("/tasks/sample/inputs-dev.zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    archive.extractall(tmp_path)
    info = json.loads((tmp_path / "sample-dev/data/101/task.json").read_text())
    assert info["resolution"] == "320x240" and info["n_actions"] == 2
    assert validate_dataset(tmp_path / "sample-dev/data.jsonl").ok


def test_the_test_split_download_has_no_records(client, imported_sample):
    """The test split zip has every held-out task's inputs and no data.jsonl."""
    names = zip_names(client.get("/tasks/sample/inputs-test.zip"))
    assert "sample-test/data/202/video.mp4" in names
    assert not [name for name in names if "data.jsonl" in name or "checkpoints" in name or "reference" in name]
    assert client.get("/tasks/sample/inputs-nope.zip").status_code == 404


def test_downloads_are_cached_until_a_task_changes(client, imported_sample, tasks_root):
    """A second download reuses the built zip; changing a task rebuilds it and drops the old one."""
    client.get("/tasks/sample/inputs-test.zip")
    first = sorted((tasks_root / ".downloads").glob("sample-test-*.zip"))
    client.get("/tasks/sample/inputs-test.zip")
    assert sorted((tasks_root / ".downloads").glob("sample-test-*.zip")) == first
    Task.objects.filter(key="202").update(record_hash="changed")
    client.get("/tasks/sample/inputs-test.zip")
    second = sorted((tasks_root / ".downloads").glob("sample-test-*.zip"))
    assert len(second) == 1 and second != first


def test_the_api_lists_public_inputs_of_published_tasks(client, imported_sample):
    """GET /api/v1/tasks/ answers anonymous readers with public fields and file links."""
    response = client.get("/api/v1/tasks/?split=test")
    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 2 and page["next"] is None and page["previous"] is None
    rows = page["results"]
    assert [row["key"] for row in rows] == ["201", "202"]
    row = rows[0]
    assert set(row) == {"id", "task_set", "key", "split", "categories", "resolution", "width", "height",
                        "n_actions", "page", "inputs_zip", "video", "stitched_assets", "assets"}
    assert row["categories"]["interaction_complexity"] == "L3" and row["n_actions"] == 2
    assert row["video"] == "http://testserver/tasks/sample/201/files/video.mp4"
    assert row["assets"] == ["http://testserver/tasks/sample/201/files/assets/asset001.png"]


def test_the_api_task_detail_and_read_only(client, imported_sample, owner):
    """One task by id; writes are refused even for a signed-in user."""
    task = Task.objects.get(key="101")
    assert client.get(f"/api/v1/tasks/{task.pk}/").json()["key"] == "101"
    Task.objects.filter(pk=task.pk).update(status=Task.Status.DRAFT)
    assert client.get(f"/api/v1/tasks/{task.pk}/").status_code == 404
    logged_in(client, owner)
    assert client.post("/api/v1/tasks/", {"key": "x"}).status_code == 405
    assert client.delete(f"/api/v1/tasks/{task.pk}/").status_code == 405


def test_the_api_is_throttled_for_anonymous_readers(client, imported_sample, monkeypatch):
    """Past the anonymous rate, the API answers 429."""
    from django.core.cache import cache
    from rest_framework.throttling import AnonRateThrottle

    cache.clear()
    monkeypatch.setattr(AnonRateThrottle, "rate", "2/minute", raising=False)
    statuses = [client.get("/api/v1/tasks/").status_code for _ in range(3)]
    cache.clear()
    assert statuses == [200, 200, 429]

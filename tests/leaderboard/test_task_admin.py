"""Curation in the admin: task lists, the staff task view, task files and the actions."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission

from leaderboard import tasksets
from leaderboard.models import Task
from tests.leaderboard.base import logged_in

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures
CHANGELIST = "/admin/leaderboard/task/"


@pytest.fixture
def curator(staff):
    """The staff user with the task permissions a curator is given."""
    staff.user_permissions.add(*Permission.objects.filter(content_type__app_label="leaderboard",
                                                          content_type__model__in=["task", "taskset"]))
    return staff


def run_action(client, action: str, tasks, **extra):
    data = {"action": action, ACTION_CHECKBOX_NAME: [t.pk for t in tasks], **extra}
    return client.post(CHANGELIST, data, follow=True)


def test_task_lists_render_for_staff_with_filters(client, curator, imported_sample):
    """Staff see the task and task set lists, filterable by split, category and status."""
    logged_in(client, curator)
    html = client.get(CHANGELIST).content.decode()
    for text in ("?split__exact=test", "?status__exact=draft", "?interaction_complexity=L3", "?domain=e-commerce"):
        assert text in html
    assert client.get(CHANGELIST + "?split__exact=test").context["cl"].result_count == 2
    assert "Sample benchmark" in client.get("/admin/leaderboard/taskset/").content.decode()


def test_the_staff_task_view_shows_video_checkpoints_and_actions(client, curator, imported_sample):
    """A test task's change page shows its ground truth, with files served through the admin."""
    task = Task.objects.get(key="201")
    logged_in(client, curator)
    html = client.get(f"{CHANGELIST}{task.pk}/change/").content.decode()
    assert "SECRET-TEST-201-DESCRIPTION-1" in html and "SECRET-TEST-201-ASSERTION-2" in html
    assert f"{CHANGELIST}{task.pk}/files/checkpoints/step_2.png" in html
    assert f"{CHANGELIST}{task.pk}/files/video.mp4" in html
    response = client.get(f"{CHANGELIST}{task.pk}/files/reference/step_0.json")
    assert response.status_code == 200 and b"REFERENCE-TEXT-201-0" in b"".join(response.streaming_content)
    assert "private" in response["Cache-Control"] and "no-store" in response["Cache-Control"]
    for outside in ("../../dev/101/video.mp4", "/etc/passwd", "reference/../../201/video.mp4"):
        assert client.get(f"{CHANGELIST}{task.pk}/files/{outside}").status_code == 404, outside


def test_admin_pages_and_files_are_refused_to_non_staff(client, outsider, imported_sample):
    """A signed-in non-staff user is sent to the admin login and gets no task file."""
    task = Task.objects.get(key="201")
    logged_in(client, outsider)
    for url in (CHANGELIST, f"{CHANGELIST}{task.pk}/change/", f"{CHANGELIST}{task.pk}/files/checkpoints/step_0.png"):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_without_task_permissions_get_no_files(client, staff, imported_sample):
    """Being staff is not enough: the file view also needs permission to view tasks."""
    task = Task.objects.get(key="201")
    logged_in(client, staff)
    assert client.get(f"{CHANGELIST}{task.pk}/files/checkpoints/step_0.png").status_code == 404


def test_publish_and_retire_actions(client, curator, imported_sample):
    """Retire removes tasks from the public pages; publish brings them back."""
    task = Task.objects.get(key="101")
    logged_in(client, curator)
    run_action(client, "retire", [task])
    assert Task.objects.get(pk=task.pk).status == Task.Status.RETIRED
    assert client.get("/tasks/sample/101/").status_code == 404
    run_action(client, "publish", [task])
    assert Task.objects.get(pk=task.pk).status == Task.Status.PUBLISHED


def test_moving_to_dev_asks_for_confirmation_first(client, curator, imported_sample, tasks_root):
    """Moving a held-out task to dev shows a warning page; only the confirmed post moves it."""
    task = Task.objects.get(key="201")
    logged_in(client, curator)
    response = run_action(client, "move_to_dev", [task])
    assert "publishes their action sequences" in response.content.decode()
    assert Task.objects.get(pk=task.pk).split == "test"
    run_action(client, "move_to_dev", [task], confirm="yes")
    task.refresh_from_db()
    assert (task.split, task.files_dir) == ("dev", "sample/dev/201")
    assert (tasks_root / "sample/dev/201/checkpoints/step_0.png").is_file()


def test_moving_to_test_needs_no_confirmation(client, curator, imported_sample):
    """Moving a dev task to the held-out split happens at once."""
    task = Task.objects.get(key="101")
    logged_in(client, curator)
    run_action(client, "move_to_test", [task])
    assert Task.objects.get(pk=task.pk).split == "test"


def test_reauthor_says_when_a_task_has_no_script(client, curator, imported_sample):
    """Re-authoring a task imported without a script reports it and changes nothing."""
    task = Task.objects.get(key="101")
    logged_in(client, curator)
    response = run_action(client, "reauthor", [task])
    assert "has no authoring script" in response.content.decode()
    assert Task.objects.get(pk=task.pk).record_hash == task.record_hash


def test_deleting_a_task_removes_its_files(client, curator, imported_sample):
    """Deleting a task in the admin also deletes its stored folder."""
    task = Task.objects.get(key="dev-b")
    folder = task.files_path
    logged_in(client, curator)
    client.post(f"{CHANGELIST}{task.pk}/delete/", {"post": "yes"})
    assert not Task.objects.filter(pk=task.pk).exists() and not folder.exists()


SITE = """<!doctype html><html><body><h1>Counter</h1><p id="n">0</p>
<img src="dot.png" width="8" height="8" alt="">
<button id="inc" class="btn" onclick="n.textContent = +n.textContent + 1">Add one</button></body></html>"""
SCRIPT = {
    "id": "counter", "source_website": "http://localhost/counter", "resolution": "320x240", "pace_ms": 0,
    "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "productivity",
                       "sub_domain": "counter"},
    "action_sequence": [{"type": "Click", "selector": "#inc", "parameters": {"description": "Click 'Add one'"},
                         "visual_evaluation_flag": True, "logical_assertion": "The counter shows 1"}],
}


@pytest.mark.browser
@pytest.mark.slow
def test_reauthor_records_the_task_again_from_its_stored_page(client, curator, tasks_root, tmp_path):
    """An authored task is recorded again from its stored reference page and re-imported."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(SITE)
    from PIL import Image

    Image.new("RGB", (8, 8), (200, 0, 0)).save(site / "dot.png")
    script_path = tmp_path / "counter.json"
    script_path.write_text(json.dumps(SCRIPT))
    subprocess.run([sys.executable, "-m", "evaluator", "author", "--site", str(site), "--script", str(script_path),
                    "--out", str(tmp_path / "ds")], check=True, capture_output=True, timeout=300)
    tasksets.import_dataset(tmp_path / "ds/data.jsonl", "dev", "authored", scripts={"counter": SCRIPT})
    task = Task.objects.get(key="counter")
    shutil.rmtree(site)  # the original page is gone: re-authoring must use the stored one
    (task.files_path / "checkpoints/step_1.png").chmod(0o644)
    (task.files_path / "checkpoints/step_1.png").write_bytes(b"stale")
    Task.objects.filter(pk=task.pk).update(record_hash="stale")
    logged_in(client, curator)
    response = run_action(client, "reauthor", [task])
    assert "re-authored, updated" in response.content.decode()
    assert (task.files_path / "checkpoints/step_1.png").read_bytes().startswith(b"\x89PNG")
    assert (task.files_path / "video.mp4").is_file()
    assert Task.objects.get(pk=task.pk).script == SCRIPT

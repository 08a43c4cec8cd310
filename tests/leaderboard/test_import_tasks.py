"""Importing task sets: validation first, all-or-nothing, idempotent, updates, job datasets."""

from __future__ import annotations

import json
import os
import shutil
import stat
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from leaderboard import tasksets
from leaderboard.models import Task, TaskSet

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures


def run_import(*args) -> str:
    out = StringIO()
    call_command("import_tasks", *[str(arg) for arg in args], stdout=out, stderr=StringIO())
    return out.getvalue()


def stored_files(root) -> list[str]:
    """Every file under TASKS_ROOT, staging and download caches included."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_it_imports_a_dataset_and_stores_its_files(tasks_root, dev_dataset):
    """A valid dataset creates the task set, one row per task and the task folders."""
    output = run_import(dev_dataset, "--split", "dev", "--name", "Sample")
    assert "2 created, 0 updated, 0 unchanged" in output
    assert "after_action" in output
    task = Task.objects.get(key="101")
    assert (task.task_set.slug, task.task_set.name, task.split) == ("sample", "Sample", "dev")
    assert (task.width, task.height, task.n_actions, task.domain) == (320, 240, 2, "productivity")
    assert task.files_dir == "sample/dev/101"
    for name in ("video.mp4", "assets/asset001.png", "stitched_assets/stitched_image1.png",
                 "checkpoints/step_2.png", "reference/step_0.json"):
        assert (tasks_root / "sample/dev/101" / name).is_file(), name
    assert task.record["action_sequence"][0]["parameters"]["description"].startswith("SECRET-DEV-101")


def test_stored_files_are_read_only(imported_sample):
    """Imported task files cannot be written by accident."""
    video = imported_sample[0].files_path / "video.mp4"
    assert stat.S_IMODE(video.stat().st_mode) == 0o444


def test_a_rerun_with_the_same_data_changes_nothing(tasks_root, dev_dataset):
    """Re-importing an unchanged dataset reports every task unchanged and rewrites nothing."""
    run_import(dev_dataset, "--split", "dev")
    before = {t.key: (t.updated_at, t.record_hash) for t in Task.objects.all()}
    inode = (tasks_root / "sample/dev/101/video.mp4").stat().st_ino
    output = run_import(dev_dataset, "--split", "dev")
    assert "0 created, 0 updated, 2 unchanged" in output
    assert {t.key: (t.updated_at, t.record_hash) for t in Task.objects.all()} == before
    assert (tasks_root / "sample/dev/101/video.mp4").stat().st_ino == inode


def test_a_changed_task_is_updated_and_others_are_left_alone(tasks_root, dev_dataset):
    """Changing one record and one file updates exactly that task's row and folder."""
    run_import(dev_dataset, "--split", "dev")
    Task.objects.filter(key="101").update(status=Task.Status.RETIRED)
    records = [json.loads(line) for line in dev_dataset.read_text().splitlines()]
    records[0]["classification"]["domain"] = "gaming"
    dev_dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    Image.new("RGB", (16, 16), (1, 2, 3)).save(dev_dataset.parent / "data/101/assets/asset001.png")
    output = run_import(dev_dataset, "--split", "dev")
    assert "0 created, 1 updated, 1 unchanged" in output
    task = Task.objects.get(key="101")
    assert task.domain == "gaming"
    assert task.status == Task.Status.RETIRED  # curation decisions survive a refresh
    stored = Image.open(tasks_root / "sample/dev/101/assets/asset001.png")
    assert stored.getpixel((0, 0)) == (1, 2, 3)
    assert not list((tasks_root / ".trash").glob("*/*"))


def test_a_dataset_with_one_bad_task_imports_nothing(tasks_root, dataset_factory):
    """One task missing its checkpoints makes the whole import fail without rows or files."""
    path = dataset_factory("broken", [1, 2])
    shutil.rmtree(path.parent / "data/2/checkpoints")
    with pytest.raises(CommandError, match="nothing imported"):
        run_import(path, "--split", "dev")
    assert not TaskSet.objects.exists() and not Task.objects.exists()
    assert stored_files(tasks_root) == []


def test_a_failure_while_storing_rolls_back_rows_and_folders(tasks_root, dev_dataset, monkeypatch):
    """When installing the second folder fails, the first update is undone and no row changes."""
    run_import(dev_dataset, "--split", "dev")
    records = [json.loads(line) for line in dev_dataset.read_text().splitlines()]
    for record in records:
        record["classification"]["sub_domain"] = "changed"
    dev_dataset.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = stored_files(tasks_root)
    real_rename, calls = os.rename, []

    def flaky_rename(src, dst):
        calls.append(dst)
        if len(calls) == 4:  # old folder aside + staged in for task 1, old aside, then the 2nd install fails
            raise OSError(28, "No space left on device")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", flaky_rename)
    with pytest.raises(tasksets.TaskImportError, match="No space left"):
        tasksets.import_dataset(dev_dataset, "dev")
    monkeypatch.undo()
    assert set(Task.objects.values_list("sub_domain", flat=True)) == {"todo"}
    assert stored_files(tasks_root) == before


def test_it_refuses_to_silently_move_a_task_between_splits(tasks_root, dev_dataset):
    """Importing a dev task again as test is refused with a message pointing to the admin."""
    run_import(dev_dataset, "--split", "dev")
    with pytest.raises(tasksets.TaskImportError, match="already in split dev"):
        tasksets.import_dataset(dev_dataset, "test")
    assert set(Task.objects.values_list("split", flat=True)) == {"dev"}


def test_the_command_lists_every_validation_problem(tasks_root, dataset_factory):
    """Validation problems are printed one per line and the command exits with an error."""
    path = dataset_factory("bad", [1, 2])
    (path.parent / "data/1/video.mp4").unlink()
    (path.parent / "data/2/stitched_assets/stitched_image1.png").write_bytes(b"not a png")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_tasks", str(path), "--split", "dev", stdout=StringIO(), stderr=err)
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert any("task 1" in line for line in lines) and any("task 2" in line for line in lines)


def test_it_refuses_a_missing_file_and_a_bad_slug(tasks_root, dev_dataset):
    """A path that does not exist and an unusable slug get one clear line each."""
    with pytest.raises(tasksets.TaskImportError, match="no such file"):
        tasksets.import_dataset(dev_dataset.parent / "nope.jsonl", "dev")
    with pytest.raises(tasksets.TaskImportError, match="lower-case"):
        tasksets.import_dataset(dev_dataset, "dev", "Bad Slug")


def test_it_imports_only_the_tasks_asked_for_and_keeps_scripts(tasks_root, dev_dataset):
    """--tasks limits the import; a script given for a task is stored with it."""
    script = {"source_website": "http://x/", "action_sequence": []}
    tasksets.import_dataset(dev_dataset, "dev", keys={"dev-b"}, scripts={"dev-b": script})
    assert list(Task.objects.values_list("key", "script")) == [("dev-b", script)]
    with pytest.raises(tasksets.TaskImportError, match="task 999 is not in the dataset"):
        tasksets.import_dataset(dev_dataset, "dev", keys={"999"})


def test_write_job_dataset_builds_a_loadable_read_only_dataset(imported_sample, tmp_path):
    """A job dataset holds the chosen tasks' records and files, hard-linked and read-only."""
    from evaluator.dataset import load_dataset, validate_dataset

    tasks = [t for t in imported_sample if t.split == "test"]
    data_path = tasksets.write_job_dataset(tasks, tmp_path / "job")
    assert validate_dataset(data_path).ok
    assert [t.key for t in load_dataset(data_path).tasks] == ["201", "202"]
    linked = tmp_path / "job/data/201/checkpoints/step_0.png"
    assert linked.stat().st_ino == (tasks[0].files_path / "checkpoints/step_0.png").stat().st_ino
    assert stat.S_IMODE((tmp_path / "job/data").stat().st_mode) == 0o555
    tasksets.remove_job_dataset(tmp_path / "job")
    assert list((tmp_path / "job").iterdir()) == []


def test_move_task_moves_the_row_and_folder(imported_sample, tasks_root):
    """Moving a task to the other split renames its folder and updates the row."""
    task = Task.objects.get(key="201")
    assert tasksets.move_task(task, "dev") is True
    task.refresh_from_db()
    assert (task.split, task.files_dir) == ("dev", "sample/dev/201")
    assert (tasks_root / "sample/dev/201/video.mp4").is_file()
    assert not (tasks_root / "sample/test/201").exists()

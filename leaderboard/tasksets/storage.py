"""Where task files live and how they are copied, hashed, moved and found.

Task files live under ``TASKS_ROOT/<task set>/<split>/<key>/`` in the official layout
(video.mp4, assets/, stitched_assets/, checkpoints/, reference/, metadata.json), made
read-only when stored. Job datasets for the evaluator are built from them with hard links.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction

from leaderboard.models import Task
from leaderboard.models.tasks import Split

# What a task folder holds, in the official layout (reference/ is our private extension).
TASK_ENTRIES = ("video.mp4", "assets", "stitched_assets", "checkpoints", "reference", "metadata.json")
PUBLIC_DIRS = ("assets", "stitched_assets")
DEV_PUBLIC_DIRS = (*PUBLIC_DIRS, "checkpoints")
READ_ONLY_FILE = 0o444
READ_ONLY_DIR = 0o555
CHUNK = 1024 * 1024


class TaskImportError(Exception):
    """A dataset cannot be imported; ``problems`` lists every reason, one line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems) or ["unknown problem"]
        more = len(self.problems) - 1
        super().__init__(self.problems[0] + (f" (and {more} more problems)" if more else ""))



def tasks_root() -> Path:
    return Path(settings.TASKS_ROOT)


def task_files_dir(slug: str, split: str, key: str) -> str:
    return f"{slug}/{split}/{key}"


def iter_task_files(root: Path):
    """(relative posix path, absolute path) of each regular file of a task folder, sorted.

    Only the official entries are taken, and symlinks are skipped: a task folder is
    copied verbatim into job directories and nothing outside it may come along.
    """
    for entry in TASK_ENTRIES:
        path = root / entry
        if path.is_symlink():
            continue
        if path.is_file():
            yield entry, path
        elif path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames.sort()
                for filename in sorted(filenames):
                    file_path = Path(dirpath) / filename
                    if stat.S_ISREG(os.lstat(file_path).st_mode):
                        yield file_path.relative_to(root).as_posix(), file_path


def task_digest(record: dict, root: Path, script: dict | None = None) -> str:
    """Hash of a task's record, files and script: equal digests mean nothing to re-import."""
    digest = hashlib.sha256(canonical_json(record))
    digest.update(canonical_json(script))
    for relative, path in iter_task_files(root):
        digest.update(relative.encode() + b"\0" + _file_sha256(path).encode())
    return digest.hexdigest()


def canonical_json(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def copy_task_files(source: Path, dest: Path) -> None:
    """Copy a task folder's official entries to ``dest`` as read-only files."""
    dest.mkdir(parents=True)
    for relative, path in iter_task_files(source):
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        target.chmod(READ_ONLY_FILE)


def move_task(task: Task, split: str) -> bool:
    """Move a task (row and folder) to another split; False when it is there already."""
    if split not in Split.values:
        raise ValueError(f"unknown split {split!r}")
    if task.split == split:
        return False
    old_path = task.files_path
    new_dir = task_files_dir(task.task_set.slug, split, task.key)
    new_path = tasks_root() / new_dir
    if new_path.exists():
        raise TaskImportError([f"{new_dir} already exists under TASKS_ROOT; remove the stale folder first"])
    new_path.parent.mkdir(parents=True, exist_ok=True)
    with transaction.atomic():
        Task.objects.filter(pk=task.pk).update(split=split, files_dir=new_dir)
        if old_path.exists():
            os.rename(old_path, new_path)
    task.split, task.files_dir = split, new_dir
    return True


def delete_task_files(task: Task) -> None:
    shutil.rmtree(task.files_path, ignore_errors=True)


def staff_file_path(task: Task, relative: str) -> Path | None:
    """Any regular file inside the task's folder (for staff), or None."""
    parts = PurePosixPath(relative).parts
    if not parts or not all(plain_name(part) for part in parts):
        return None
    return file_inside(task.files_path, parts)


def plain_name(name: str) -> bool:
    """A single file or folder name: no path separators, not hidden, not "." or ".."."""
    return bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name


def file_inside(root: Path, parts: tuple[str, ...]) -> Path | None:
    """root/parts when it is a regular file really inside ``root`` (no symlink leads out)."""
    path = regular_file(root.joinpath(*parts))
    if path is None or not path.resolve().is_relative_to(root.resolve()):
        return None
    return path


def regular_file(path: Path) -> Path | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return path if stat.S_ISREG(info.st_mode) else None


# --------------------------------------------------------------------------- job datasets


def write_job_dataset(tasks, dest_dir: Path | str) -> Path:
    """Write an evaluator dataset of ``tasks`` into ``dest_dir``; returns its data.jsonl.

    Files are hard links to the stored task files when ``dest_dir`` is on the same
    filesystem (copies otherwise). data.jsonl, data/ and everything below are made
    read-only; ``dest_dir`` itself stays writable for the job's output. Remove the
    result with :func:`remove_job_dataset`. Never chmod or write the files: a hard link
    is the stored task file itself.
    """
    tasks = list(tasks)
    dest = Path(dest_dir)
    keys = [task.key for task in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError("a job dataset cannot hold two tasks with the same key")
    data_dir = dest / "data"
    data_dir.mkdir(parents=True)
    for task in tasks:
        _link_task_files(task.files_path, data_dir / task.key)
    data_path = dest / "data.jsonl"
    with open(data_path, "w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(json.dumps(task.record, ensure_ascii=False) + "\n")
    data_path.chmod(READ_ONLY_FILE)
    _make_tree_read_only(data_dir)
    return data_path


def _link_task_files(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for relative, path in iter_task_files(source):
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:  # another filesystem, or links not allowed: copy instead
            shutil.copyfile(path, target)
            target.chmod(READ_ONLY_FILE)


def _make_tree_read_only(root: Path) -> None:
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        os.chmod(dirpath, READ_ONLY_DIR)


def remove_job_dataset(dest_dir: Path | str) -> None:
    """Delete what :func:`write_job_dataset` wrote (its read-only folders included)."""
    dest = Path(dest_dir)
    data_dir = dest / "data"
    if data_dir.is_dir():
        for dirpath, _dirnames, _filenames in os.walk(data_dir):
            os.chmod(dirpath, stat.S_IRWXU)  # owner only: just enough to delete the contents
        shutil.rmtree(data_dir)
    (dest / "data.jsonl").unlink(missing_ok=True)


"""A task's public inputs: which files anyone may fetch, display rows, downloads, filters.

Anyone may see a published task's video, assets, stitched asset sheets, resolution,
categories and number of actions. Dev-split tasks also show their action sequence and
checkpoints (the dev ground truth is public); test-split tasks never do. Reference data,
metadata and the record itself are never served from here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from leaderboard.models import Task, TaskSet
from leaderboard.models.tasks import Split
from leaderboard.tasksets.storage import (
    DEV_PUBLIC_DIRS,
    PUBLIC_DIRS,
    canonical_json,
    file_inside,
    plain_name,
    regular_file,
    tasks_root,
)


@dataclass
class PublicFiles:
    """Relative paths of the files of a task anyone may fetch."""

    video: str | None
    assets: list[str]
    stitched: list[str]
    checkpoints: list[str]


def public_dirs(task: Task) -> tuple[str, ...]:
    return DEV_PUBLIC_DIRS if task.split == Split.DEV else PUBLIC_DIRS


def public_file_path(task: Task, relative: str) -> Path | None:
    """The file behind a public URL, or None unless it is a whitelisted public input.

    Allowed: video.mp4, assets/<name>, stitched_assets/<name>, and for dev-split tasks
    checkpoints/<name>. Nothing else (reference data, metadata, the record) ever is.
    """
    parts = PurePosixPath(relative).parts
    allowed = parts == ("video.mp4",) or (
        len(parts) == 2 and parts[0] in public_dirs(task) and plain_name(parts[1])
    )
    return file_inside(task.files_path, parts) if allowed else None


def public_files(task: Task) -> PublicFiles:
    """The public inputs of a task (checkpoints for dev-split tasks only)."""
    return _listing(task, public_dirs(task))


def staff_files(task: Task) -> PublicFiles:
    """Every viewable file of a task, checkpoints included, for staff pages."""
    return _listing(task, DEV_PUBLIC_DIRS)


def _listing(task: Task, dirs: tuple[str, ...]) -> PublicFiles:
    def names(folder: str) -> list[str]:
        path = task.files_path / folder
        if folder not in dirs or not path.is_dir() or path.is_symlink():
            return []
        found = [entry.name for entry in path.iterdir() if plain_name(entry.name) and regular_file(entry)]
        return [f"{folder}/{name}" for name in sorted(found, key=natural_key)]

    video = "video.mp4" if regular_file(task.files_path / "video.mp4") else None
    return PublicFiles(video, names("assets"), names("stitched_assets"), names("checkpoints"))


def in_natural_order(tasks) -> list[Task]:
    """Tasks by set, split, then key with numbers compared as numbers (2 before 10)."""
    return sorted(tasks, key=lambda task: (task.task_set.name, task.split, natural_key(task.key)))


def natural_key(text: str) -> list:
    """Sort key putting step_2 before step_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def public_info(task: Task) -> dict:
    """The task's public facts, as written into downloads (never ground truth)."""
    return {
        "id": task.record.get("id", task.key) if isinstance(task.record, dict) else task.key,
        "key": task.key,
        "task_set": task.task_set.slug,
        "split": task.split,
        "resolution": task.resolution,
        "width": task.width,
        "height": task.height,
        "classification": {
            "interaction_complexity": task.interaction_complexity,
            "visual_complexity": task.visual_complexity,
            "domain": task.domain,
            "sub_domain": task.sub_domain,
        },
        "n_actions": task.n_actions,
    }


def checkpoint_captions(task: Task, paths: list[str]) -> list[tuple[str, str]]:
    """(path, caption) for checkpoint images: which state each one shows, when that is clear.

    step_0 is the initial view; step_k follows action k when there is one checkpoint per
    action, or the k-th visually checked action when there is one per flagged action.
    """
    actions = task.record.get("action_sequence") or []
    flagged = [n for n, action in enumerate(actions, 1) if action.get("visual_evaluation_flag")]
    after = list(range(1, len(actions) + 1)) if len(paths) == len(actions) + 1 else None
    if after is None and len(paths) == len(flagged) + 1:
        after = flagged
    captions = []
    for path in paths:
        match = re.search(r"step_(\d+)\.png$", path)
        k = int(match.group(1)) if match else None
        if k == 0:
            caption = "Initial view"
        elif k is not None and after and k <= len(after):
            caption = f"After action {after[k - 1]}"
        else:
            caption = path.rsplit("/", 1)[-1]
        captions.append((path, caption))
    return captions


def dev_actions(task: Task) -> list[dict] | None:
    """The action sequence for public display: dev-split tasks only (None for the held-out split)."""
    return action_rows(task) if task.split == Split.DEV else None


def action_rows(task: Task) -> list[dict]:
    """The task's action sequence as display rows (ground truth: check the split before showing)."""
    rows = []
    for number, action in enumerate(task.record.get("action_sequence") or [], start=1):
        params = action.get("parameters") or {}
        rows.append({
            "number": number,
            "type": action.get("type", ""),
            "description": params.get("description", ""),
            "text": params.get("text") or params.get("key") or "",
            "visual": bool(action.get("visual_evaluation_flag")),
            "assertion": action.get("logical_assertion") or "",
        })
    return rows


# --------------------------------------------------------------------------- downloads


def task_inputs_zip(task: Task) -> Path:
    """A zip of one task's public inputs (cached until the task changes)."""
    return inputs_zip([task], f"{task.task_set.slug}-{task.key}")


def split_inputs_zip(task_set: TaskSet, split: str) -> Path | None:
    """A zip of the public inputs of every published task of a split, or None when it has none."""
    tasks = list(Task.objects.published().filter(task_set=task_set, split=split).select_related("task_set"))
    return inputs_zip(tasks, f"{task_set.slug}-{split}") if tasks else None


def inputs_zip(tasks: list[Task], label: str) -> Path:
    """Build (or reuse) a zip of the public inputs of ``tasks`` under the folder ``label``.

    Layout: ``<label>/tasks.jsonl`` (public facts) and ``<label>/data/<key>/`` with the
    video, assets, stitched assets and task.json. When every task is dev-split, the zip
    also holds ``<label>/data.jsonl`` (full records) and the checkpoints, making it a
    dataset the evaluator can score locally.
    """
    state = [(t.pk, t.key, t.split, t.status, t.record_hash, t.files_dir) for t in tasks]
    digest = hashlib.sha256(canonical_json([label, state])).hexdigest()[:16]
    folder = tasks_root() / ".downloads"
    path = folder / f"{label}-{digest}.zip"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{path.name}.{uuid.uuid4().hex}"
    try:
        _write_inputs_zip(partial, tasks, label)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    for stale in folder.glob(f"{label}-*.zip"):
        if stale != path and re.fullmatch(rf"{re.escape(label)}-[0-9a-f]{{16}}\.zip", stale.name):
            stale.unlink(missing_ok=True)
    return path


def _write_inputs_zip(path: Path, tasks: list[Task], label: str) -> None:
    full_dataset = all(task.split == Split.DEV for task in tasks)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        lines = "".join(json.dumps(public_info(task)) + "\n" for task in tasks)
        archive.writestr(f"{label}/tasks.jsonl", lines)
        if full_dataset:
            records = "".join(json.dumps(task.record, ensure_ascii=False) + "\n" for task in tasks)
            archive.writestr(f"{label}/data.jsonl", records)
        for task in tasks:
            base = f"{label}/data/{task.key}"
            archive.writestr(f"{base}/task.json", json.dumps(public_info(task), indent=2))
            for relative in _zip_members(task):
                # Videos and images are compressed already: store them as they are.
                archive.write(task.files_path / relative, f"{base}/{relative}", compress_type=zipfile.ZIP_STORED)


def _zip_members(task: Task) -> list[str]:
    files = public_files(task)
    return ([files.video] if files.video else []) + files.assets + files.stitched + files.checkpoints


# --------------------------------------------------------------------------- listing


# Query parameter -> Task field, for the public list and the API.
FILTERS = {
    "set": "task_set__slug",
    "split": "split",
    "interaction": "interaction_complexity",
    "visual": "visual_complexity",
    "domain": "domain",
}


def public_tasks():
    return Task.objects.published().select_related("task_set")


def split_tasks(split: str):
    """The published tasks a submission to ``split`` is scored on, in key order."""
    return Task.objects.published().for_split(split).select_related("task_set").order_by("key")


def split_task_keys(split: str) -> set[str]:
    return set(split_tasks(split).values_list("key", flat=True))


def filter_tasks(queryset, params) -> tuple:
    """Apply the known filters found in ``params``; returns (queryset, {name: value})."""
    chosen = {name: params.get(name) for name in FILTERS if params.get(name)}
    return queryset.filter(**{FILTERS[name]: value for name, value in chosen.items()}), chosen


def filter_problems(queryset, params) -> list[str]:
    """One message per filter in ``params`` whose value no task in ``queryset`` has (checked only
    for the filters given, one query each)."""
    problems = []
    for name, field_name in FILTERS.items():
        value = params.get(name)
        if value and not queryset.filter(**{field_name: value}).exists():
            known = sorted(set(queryset.values_list(field_name, flat=True)), key=natural_key)
            problems.append(f"{name}={value!r} matches no published task; known values: {', '.join(known) or 'none'}")
    return problems


def facets(queryset) -> dict[str, list[str]]:
    """The values each filter can take among ``queryset``, sorted."""
    return {
        name: sorted(set(queryset.values_list(field_name, flat=True)), key=natural_key)
        for name, field_name in FILTERS.items()
    }

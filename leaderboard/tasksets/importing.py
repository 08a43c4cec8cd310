"""Importing datasets into task sets, all or nothing, and re-authoring a task.

The dataset is validated by the evaluator first; changed task folders are copied to a
staging folder, then the rows are written in one transaction and each staged folder is
renamed into place (on the same filesystem, so a rename is atomic). Any failure puts the
previous folders back and rolls the rows back. Unchanged tasks (same record, files and
script hash) are left alone, so a re-run changes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from leaderboard.models import Task, TaskSet
from leaderboard.models.tasks import Split
from leaderboard.tasksets.storage import (
    TaskImportError,
    copy_task_files,
    task_digest,
    task_files_dir,
    tasks_root,
)

AUTHOR_TIMEOUT_S = 1800
KEY_MAX = Task._meta.get_field("key").max_length
SLUG_MAX = TaskSet._meta.get_field("slug").max_length


@dataclass
class ImportSummary:
    """What an import did: task keys per outcome, validation warnings, the checkpoint numbering."""

    task_set: str
    split: str
    numbering: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [f"warning: {text}" for text in self.warnings]
        lines.append(f"checkpoint numbering: {_NUMBERING_TEXT.get(self.numbering, self.numbering)}")
        lines.append(
            f"task set {self.task_set!r}, split {self.split}: {len(self.created)} created, "
            f"{len(self.updated)} updated, {len(self.unchanged)} unchanged"
        )
        return lines


_NUMBERING_TEXT = {
    "after_action": "after_action (step_k is the state after action k, one checkpoint per action)",
    "flagged": "flagged (step_k is the k-th visually evaluated step, as the official code pairs them)",
    "unknown": "unknown (checkpoint counts match neither convention; check the dataset)",
}


@dataclass
class _Plan:
    source: object  # evaluator.dataset.Task
    digest: str
    existing: Task | None
    script: dict | None

    @property
    def key(self) -> str:
        return self.source.key

    @property
    def changed(self) -> bool:
        return self.existing is None or self.existing.record_hash != self.digest


def import_dataset(
    path: Path | str,
    split: str,
    task_set: str | None = None,
    name: str | None = None,
    *,
    keys: set[str] | None = None,
    scripts: dict[str, dict] | None = None,
    draft: bool = False,
) -> ImportSummary:
    """Import (or re-import) the tasks of a dataset into a task set; returns what changed.

    ``keys`` limits the import to those tasks; ``scripts`` maps task keys to their
    authoring scripts; ``draft`` creates new tasks unpublished. Raises TaskImportError.
    """
    if split not in Split.values:
        raise TaskImportError([f"split must be one of {', '.join(Split.values)}, got {split!r}"])
    data_path = resolve_data_path(path)
    dataset, warnings = _load_valid_dataset(data_path)
    slug = task_set or default_slug(data_path)
    if slug != slugify(slug) or not slug or len(slug) > SLUG_MAX:
        raise TaskImportError([f"task set slug {slug!r} must be 1-{SLUG_MAX} lower-case letters, digits and '-'"])
    plans = _plan_import(_select_tasks(dataset.tasks, keys), slug, split, scripts or {})
    summary = ImportSummary(task_set=slug, split=split, numbering=getattr(dataset, "numbering", "unknown"))
    summary.warnings = warnings
    for plan in plans:
        if not plan.changed:
            summary.unchanged.append(plan.key)
        else:
            (summary.created if plan.existing is None else summary.updated).append(plan.key)
    _apply_plans(plans, slug, name, split, draft)
    return summary


def resolve_data_path(path: Path | str) -> Path:
    """The data.jsonl a user pointed at (a folder holding data.jsonl is accepted too)."""
    data_path = Path(path)
    if data_path.is_dir():
        data_path = data_path / "data.jsonl"
    if not data_path.is_file():
        raise TaskImportError([f"{data_path}: no such file"])
    return data_path.resolve()


def default_slug(data_path: Path) -> str:
    """A task set slug from the dataset's folder name; a folder named after a split is skipped."""
    folder = data_path.parent
    if folder.name in Split.values:
        folder = folder.parent
    return slugify(folder.name) or "tasks"


def _load_valid_dataset(data_path: Path):
    from evaluator.dataset import DatasetError, load_dataset, validate_dataset

    report = validate_dataset(data_path)
    if report.problems:
        raise TaskImportError([str(problem) for problem in report.problems])
    try:
        dataset = report.dataset or load_dataset(data_path)
    except DatasetError as exc:
        raise TaskImportError([str(exc)]) from None
    too_long = [f"task {task.key}: ids longer than {KEY_MAX} characters are not supported"
                for task in dataset.tasks if len(task.key) > KEY_MAX]
    if too_long:
        raise TaskImportError(too_long)
    return dataset, [str(problem) for problem in report.warnings]


def _select_tasks(tasks: list, keys: set[str] | None) -> list:
    if keys is None:
        return list(tasks)
    found = {task.key for task in tasks}
    missing = sorted(set(keys) - found)
    if missing:
        raise TaskImportError([f"task {key} is not in the dataset" for key in missing])
    return [task for task in tasks if task.key in keys]


def _plan_import(tasks: list, slug: str, split: str, scripts: dict[str, dict]) -> list[_Plan]:
    existing = {row.key: row for row in Task.objects.filter(task_set__slug=slug, key__in=[t.key for t in tasks])}
    problems = [
        f"task {key} is already in split {row.split} of {slug!r}; move it in the admin instead of re-importing"
        for key, row in existing.items()
        if row.split != split
    ]
    if problems:
        raise TaskImportError(problems)
    plans = []
    for task in tasks:
        script = scripts.get(task.key)
        row = existing.get(task.key)
        if script is None and row is not None:
            script = row.script  # a plain re-import keeps the authoring script
        plans.append(_Plan(task, task_digest(task.raw, Path(task.root), script), row, script))
    return plans


def _apply_plans(plans: list[_Plan], slug: str, name: str | None, split: str, draft: bool) -> None:
    changed = [plan for plan in plans if plan.changed]
    root = tasks_root()
    staging = root / ".staging" / uuid.uuid4().hex
    try:
        for plan in changed:
            copy_task_files(Path(plan.source.root), staging / plan.key)
        with _FolderSwaps(root) as swaps, transaction.atomic():
            task_set = _task_set(slug, name)
            for plan in changed:
                row = _save_row(task_set, plan, split, draft)
                swaps.install(staging / plan.key, root / row.files_dir)
    except OSError as exc:
        raise TaskImportError([f"could not store task files: {exc}"]) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _task_set(slug: str, name: str | None) -> TaskSet:
    task_set, created = TaskSet.objects.get_or_create(
        slug=slug, defaults={"name": name or slug.replace("-", " ").capitalize()}
    )
    if name and not created and task_set.name != name:
        task_set.name = name
        task_set.save(update_fields=["name"])
    return task_set


def _save_row(task_set: TaskSet, plan: _Plan, split: str, draft: bool) -> Task:
    source = plan.source
    row = plan.existing or Task(task_set=task_set, key=source.key, split=split)
    if plan.existing is None and draft:
        row.status = Task.Status.DRAFT
    row.interaction_complexity = source.interaction_complexity
    row.visual_complexity = source.visual_complexity
    row.domain = source.domain
    row.sub_domain = source.sub_domain or ""
    row.width, row.height = source.width, source.height
    row.n_actions = len(source.actions)
    row.record = source.raw
    row.script = plan.script
    row.files_dir = task_files_dir(task_set.slug, split, source.key)
    row.record_hash = plan.digest
    row.save()
    return row


class _FolderSwaps:
    """Installs staged folders in place, keeping the old ones until the transaction commits.

    Leaving the ``with`` block with an exception (including a failed commit) moves every
    old folder back; leaving it normally deletes them.
    """

    def __init__(self, root: Path):
        self.trash = root / ".trash" / uuid.uuid4().hex
        self.done: list[tuple[Path, Path | None]] = []

    def __enter__(self):
        return self

    def install(self, staged: Path, final: Path) -> None:
        final.parent.mkdir(parents=True, exist_ok=True)
        old = None
        if final.exists():
            old = self.trash / str(len(self.done))
            old.parent.mkdir(parents=True, exist_ok=True)
            os.rename(final, old)
        self.done.append((final, old))
        os.rename(staged, final)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            for final, old in reversed(self.done):
                shutil.rmtree(final, ignore_errors=True)
                if old is not None:
                    os.rename(old, final)
        shutil.rmtree(self.trash, ignore_errors=True)
        return False


# --------------------------------------------------------------------------- re-authoring


def reauthor_task(task: Task, timeout: int = AUTHOR_TIMEOUT_S) -> ImportSummary:
    """Record the task again from its authoring script and re-import that one task.

    The page comes from the script's ``site`` (a path relative to the project, or a
    loopback URL) when it names one, else from the reference page stored with the task.
    """
    if not task.script:
        raise TaskImportError([f"task {task.key} has no authoring script; it can only be re-imported"])
    with tempfile.TemporaryDirectory(prefix="iwr-reauthor-") as tmp:
        script_path = Path(tmp) / "script.json"
        script_path.write_text(json.dumps(task.script))
        out = Path(tmp) / "dataset"
        command = [
            sys.executable, "-m", "evaluator", "author", "--site", _reauthor_site(task, Path(tmp)),
            "--script", str(script_path), "--out", str(out), "--id", task.key,
        ]
        _run_author(command, timeout)
        return import_dataset(
            out / "data.jsonl", task.split, task.task_set.slug, keys={task.key}, scripts={task.key: task.script}
        )


def _reauthor_site(task: Task, tmp: Path) -> str:
    site = task.script.get("site") if isinstance(task.script, dict) else None
    if isinstance(site, str) and site.strip():
        return site if "://" in site else str(Path(settings.BASE_DIR) / site)
    page_dir = task.files_path / "reference" / "site"
    if not (page_dir / "index.html").is_file():
        raise TaskImportError([f"task {task.key} has no stored reference page; name its page in the script's \"site\""])
    # The stored page refers to assets as __PLACEHOLDER_ASSETS_BASE_DIR__/<name>: a folder
    # of that name next to it makes it a complete page again.
    from evaluator.bundle import ASSET_PLACEHOLDER

    folder = tmp / "site"
    shutil.copytree(page_dir, folder)
    if (task.files_path / "assets").is_dir():
        shutil.copytree(task.files_path / "assets", folder / ASSET_PLACEHOLDER)
    return str(folder)


def _run_author(command: list[str], timeout: int) -> None:
    try:
        done = subprocess.run(
            command, cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise TaskImportError([f"authoring took longer than {timeout} s and was stopped"]) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise TaskImportError([lines[-1] if lines else f"authoring failed with exit code {done.returncode}"])


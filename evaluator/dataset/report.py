"""Validating a whole task set: every problem of the file, its records and task folders."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.dataset.checks import TaskChecker
from evaluator.dataset.files import Limits, human_size
from evaluator.dataset.model import AFTER_ACTION, FLAGGED, NUMBERING_MEANING, UNKNOWN, Dataset
from evaluator.dataset.numbering import decide, fitting, list_checkpoints
from evaluator.dataset.problems import Problem, Problems, Where, printable
from evaluator.dataset.store import read_dataset

LABEL_AXES = ("interaction_complexity", "visual_complexity", "domain")


@dataclass
class Report:
    """The outcome of validating a task set: defects, remarks and what the set holds."""

    path: Path
    problems: list[Problem]
    warnings: list[Problem]
    summary: dict
    dataset: Dataset | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "path": printable(str(self.path)),
            "ok": self.ok,
            "summary": self.summary,
            "problems": [problem.to_dict() for problem in self.problems],
            "warnings": [problem.to_dict() for problem in self.warnings],
        }

    def format_text(self) -> str:
        lines = [f"Task set {printable(str(self.path))}"]
        if self.dataset is not None:
            lines += [f"  {line}" for line in summary_lines(self.summary)]
        for title, items in (("problem", self.problems), ("warning", self.warnings)):
            if items:
                lines.append(f"{len(items)} {title}{'s' * (len(items) != 1)}:")
                lines.extend(f"  {item}" for item in items)
        verdict = "OK: valid task set" if self.ok else f"INVALID: {len(self.problems)} problem" + "s" * (
            len(self.problems) != 1)
        return "\n".join([*lines, verdict])


def validate_dataset(path: str | Path, limits: Limits | None = None) -> Report:
    """Check a task set completely; never raises on bad input (every defect is in the report)."""
    path, limits = Path(path), limits or Limits()
    sink = Problems(cap=limits.max_problems)
    try:
        dataset = read_dataset(path, sink, limits)
    except OSError as exc:  # e.g. a folder on the way cannot be searched
        sink.error(Where(path.name), None, f"cannot be read ({exc.strerror})", "unreadable")
        dataset = None
    fits: dict[str, list[str] | None] = {}
    stats = {}
    if dataset is not None:
        fits, stats = _check_files(dataset, sink, limits)
    summary = summarize(dataset, fits, stats)
    return Report(path, sink.errors, sink.warnings, summary, dataset)


def _check_files(dataset: Dataset, sink: Problems, limits: Limits) -> tuple[dict, dict]:
    """Check every task folder; returns each task's fitting numberings (None: no checkpoints)."""
    listings = {task.key: list_checkpoints(task) for task in dataset.tasks}
    fits = {task.key: fitting(task, set(listings[task.key].steps)) if listings[task.key].present else None
            for task in dataset.tasks}
    numbering, compared_with = decide([fit for fit in fits.values() if fit is not None])
    data_label = dataset.data_dir.name
    if dataset.tasks and not dataset.data_dir.is_dir():
        sink.error(Where(data_label), None, f"missing task folder {data_label}/ next to {dataset.path.name}",
                   "missing_data_dir")
        return fits, {}
    if numbering == UNKNOWN:
        _report_mixed(fits, data_label, sink)
    checker = TaskChecker(dataset.path.name, data_label, sink, limits)
    for task in dataset.tasks:
        checker.check(task, listings[task.key], compared_with, settled=numbering != UNKNOWN)
    _report_strays(dataset, sink)
    return fits, vars(checker.stats)


def _report_mixed(fits: dict[str, list[str] | None], data_label: str, sink: Problems) -> None:
    only = {name: sorted(key for key, fit in fits.items() if fit == [name]) for name in (AFTER_ACTION, FLAGGED)}
    if only[AFTER_ACTION] and only[FLAGGED]:
        groups = "; ".join(f"{len(keys)} fit only {name} ({_few(keys)})" for name, keys in only.items())
        sink.error(Where(data_label), None, f"tasks disagree on checkpoint numbering: {groups}", "numbering_mixed")


def _few(keys: list[str], shown: int = 5) -> str:
    more = f", ... {len(keys) - shown} more" if len(keys) > shown else ""
    return ", ".join(keys[:shown]) + more


def _report_strays(dataset: Dataset, sink: Problems) -> None:
    """Folders beside the tasks that no record claims (a typo in an id, a stale task)."""
    keys = set(dataset.keys)
    try:
        names = sorted(entry.name for entry in dataset.data_dir.iterdir())
    except OSError:
        return
    for name in names:
        if name not in keys and not name.startswith("."):
            sink.warn(Where(f"{dataset.data_dir.name}/{name}"), None, "matches no task in the jsonl file",
                      "stray_folder")


# -- summary ---------------------------------------------------------------------------


def summarize(dataset: Dataset | None, fits: dict[str, list[str] | None], stats: dict) -> dict:
    tasks = dataset.tasks if dataset else []
    actions = [action for task in tasks for action in task.actions]
    numbering = dataset.numbering if dataset else UNKNOWN
    summary = {
        "tasks": len(tasks),
        "actions": len(actions),
        "assertions": sum(action.has_assertion for action in actions),
        "visual_flags": sum(action.visual_evaluation_flag for action in actions),
        "action_types": _counts(action.type for action in actions),
    }
    for axis in LABEL_AXES:
        summary[axis] = _counts(getattr(task, axis) for task in tasks)
    summary |= {
        "id_types": _counts("integer" if isinstance(task.id, int) else "string" for task in tasks),
        "resolutions": _counts(task.resolution for task in tasks),
        "resolution_sources": _counts(task.resolution_source for task in tasks),
        "numbering": numbering,
        "numbering_meaning": _numbering_meaning(numbering, fits),
        "numbering_fits": _fit_counts(fits),
        "files": stats,
    }
    return summary


def _numbering_meaning(numbering: str, fits: dict[str, list[str] | None]) -> str:
    if numbering == UNKNOWN and all(fit is None for fit in fits.values()):
        return "no task has checkpoints to tell"
    return NUMBERING_MEANING[numbering]


def _fit_counts(fits: dict[str, list[str] | None]) -> dict[str, int]:
    def bucket(fit: list[str] | None) -> str:
        if fit is None:
            return "no_checkpoints"
        if len(fit) == 1:
            return fit[0]
        return "both" if fit else "neither"

    return _counts(bucket(fit) for fit in fits.values())


def _counts(values) -> dict[str, int]:
    counted = Counter(values)
    return {key: counted[key] for key in sorted(counted, key=_natural)}


def _natural(text: str) -> list:
    """L2 before L10: digits compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(text))]


def summary_lines(summary: dict) -> list[str]:
    def listing(counts: dict) -> str:
        return ", ".join(f"{key} {value}" for key, value in counts.items()) or "none"

    lines = [
        f"{summary['tasks']} tasks, {summary['actions']} actions ({listing(summary['action_types'])}), "
        f"{summary['assertions']} assertions, {summary['visual_flags']} visual flags",
        *(f"{axis}: {listing(summary[axis])}" for axis in LABEL_AXES),
        f"ids: {listing(summary['id_types'])}",
        f"resolutions: {listing(summary['resolutions'])} (taken from {listing(summary['resolution_sources'])})",
        f"checkpoint numbering: {summary['numbering']} ({summary['numbering_meaning']}); "
        f"tasks fitting: {listing(summary['numbering_fits'])}",
    ]
    files = summary["files"]
    if files:
        lines.append(f"files: {files['videos']} videos ({human_size(files['video_bytes'])}), "
                     f"{files['assets']} assets ({human_size(files['asset_bytes'])}), "
                     f"{files['checkpoints']} checkpoints, {files['references']} reference files")
    return lines

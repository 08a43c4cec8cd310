"""Typed view of an IWR-Bench task set: actions, tasks and the dataset that holds them.

Every object keeps the JSON it was read from (``raw``) so that writing a dataset back
reproduces it exactly, unknown fields included. Typed fields are read-only views for
the evaluator; to change a record, change its ``raw``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

ACTION_TYPES = ("Click", "Type", "Scroll", "Press")
DEFAULT_RESOLUTION = (1920, 1080)

# Checkpoint numberings: which state ``checkpoints/step_<k>.png`` shows.
AFTER_ACTION = "after_action"
FLAGGED = "flagged"
UNKNOWN = "unknown"
NUMBERING_MEANING = {
    AFTER_ACTION: "one per action: step_k = state after action k",
    FLAGGED: "k-th flagged step: step_k = state after the k-th visually flagged action",
    UNKNOWN: "the checkpoint files fit no numbering consistently",
}


class DatasetError(ValueError):
    """A task set cannot be used; the message is one line saying where and why."""


class UnknownTaskError(DatasetError, KeyError):
    """No task has the requested key."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass
class Action:
    """One step of a task's action sequence."""

    type: str
    description: str = ""
    text: str | None = None
    key: str | None = None
    direction: str | None = None
    scroll_page: str | None = None
    element_index: int | None = None
    visual_evaluation_flag: bool = False
    logical_assertion: str | None = None
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def has_assertion(self) -> bool:
        return self.logical_assertion is not None


@dataclass
class Task:
    """One task: a recorded page, its actions and where its files live."""

    id: str | int
    key: str
    interaction_complexity: str
    visual_complexity: str
    domain: str
    sub_domain: str
    width: int
    height: int
    environment: str
    source_website: str
    actions: list[Action]
    raw: dict = field(repr=False)
    root: Path
    line: int = 0
    resolution_source: str = "record"  # "record" | "metadata" | "default"
    source_line: str | None = field(default=None, repr=False, compare=False)

    @property
    def resolution(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def video_path(self) -> Path:
        return self.root / "video.mp4"

    @property
    def assets_dir(self) -> Path:
        return self.root / "assets"

    @property
    def stitched_dir(self) -> Path:
        return self.root / "stitched_assets"

    @property
    def checkpoints_dir(self) -> Path:
        return self.root / "checkpoints"

    @property
    def reference_dir(self) -> Path:
        return self.root / "reference"

    @property
    def metadata_path(self) -> Path:
        return self.root / "metadata.json"

    @property
    def flagged_steps(self) -> list[int]:
        """Action numbers (1-based) that carry a visual check."""
        return [n for n, action in enumerate(self.actions, 1) if action.visual_evaluation_flag]

    def checkpoint_path(self, k: int) -> Path:
        return self.checkpoints_dir / f"step_{k}.png"

    def reference_path(self, k: int) -> Path:
        return self.reference_dir / f"step_{k}.json"

    def checkpoint_for_step(self, step: int, numbering: str) -> Path | None:
        """The reference screenshot of the state after action ``step`` (0 = initial view).

        None when the numbering has no checkpoint for that step (an unflagged action under
        "flagged" numbering) or the numbering is unknown.
        """
        if step == 0:
            return self.checkpoint_path(0)
        if numbering == AFTER_ACTION:
            return self.checkpoint_path(step)
        if numbering == FLAGGED and step in self.flagged_steps:
            return self.checkpoint_path(self.flagged_steps.index(step) + 1)
        return None

    def load_reference(self, k: int) -> dict | None:
        """The optional reference data of checkpoint k, or None when the task has none."""
        path = self.reference_path(k)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise DatasetError(f"{path}: unreadable reference data ({exc})") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{path}: reference data must be a JSON object")
        return data


@dataclass(frozen=True)
class LineStyle:
    """How a data.jsonl file spells its lines, so records written back look the same."""

    ensure_ascii: bool = False
    separators: tuple[str, str] = (", ", ": ")
    newline: str = "\n"
    bom: bool = False
    final_newline: bool = True

    def dumps(self, record: dict) -> str:
        return json.dumps(record, ensure_ascii=self.ensure_ascii, separators=self.separators)


@dataclass
class Dataset:
    """A task set: its data.jsonl, the folder of task files, the tasks in file order."""

    path: Path
    data_dir: Path
    tasks: list[Task]
    numbering: str = UNKNOWN
    style: LineStyle = field(default_factory=LineStyle, repr=False)

    @property
    def keys(self) -> list[str]:
        return [task.key for task in self.tasks]

    def task(self, key: str | int) -> Task:
        wanted = str(key)
        for task in self.tasks:
            if task.key == wanted:
                return task
        raise UnknownTaskError(f"no task {wanted!r} in {self.path}")

    def checkpoint_for(self, task: Task, step: int) -> Path | None:
        """The reference screenshot after action ``step`` under this dataset's numbering."""
        return task.checkpoint_for_step(step, self.numbering)

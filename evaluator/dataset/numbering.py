"""Which state each ``checkpoints/step_<k>.png`` shows, decided from the files present.

Two numberings are in use (protocol.md, "Known ambiguity"): one checkpoint per action
(step_k = after action k) and one per flagged step (step_k = after the k-th visually
flagged action). step_0 is always the initial view. A task fits a numbering when its
files are exactly step_0..step_N for that numbering's N; the dataset's numbering is the
one every fitting task agrees on (after_action when both fit, as when every action is
flagged). Tasks that fit neither are reported by validation and do not vote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from evaluator.dataset.model import AFTER_ACTION, FLAGGED, UNKNOWN, Task

_STEP_NAME = re.compile(r"^step_(\d+)\.png$")
LABELS = {
    AFTER_ACTION: "after_action (one per action, step_k after action k)",
    FLAGGED: "flagged (step_k after the k-th flagged step)",
}


@dataclass
class Checkpoints:
    """The files of a task's checkpoints folder."""

    present: bool = False
    steps: dict[int, str] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)


def list_checkpoints(task: Task) -> Checkpoints:
    try:
        with os.scandir(task.checkpoints_dir) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:  # missing, not a folder, or unreadable: validation says which
        return Checkpoints()
    found = Checkpoints(present=True)
    for name in names:
        match = _STEP_NAME.match(name)
        if match and name == f"step_{int(match[1])}.png":
            found.steps[int(match[1])] = name
        else:
            found.others.append(name)
    return found


def expected_steps(task: Task, numbering: str) -> set[int]:
    count = len(task.actions) if numbering == AFTER_ACTION else len(task.flagged_steps)
    return set(range(count + 1))


def fitting(task: Task, steps: set[int]) -> list[str]:
    """The numberings a task's checkpoint steps fit exactly (possibly both, or none)."""
    return [name for name in (AFTER_ACTION, FLAGGED) if steps == expected_steps(task, name)]


def decide(fits: list[list[str]]) -> tuple[str, str]:
    """(the dataset's numbering, the numbering each task is compared with).

    When fitting tasks disagree the dataset's numbering is unknown and tasks are compared
    with the numbering most of them fit, so the report names the odd ones out.
    """
    voters = [fit for fit in fits if fit]
    if not voters:
        return UNKNOWN, AFTER_ACTION
    for name in (AFTER_ACTION, FLAGGED):
        if all(name in fit for fit in voters):
            return name, name
    after = sum(AFTER_ACTION in fit for fit in voters)
    return UNKNOWN, AFTER_ACTION if after >= len(voters) - after else FLAGGED


def detect_numbering(tasks: list[Task]) -> str:
    fits = []
    for task in tasks:
        found = list_checkpoints(task)
        if found.present:
            fits.append(fitting(task, set(found.steps)))
    return decide(fits)[0]


def mismatch(task: Task, steps: set[int], compared_with: str, settled: bool = True) -> str:
    """Why a task's checkpoint files do not fit ``compared_with``, and what they fit instead.

    ``settled``: the whole dataset uses ``compared_with`` (else only most of its tasks do).
    """
    fits = fitting(task, steps)
    if fits:
        users = "the dataset uses" if settled else "most tasks use"
        return (f"checkpoints fit {LABELS[fits[0]]} but {users} {LABELS[compared_with]}: "
                f"{difference(expected_steps(task, compared_with), steps)}")
    parts = [f"{LABELS[name]} expects {step_range(expected_steps(task, name))}: "
             f"{difference(expected_steps(task, name), steps)}" for name in (AFTER_ACTION, FLAGGED)]
    return f"{len(steps)} checkpoint files fit neither numbering: " + "; ".join(parts)


def difference(expected: set[int], steps: set[int]) -> str:
    parts = []
    if missing := sorted(expected - steps):
        parts.append(f"missing {step_list(missing)}")
    if extra := sorted(steps - expected):
        parts.append(f"extra {step_list(extra)}")
    return ", ".join(parts)


def step_range(steps: set[int]) -> str:
    return f"step_0..step_{max(steps)}" if len(steps) > 1 else "step_0 only"


def step_list(steps: list[int]) -> str:
    """step_1.png, step_4.png..step_9.png: runs of three or more are shortened."""
    runs: list[list[int]] = []
    for step in steps:
        if runs and step == runs[-1][-1] + 1:
            runs[-1].append(step)
        else:
            runs.append([step])
    names = []
    for run in runs:
        if len(run) >= 3:
            names.append(f"step_{run[0]}.png..step_{run[-1]}.png")
        else:
            names.extend(f"step_{step}.png" for step in run)
    return ", ".join(names)

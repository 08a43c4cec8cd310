"""Which of the two accepted layouts a bundle uses, and re-rooting the official generator's one.

Flat: ``<task id>/index.html``. Nested: ``<task id>/<model folder>/index.html``, what the
benchmark's official generation script writes (one folder per model under each task). A
nested task is read as if its model folder were the task folder, so both layouts extract
to the same files and score the same. A bundle holds one model's pages: a task folder with
more than one model folder holding a page is refused, naming the folders.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluator.bundle.model import PAGE_NAME, Entry, show
from evaluator.bundle.pages import task_sort_key


@dataclass
class Layout:
    """What intake found: ``kind`` is flat, nested, mixed (some tasks each way) or none (no page)."""

    kind: str = "none"
    wrapper: str | None = None  # the folder that wrapped the whole bundle, if one did
    model_folders: list[str] = field(default_factory=list)  # nested tasks' model folder names
    nested_tasks: list[str] = field(default_factory=list)
    seen: str = ""  # the top of the bundle as packed, for messages

    def as_dict(self) -> dict:
        return {"kind": self.kind, "wrapper": self.wrapper, "model_folders": self.model_folders,
                "nested_tasks": self.nested_tasks}

    def describe(self) -> str:
        shape = {"flat": f"<task id>/{PAGE_NAME}", "nested": f"<task id>/<model folder>/{PAGE_NAME}",
                 "mixed": f"<task id>/{PAGE_NAME} and <task id>/<model folder>/{PAGE_NAME}",
                 "none": "no task page found"}[self.kind]
        folders = ", ".join(f"{show(name)}/" for name in self.model_folders)
        inside = f" inside {show(self.wrapper)}/" if self.wrapper else ""
        return shape + (f" (model folder {folders})" if folders else "") + inside


def resolve_layout(entries: list[Entry], task_keys: set[str]) -> tuple[Layout, list[str], list[str]]:
    """Re-root nested task folders in place; returns (layout, problems, warnings)."""
    files = {entry.path for entry in entries if entry.kind == "file"}
    flat, nested, problems, warnings = [], {}, [], []
    for key in sorted({path.split("/")[0] for path in files} & task_keys, key=task_sort_key):
        if f"{key}/{PAGE_NAME}" in files:
            flat.append(key)
            continue
        models = sorted({path.split("/")[1] for path in files
                         if path.startswith(key + "/") and path.count("/") == 2 and path.endswith("/" + PAGE_NAME)})
        if len(models) > 1:
            names = ", ".join(f"{key}/{show(name)}/" for name in models)
            problems.append(f"task {key}: more than one model folder holds an {PAGE_NAME} ({names}); a bundle holds "
                            "one model's pages, so keep one model folder per task")
        elif models:
            nested[key] = models[0]
    for key, model in nested.items():
        warnings.extend(_reroot(entries, key, model))
    layout = Layout(_kind(flat, nested), model_folders=sorted(set(nested.values())),
                    nested_tasks=sorted(nested, key=task_sort_key))
    return layout, problems, warnings


def _kind(flat: list[str], nested: dict[str, str]) -> str:
    if flat and nested:
        return "mixed"
    return "flat" if flat else "nested" if nested else "none"


def _reroot(entries: list[Entry], key: str, model: str) -> list[str]:
    """``key/model/x`` becomes ``key/x``; anything else under ``key/`` is left out (with a warning)."""
    inner = f"{key}/{model}"
    left_out = []
    for entry in entries:
        if entry.path == inner:
            entry.path = key
        elif entry.path.startswith(inner + "/"):
            entry.path = key + entry.path[len(inner):]
        elif entry.path.startswith(key + "/"):
            if entry.kind == "file":
                left_out.append(entry.path)
            entry.path = ""  # not part of the page; never extracted
    if not left_out:
        return []
    return [f"task {key}: ignored {len(left_out)} file(s) outside its model folder {show(model)}/, "
            f"such as {show(left_out[0])}"]

"""Distrust what a job wrote: its results, its artifacts and its log are checked before anything is kept.

A job runs untrusted pages; a page that escaped its browser controls every byte of the job's
output folder. So the process that stores a job's outcome (the leaderboard's worker) reads it
only through these functions:

- :func:`read_results` / :func:`check_results`: ``results.json`` against a schema (known task
  ids, finite scores in [0, 1] that agree with their steps, bounded size, step count, string
  lengths and nesting), with the summary recomputed from the per-task scores by
  :func:`evaluator.scoring.summarize`; a summary that disagrees is itself a violation;
- :func:`read_task_result`: one ``tasks/<id>/result.json`` under the same per-task rules;
- :func:`copy_artifacts`: only regular files of allowed types and sizes, under safe names, with
  a bound per job (no symlinks, FIFOs, devices or sockets; nothing outside the folder);
- :func:`read_log_tail` and :func:`read_appended`: bounded reads, whatever the file's size;
- :func:`strip_server_paths`: the reasons a task result gives (its error, each step's reason, visual
  error and assertion reason) name files by their own name, never by an absolute path on the server
  (results are shown to submitters): :func:`check_task_result` rewrites any that do.

Every violation raises :class:`OutputError`, whose ``rule`` names the broken rule and whose
message says what broke it. Pure Python, no Django.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator import scoring

TOP_LEVEL = {"protocol", "evaluator_version", "ocr_engine", "browser", "tasks", "summary", "judge"}
OBJECT_FIELDS = {"tasks", "summary", "judge"}  # the judge record of protocol iwr-official (evaluator.official.record)
SCORE_FIELDS = scoring.SCORE_KEYS
TASK_REQUIRED = {*SCORE_FIELDS, "steps_passed", "steps_total", "steps", "error"}
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TOLERANCE = 1e-9  # scores are recomputed in the same floating point: only rounding may differ
# An absolute path of two parts or more, not part of a URL ("http://host/a/b") or of a relative path ("tasks/1/a").
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~%-])(?:/[^\s'\"/:()\[\]{},;]+){2,}/?")


@dataclass(frozen=True)
class OutputLimits:
    """Bounds on what a job may write; generous for real jobs, small next to a disk or a worker's memory."""

    results_bytes: int = 32 * 2**20       # 113 tasks with their steps take about 2 MB
    task_result_bytes: int = 2 * 2**20
    string_chars: int = 20_000            # a step's reason, a target's text, an error message
    depth: int = 16
    extra_steps: int = 1                  # the load step before the task's actions
    task_actions: int = 1_000             # IWR-Bench tasks have tens of actions; a count the job is told
    log_bytes: int = 200_000              # the tail of the evaluator log that is kept
    artifact_files: int = 5_000
    artifacts_bytes: int = 2 * 2**30      # everything one job may leave behind
    artifact_bytes: Mapping[str, int] = field(default_factory=lambda: {
        ".png": 16 * 2**20, ".mp4": 256 * 2**20, ".webm": 256 * 2**20,
        ".json": 4 * 2**20, ".jsonl": 16 * 2**20,
    })


class OutputError(ValueError):
    """The job's output broke a rule; ``rule`` names it, the message says what broke it."""

    def __init__(self, rule: str, detail: str):
        super().__init__(f"job output rejected ({rule}): {detail}")
        self.rule = rule


# --------------------------------------------------------------------------- results.json


def read_results(path: Path, tasks: Iterable[Any], limits: OutputLimits = OutputLimits()) -> dict:
    """Read and check ``results.json``; return it with the summary recomputed from its tasks."""
    return check_results(_load_json(path, limits.results_bytes), tasks, limits)


def check_results(document: Any, tasks: Iterable[Any], limits: OutputLimits = OutputLimits()) -> dict:
    """Check a parsed results document against ``tasks`` (objects with ``key``, the category
    attributes and, when known, ``n_actions`` or ``actions``); return it with the summary recomputed."""
    tasks = list(tasks)
    if not isinstance(document, dict):
        raise OutputError("schema", "results.json is not a JSON object")
    unknown = set(document) - TOP_LEVEL
    if unknown or not {"tasks", "summary"} <= set(document):
        raise OutputError("schema", f"results.json fields {sorted(document)} (expected {sorted(TOP_LEVEL)})")
    _check_tree(document, limits, "results.json")
    for name in TOP_LEVEL - OBJECT_FIELDS:
        if name in document and not isinstance(document[name], str):
            raise OutputError("schema", f"field {name!r} is not a string")
    if "judge" in document and not isinstance(document["judge"], dict):
        raise OutputError("schema", "field 'judge' is not an object")
    results = document["tasks"]
    if not isinstance(results, dict):
        raise OutputError("schema", "field 'tasks' is not an object")
    by_key = {str(task.key): task for task in tasks}
    strangers = [key for key in results if key not in by_key]
    if strangers:
        raise OutputError("unknown task", f"task id(s) {', '.join(sorted(strangers)[:5])} are not in the job's "
                                          "task set")
    for key, result in results.items():
        check_task_result(result, by_key[key], limits)
    summary = scoring.summarize(results, tasks)
    if not _agrees(document["summary"], summary):
        raise OutputError("summary", "the summary does not follow from the per-task scores")
    return {**document, "summary": summary}


def read_task_result(path: Path, task: Any, limits: OutputLimits = OutputLimits()) -> dict:
    """Read and check one task's ``result.json``."""
    result = _load_json(path, limits.task_result_bytes)
    _check_tree(result, limits, f"task {task.key}")
    return check_task_result(result, task, limits)


def check_task_result(result: Any, task: Any, limits: OutputLimits = OutputLimits()) -> dict:
    """One task's result: its fields, finite scores in [0, 1], a bounded step list, scores that follow from it."""
    key = task.key
    if not isinstance(result, dict) or not TASK_REQUIRED <= set(result):
        raise OutputError("schema", f"task {key}: result lacks {sorted(TASK_REQUIRED - set(result or {}))}")
    for name in SCORE_FIELDS:
        value = result[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise OutputError("score not finite", f"task {key}: {name} is {value!r}")
        if not 0.0 <= value <= 1.0:
            raise OutputError("score out of range", f"task {key}: {name} is {value!r}, outside [0, 1]")
    passed, total, steps = result["steps_passed"], result["steps_total"], result["steps"]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (passed, total)) or not 0 <= passed <= total:
        raise OutputError("schema", f"task {key}: steps_passed {passed!r} of steps_total {total!r}")
    expected = action_count(task)
    if expected is not None and total != expected:
        raise OutputError("step count", f"task {key}: steps_total {total}, the task has {expected} actions")
    if total > limits.task_actions:
        raise OutputError("step count", f"task {key}: steps_total {total} (at most {limits.task_actions})")
    if not isinstance(steps, list) or len(steps) > total + limits.extra_steps:
        raise OutputError("step count", f"task {key}: {len(steps) if isinstance(steps, list) else steps!r} steps "
                                        f"for {total} actions")
    if result["error"] is not None and not isinstance(result["error"], str):
        raise OutputError("schema", f"task {key}: error is not a string or null")
    if not result["error"]:
        _check_consistent(result, key)
    _strip_reasons(result)
    return result


def strip_server_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its last part (``/srv/tasks/t1/step_3.png`` -> ``step_3.png``)."""
    return ABSOLUTE_PATH.sub(lambda match: match.group(0).rstrip("/").rpartition("/")[2], text)


def _strip_reasons(result: dict) -> None:
    """The reasons of a task result (shown to submitters) without absolute paths, whoever wrote them."""
    if result["error"]:
        result["error"] = strip_server_paths(result["error"])
    for step in result["steps"]:
        if not isinstance(step, dict):
            continue
        for record, name in ((step, "reason"), (step.get("visual"), "error"), (step.get("visual"), "skipped"),
                             (step.get("assertion"), "reason")):
            if isinstance(record, dict) and isinstance(record.get(name), str):
                record[name] = strip_server_paths(record[name])


def action_count(task: Any) -> int | None:
    """How many actions ``task`` has: ``n_actions`` (the leaderboard's task rows) or ``len(actions)``
    (the evaluator's own tasks); None when the caller does not know."""
    count = getattr(task, "n_actions", None)
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    actions = getattr(task, "actions", None)
    return None if actions is None else len(actions)


def _check_consistent(result: dict, key: str) -> None:
    """A scored task's IFS, VFS and Final follow from its steps and visual means (scoring.py's formulas)."""
    if result["steps_total"] == 0:
        raise OutputError("schema", f"task {key}: no actions")
    expected = {"ifs": scoring.ifs(result["steps_passed"], result["steps_total"]),
                "vfs": scoring.vfs(result["low_level"], result["high_level"])}
    expected["final"] = scoring.final(result["ifs"], result["vfs"])
    for name, value in expected.items():
        if not math.isclose(result[name], value, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
            raise OutputError("scores disagree", f"task {key}: {name} is {result[name]!r}, its parts give {value!r}")


def _agrees(claimed: Any, computed: Any) -> bool:
    if isinstance(computed, dict):
        return isinstance(claimed, dict) and set(claimed) == set(computed) and all(
            _agrees(claimed[k], computed[k]) for k in computed)
    if isinstance(computed, float) or isinstance(claimed, float):
        return (isinstance(claimed, int | float) and not isinstance(claimed, bool)
                and math.isclose(claimed, computed, rel_tol=TOLERANCE, abs_tol=TOLERANCE))
    return claimed == computed


def _check_tree(value: Any, limits: OutputLimits, where: str, depth: int = 0) -> None:
    """Every string bounded, every number finite, nesting bounded, anywhere in the document."""
    if depth > limits.depth:
        raise OutputError("nesting", f"{where}: nested deeper than {limits.depth}")
    if isinstance(value, str):
        if len(value) > limits.string_chars:
            raise OutputError("string length", f"{where}: a string of {len(value)} characters "
                                               f"(at most {limits.string_chars})")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise OutputError("score not finite", f"{where}: a number is {value!r}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_tree(key, limits, where, depth + 1)
            _check_tree(item, limits, where, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_tree(item, limits, where, depth + 1)


def _load_json(path: Path, max_bytes: int) -> Any:
    data = _read_regular(path, max_bytes, whole=True)

    def refuse(constant: str):
        raise OutputError("score not finite", f"{Path(path).name}: {constant} is not a number JSON allows")

    try:
        return json.loads(data.decode("utf-8"), parse_constant=refuse)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise OutputError("schema", f"{Path(path).name} is not valid JSON: {str(exc)[:200]}") from None


# --------------------------------------------------------------------------- files


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading only if it is a regular file itself (not through a symlink, not a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise OutputError("missing", f"{Path(path).name} was not written") from None
    except OSError as exc:
        if Path(path).is_symlink():
            raise OutputError("symlink", f"{Path(path).name} is a symbolic link") from None
        raise OutputError("not a regular file", f"{Path(path).name}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise OutputError("not a regular file", f"{Path(path).name} is a {_kind(info.st_mode)}")
    return fd, info


def _read_regular(path: Path, max_bytes: int, whole: bool) -> bytes:
    fd, info = _open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        if whole and info.st_size > max_bytes:
            raise OutputError("file size", f"{Path(path).name} has {info.st_size} bytes (at most {max_bytes})")
        data = handle.read(max_bytes + 1)
    if whole and len(data) > max_bytes:  # grew after it was measured
        raise OutputError("file size", f"{Path(path).name} has more than {max_bytes} bytes")
    return data


def read_log_tail(path: Path, max_bytes: int = OutputLimits.log_bytes) -> tuple[str, bool]:
    """The last ``max_bytes`` of a log (text, and whether earlier bytes were left out); never reads more."""
    try:
        fd, info = _open_regular(path)
    except OutputError as exc:
        if exc.rule == "missing":
            return "", False
        raise
    with os.fdopen(fd, "rb") as handle:
        start = max(0, info.st_size - max_bytes)
        handle.seek(start)
        data = handle.read(max_bytes)
    return data.decode("utf-8", "replace"), start > 0


def read_appended(path: Path, offset: int, max_bytes: int = 1 << 20) -> tuple[list[bytes], int]:
    """Complete lines appended to ``path`` since ``offset``, at most ``max_bytes`` of them; and the new offset.

    A line still being written waits for the next call; a line longer than ``max_bytes`` breaks the rule.
    """
    try:
        fd, _info = _open_regular(path)
    except OutputError as exc:
        if exc.rule == "missing":
            return [], offset
        raise
    with os.fdopen(fd, "rb") as handle:
        handle.seek(offset)
        chunk = handle.read(max_bytes)
    complete = chunk[: chunk.rfind(b"\n") + 1]
    if not complete and len(chunk) >= max_bytes:
        raise OutputError("line length", f"{Path(path).name}: a line longer than {max_bytes} bytes")
    return complete.splitlines(), offset + len(complete)


def copy_artifacts(source: Path, dest: Path, limits: OutputLimits = OutputLimits(),
                   skip: Iterable[str] = ()) -> list[Path]:
    """Copy the job's artifacts from ``source`` into the new folder ``dest``; return the copied files.

    Only regular files with an allowed suffix and size, under safe names, in folders; at most
    ``limits.artifact_files`` files and ``limits.artifacts_bytes`` in all. ``skip``: top-level
    names not to copy (read by other means, e.g. ``results.json``). Nothing is followed, nothing
    is written outside ``dest``; on a violation ``dest`` holds what was copied before it.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=False)
    budget = _Budget(limits)
    copied: list[Path] = []
    _copy_folder(Path(source), dest, limits, budget, copied, set(skip), depth=0)
    return copied


@dataclass
class _Budget:
    limits: OutputLimits
    files: int = 0
    total: int = 0

    def take(self, name: str, size: int) -> None:
        self.files += 1
        self.total += size
        if self.files > self.limits.artifact_files:
            raise OutputError("artifact count", f"more than {self.limits.artifact_files} files")
        if self.total > self.limits.artifacts_bytes:
            raise OutputError("artifacts size", f"more than {self.limits.artifacts_bytes} bytes in all (at {name})")


def _copy_folder(source: Path, dest: Path, limits: OutputLimits, budget: _Budget, copied: list[Path],
                 skip: set[str], depth: int) -> None:
    if depth > 4:
        raise OutputError("nesting", f"{source.name}: folders nested deeper than 4")
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if depth == 0 and entry.name in skip:
                continue
            if not SAFE_NAME.match(entry.name):
                raise OutputError("unsafe name", f"artifact name {entry.name[:80]!r}")
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise OutputError("symlink", f"{entry.name} is a symbolic link")
            if stat.S_ISDIR(mode):
                (dest / entry.name).mkdir()
                _copy_folder(Path(entry.path), dest / entry.name, limits, budget, copied, skip, depth + 1)
            elif stat.S_ISREG(mode):
                copied.append(_copy_file(Path(entry.path), dest / entry.name, limits, budget))
            else:
                raise OutputError("not a regular file", f"{entry.name} is a {_kind(mode)}")


def _copy_file(source: Path, target: Path, limits: OutputLimits, budget: _Budget) -> Path:
    allowed = limits.artifact_bytes.get(source.suffix.lower())
    if allowed is None:
        raise OutputError("artifact type", f"{source.name}: files ending {source.suffix or '(nothing)'!r} are "
                                           f"not kept (allowed: {', '.join(sorted(limits.artifact_bytes))})")
    fd, info = _open_regular(source)  # again, on the open file: it may have been swapped since the listing
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > allowed:
            raise OutputError("artifact size", f"{source.name} has {info.st_size} bytes (at most {allowed})")
        budget.take(source.name, info.st_size)
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(out, "wb") as sink:
            remaining = info.st_size  # never more than measured, even if the file grows meanwhile
            while remaining > 0:
                block = handle.read(min(remaining, 1 << 20))
                if not block:
                    break
                sink.write(block)
                remaining -= len(block)
    return target


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return "special file"

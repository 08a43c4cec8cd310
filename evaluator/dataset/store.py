"""Loading a task set into typed objects and writing it back byte for byte."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from evaluator.dataset.files import Limits
from evaluator.dataset.jsonfiles import read_jsonl, same_json
from evaluator.dataset.model import Dataset, DatasetError, LineStyle, Task
from evaluator.dataset.numbering import detect_numbering
from evaluator.dataset.problems import Problem, Problems, Where
from evaluator.dataset.records import SOFT_CODES, RecordParser, task_key


def data_dir_for(path: Path) -> Path:
    """The task folder sits next to the jsonl file and is named after its stem."""
    return path.parent / path.stem


def read_dataset(path: Path, sink: Problems, limits: Limits) -> Dataset | None:
    """Every task the file describes, reporting each defect of the file and its records.

    None when the file itself cannot be read; otherwise a dataset of the usable records.
    """
    where = Where(path.name)
    if path.is_dir():
        hint = f"; did you mean {path / 'data.jsonl'}?" if (path / "data.jsonl").is_file() else ""
        sink.error(where, None, f"is a directory, not a data.jsonl file{hint}", "is_directory")
        return None
    lines, style = read_jsonl(path, where, sink, limits)
    if not lines and sink.errors:
        return None
    parser = RecordParser(data_dir_for(path), path.name, path.stem, sink, limits)
    tasks: list[Task] = []
    first_line: dict[str, tuple[int, object]] = {}
    for line in lines:
        task = parser.parse(line.value, line.number)
        if task is None:
            continue
        task.source_line = line.text
        if task.key in first_line:
            _report_duplicate(task, first_line[task.key], Where(path.name, line.number, task.key), sink)
            continue
        first_line[task.key] = (line.number, task.id)
        tasks.append(task)
    return Dataset(path, data_dir_for(path), tasks, detect_numbering(tasks), style)


def _report_duplicate(task: Task, first: tuple[int, object], where: Where, sink: Problems) -> None:
    line, first_id = first
    if first_id == task.id and type(first_id) is type(task.id):
        message = f"duplicate id {json.dumps(task.id)} (first used on line {line})"
    else:
        message = f"id {json.dumps(task.id)} names the same folder as id {json.dumps(first_id)} on line {line}"
    sink.error(where, "id", message, "duplicate_id")


def load_dataset(path: str | Path, limits: Limits | None = None) -> Dataset:
    """Read a task set (data.jsonl and its folder) into typed objects.

    Raises DatasetError naming the first defect that makes it unusable. Only records and
    the few files needed to type them are read; ``validate_dataset`` checks every file.
    """
    path = Path(path)
    sink = Problems()
    try:
        dataset = read_dataset(path, sink, limits or Limits())
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror})") from None
    blocking = [problem for problem in sink.errors if problem.code not in SOFT_CODES]
    if blocking or dataset is None:
        raise DatasetError(_one_line(path, blocking))
    if not dataset.tasks:
        raise DatasetError(f"{path}: no tasks")
    return dataset


def _one_line(path: Path, problems: list[Problem]) -> str:
    first = problems[0] if problems else Problem("cannot be read", file=path.name)
    prefix = "" if str(path.parent) == "." else f"{path.parent}/"
    more = len(problems) - 1
    if more:
        return (f"{prefix}{first} (and {more} more problem{'s' * (more > 1)}; "
                f"`python -m evaluator validate --data {path}` lists them all)")
    return f"{prefix}{first}"


def render_jsonl(dataset: Dataset) -> str:
    """The text of data.jsonl: unchanged records exactly as read, changed ones in the file's style."""
    style = dataset.style
    lines = [_record_text(task, style) for task in dataset.tasks]
    body = style.newline.join(lines) + (style.newline if lines and style.final_newline else "")
    return ("\ufeff" if style.bom else "") + body


def _record_text(task: Task, style: LineStyle) -> str:
    if task.source_line is not None and same_json(task.source_line, task.raw):
        return task.source_line
    return style.dumps(task.raw)


def write_dataset(dataset: Dataset, path: str | Path | None = None, *, copy_files: bool = False) -> Path:
    """Write the dataset's data.jsonl (to its own path by default), replacing it atomically.

    With ``copy_files`` each task's folder is copied next to the new file as well, so the
    written task set is complete.
    """
    target = Path(path) if path is not None else dataset.path
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, render_jsonl(dataset).encode("utf-8"))
    if copy_files:
        _copy_task_files(dataset, data_dir_for(target))
    return target


def atomic_write(target: Path, data: bytes) -> None:
    """Replace ``target`` in one step; readers see the old file or the new one, never half of it.

    The file is made world-readable (temporary files start as 0600): job directories hand data
    sets to a sandboxed or containerised evaluator running as another user.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(data)
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, target)
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)


def _copy_task_files(dataset: Dataset, data_dir: Path) -> None:
    for task in dataset.tasks:
        destination = data_dir / task.key
        if task.root.is_dir() and task.root.resolve() != destination.resolve():
            shutil.copytree(task.root, destination, symlinks=True, dirs_exist_ok=True)


def append_record(path: str | Path, record: dict, limits: Limits | None = None) -> Task:
    """Add one task record at the end of a data.jsonl (created if missing), in the file's style.

    Refuses (DatasetError) a record with blocking defects or an id already in the file.
    """
    path, limits = Path(path), limits or Limits()
    record = _plain_json(record)
    sink = Problems()
    existing, style = _existing_lines(path, sink, limits)
    task = RecordParser(data_dir_for(path), path.name, path.stem, sink, limits).parse(record, len(existing) + 1)
    blocking = [problem for problem in sink.errors if problem.code not in SOFT_CODES]
    if blocking or task is None:
        raise DatasetError(_one_line(path, blocking))
    if task.key in {task_key(line.value.get("id"))[0] for line in existing}:
        raise DatasetError(f"{path}: a task with id {json.dumps(task.id)} is already there")
    text = style.dumps(record) + style.newline
    with open(path, "ab+") as handle:
        if handle.seek(0, os.SEEK_END):
            handle.seek(-1, os.SEEK_END)
            text = text if handle.read(1) == b"\n" else style.newline + text
        handle.write(text.encode("utf-8"))
    return task


def _plain_json(record: object) -> dict:
    if not isinstance(record, dict):
        raise DatasetError("a task record must be a JSON object (a dict)")
    try:
        return json.loads(json.dumps(record, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"the task record cannot be written as JSON: {exc}") from None


def _existing_lines(path: Path, sink: Problems, limits: Limits):
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return [], LineStyle()
    lines, style = read_jsonl(path, Where(path.name), sink, limits)
    if sink.errors:
        raise DatasetError(_one_line(path, sink.errors))
    return lines, style

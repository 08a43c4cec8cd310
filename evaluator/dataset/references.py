"""Optional reference data (data/<id>/reference/step_k.json) and asset names found in data.

Reference data, written when a task is authored, describes a checkpoint for the
deterministic judge: {"url", "scroll": [x, y], "viewport": [w, h], "text",
"blocks": [{"text", "box": [x, y, w, h], "color": [r, g, b], "bg": [r, g, b]}]}.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

from evaluator.dataset.files import Limits
from evaluator.dataset.jsonfiles import read_json_object, wrong_type
from evaluator.dataset.model import Task
from evaluator.dataset.problems import Problems, Where

# A page refers to assets through the placeholder of the generation prompt or, once
# prepared, through the URL prefix the page server answers (see evaluator.bundle).
_PREFIXED = re.compile(r"(?:__PLACEHOLDER_ASSETS_BASE_DIR__|/__assets__)/([^\s\"'<>()?#]+)")
# Anonymised crawl names, as in the official data (asset001.png).
_ANONYMISED = re.compile(r"(?<![\w.-])(asset[_-]?\d+\.[A-Za-z0-9]{2,5})(?![\w.-])", re.I)
_FILE_NAME = re.compile(r"^[^\s\\]+\.[A-Za-z0-9]{2,5}$")
_STEP_JSON = re.compile(r"^reference/step_(\d+)\.json$")


def asset_references(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    """(JSON path, asset name) for every asset a record or reference file names."""
    seen: set[tuple[str, str]] = set()
    for found in _walk(value, path):
        if found not in seen:
            seen.add(found)
            yield found


def _walk(value: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else str(key)
            if "asset" in str(key).lower():
                yield from _listed_names(child, child_path)
            yield from _walk(child, child_path)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, f"{path}[{index}]")
    elif isinstance(value, str):
        for match in _PREFIXED.finditer(value):
            yield path, unquote(match[1])
        for match in _ANONYMISED.finditer(value):
            if not _inside_url(value, match.start()):
                yield path, match[1]


def _inside_url(text: str, position: int) -> bool:
    """True inside an asset URL (already reported) or a web address (not an asset of the task)."""
    if any(match.start() <= position < match.end() for match in _PREFIXED.finditer(text)):
        return True
    start = max(text.rfind(" ", 0, position), text.rfind("\n", 0, position)) + 1
    return "://" in text[start:position]


def _listed_names(value: object, path: str) -> Iterator[tuple[str, str]]:
    """Under a key that says "asset", plain file names are asset names too."""
    items = value if isinstance(value, list) else [value]
    for index, item in enumerate(items):
        if isinstance(item, str) and _FILE_NAME.match(item) and "://" not in item:
            yield (f"{path}[{index}]" if isinstance(value, list) else path), item.removeprefix("assets/")


def check_reference(task: Task, relative: str, steps: set[int], where: Where, sink: Problems,
                    limits: Limits) -> dict | None:
    """Check one reference file; its content when usable."""
    match = _STEP_JSON.match(relative)
    if not match or relative != f"reference/step_{int(match[1])}.json":
        # The reference folder may hold other private material (the authored page itself).
        if relative.startswith("reference/step_"):
            sink.warn(where, None, "is not named step_<k>.json with k a plain number (ignored)", "reference_name")
        return None
    data = read_json_object(task.root / Path(relative), where, sink, limits.json_bytes)
    if data is None:
        return None
    if int(match[1]) not in steps:
        sink.warn(where, None, f"describes step {int(match[1])}, which has no checkpoint", "reference_orphan")
    for field, message in _schema_problems(data):
        sink.error(where, field, message, "reference")
    return data


def _schema_problems(data: dict) -> Iterator[tuple[str, str]]:
    for name, expected, test in (
        ("url", "a string", _is_str),
        ("text", "a string", _is_str),
        ("scroll", "[x, y] numbers", lambda v: _numbers(v, 2)),
        ("viewport", "[width, height] integers", lambda v: _numbers(v, 2, integers=True)),
        ("blocks", "an array of text blocks", lambda v: isinstance(v, list)),
    ):
        if name not in data:
            yield name, f"missing (expected {expected})"
        elif not test(data[name]):
            yield name, wrong_type(expected, data[name])
    if isinstance(data.get("blocks"), list):
        for index, block in enumerate(data["blocks"]):
            yield from _block_problems(block, f"blocks[{index}]")


def _block_problems(block: object, path: str) -> Iterator[tuple[str, str]]:
    if not isinstance(block, dict):
        yield path, wrong_type("an object", block)
        return
    for name, expected, test in (
        ("text", "a string", _is_str),
        ("box", "[x, y, w, h] numbers", lambda v: _numbers(v, 4)),
        ("color", "[r, g, b] integers 0..255", _rgb),
        ("bg", "[r, g, b] integers 0..255", _rgb),
    ):
        if name not in block:
            yield f"{path}.{name}", f"missing (expected {expected})"
        elif not test(block[name]):
            yield f"{path}.{name}", wrong_type(expected, block[name])


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _numbers(value: object, count: int, integers: bool = False) -> bool:
    kinds = (int,) if integers else (int, float)
    return (isinstance(value, list) and len(value) == count
            and all(isinstance(v, kinds) and not isinstance(v, bool) for v in value))


def _rgb(value: object) -> bool:
    return _numbers(value, 3, integers=True) and all(0 <= v <= 255 for v in value)

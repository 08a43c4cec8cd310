"""Reading JSON and JSON Lines files defensively: any bytes in, problems out, no traceback."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path

from evaluator.dataset.files import human_size, regular_file_size
from evaluator.dataset.model import LineStyle
from evaluator.dataset.problems import Problems, Where

# The spellings json.dumps produces, tried in order to learn a file's style.
_STYLES = [
    (False, (", ", ": ")), (True, (", ", ": ")), (False, (",", ":")), (True, (",", ":")),
]
_BINARY_PROBE = 8192
# Task records nest about five levels deep; far deeper input is garbage (and deep
# recursion would crash the walkers that read it).
MAX_DEPTH = 64


class UnusableJson(ValueError):
    """Parsed JSON that still cannot be used (too deep, not valid Unicode)."""


@dataclass
class JsonLine:
    number: int
    text: str
    value: object


class _StrictDecode:
    """json.loads that also notes repeated keys and refuses NaN and Infinity."""

    def __init__(self):
        self.duplicates: list[str] = []

    def pairs(self, pairs: list[tuple[str, object]]) -> dict:
        result = {}
        for key, value in pairs:
            if key in result:
                self.duplicates.append(key)
            result[key] = value
        return result

    @staticmethod
    def constant(name: str) -> None:
        raise ValueError(f"{name} is not valid JSON")

    def loads(self, text: str) -> object:
        try:
            value = json.loads(text, object_pairs_hook=self.pairs, parse_constant=self.constant)
        except RecursionError:
            raise UnusableJson(f"nested deeper than {MAX_DEPTH} levels") from None
        check_structure(value)
        return value


def check_structure(value: object) -> None:
    """Refuse nesting deeper than MAX_DEPTH and lone surrogates (\\ud800 escapes), without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnusableJson(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str) and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise UnusableJson("holds a lone surrogate escape, which is not valid Unicode text") from None


def json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc.msg} (column {exc.colno})"
    if isinstance(exc, UnusableJson):
        return str(exc)
    return f"not valid JSON: {exc}"


def read_bytes(path: Path, where: Where, sink: Problems, limit: int, follow: bool = False) -> bytes | None:
    """The file's bytes, or None after reporting why they cannot be had."""
    size = regular_file_size(path, follow=follow)
    if size is None:
        sink.error(where, None, _not_a_file(path), "missing_file")
        return None
    if size > limit:
        sink.error(where, None, f"is {human_size(size)}, over the limit of {human_size(limit)}", "too_large")
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        sink.error(where, None, f"cannot be read ({exc.strerror})", "unreadable")
        return None


def _not_a_file(path: Path) -> str:
    if path.is_symlink():
        return "is a symbolic link (not allowed inside a task set)"
    if not path.exists():
        return "does not exist"
    return "is a directory, not a file" if path.is_dir() else "is not a regular file"


def read_json_object(path: Path, where: Where, sink: Problems, limit: int, optional: bool = False) -> dict | None:
    """A JSON file holding one object; None (after reporting) when it does not."""
    if optional and not path.exists() and not path.is_symlink():
        return None
    data = read_bytes(path, where, sink, limit)
    if data is None:
        return None
    try:
        value = _StrictDecode().loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        sink.error(where, None, "is not UTF-8 text", "encoding")
        return None
    except ValueError as exc:
        sink.error(where, None, json_error(exc), "json")
        return None
    if not isinstance(value, dict):
        sink.error(where, None, "must hold a JSON object", "type")
        return None
    return value


def read_jsonl(path: Path, where: Where, sink: Problems, limits) -> tuple[list[JsonLine], LineStyle]:
    """Every object line of a JSON Lines file (line numbers from 1) and the file's style."""
    data = read_bytes(path, where, sink, limits.jsonl_bytes, follow=True)
    if data is None:
        return [], LineStyle()
    bom = data.startswith(codecs.BOM_UTF8)
    data = data[len(codecs.BOM_UTF8):] if bom else data
    if b"\x00" in data[:_BINARY_PROBE]:
        sink.error(where, None, "is a binary file, not JSON Lines text", "binary")
        return [], LineStyle()
    if not data.strip():
        sink.error(where, None, "is empty: a task set needs one JSON object per line", "empty")
        return [], LineStyle()
    raw_lines = data.split(b"\n")
    final_newline = data.endswith(b"\n")
    if final_newline:
        raw_lines.pop()
    lines = [line for number, raw in enumerate(raw_lines, 1)
             if (line := _parse_line(number, raw, where, sink, limits.line_bytes)) is not None]
    newline = "\r\n" if raw_lines[0].endswith(b"\r") else "\n"
    return lines, _detect_style(lines, bom=bom, newline=newline, final_newline=final_newline)


def _parse_line(number: int, raw: bytes, file: Where, sink: Problems, limit: int) -> JsonLine | None:
    where = Where(file.file, number)
    raw = raw.removesuffix(b"\r")
    if len(raw) > limit:
        sink.error(where, None, f"line is {human_size(len(raw))}, over the limit of {human_size(limit)}", "too_large")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        sink.error(where, None, f"is not UTF-8 text (byte {exc.start + 1})", "encoding")
        return None
    if not text.strip():
        sink.warn(where, None, "blank line (ignored)", "blank_line")
        return None
    decoder = _StrictDecode()
    try:
        value = decoder.loads(text)
    except ValueError as exc:
        sink.error(where, None, json_error(exc), "json")
        return None
    if not isinstance(value, dict):
        sink.error(where, None, f"expected a JSON object (one task per line), got {type_name(value)}", "not_object")
        return None
    for key in dict.fromkeys(decoder.duplicates):
        sink.error(where, None, f"key {key!r} appears more than once in one object", "duplicate_key")
    return JsonLine(number, text, value)


def type_name(value: object) -> str:
    """How a JSON value's type reads in a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def wrong_type(expected: str, value: object) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"expected {expected}, got {type_name(value)} ({shown})"


def _detect_style(lines: list[JsonLine], **layout) -> LineStyle:
    for line in lines[:1]:
        for ensure_ascii, separators in _STYLES:
            style = LineStyle(ensure_ascii, separators, **layout)
            if style.dumps(line.value) == line.text:
                return style
    return LineStyle(**layout)


def same_json(text: str, value: object) -> bool:
    """True when ``text`` parses to exactly ``value`` (booleans and numbers kept apart)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return json.dumps(parsed, sort_keys=True) == json.dumps(value, sort_keys=True)

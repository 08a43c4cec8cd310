"""Reading one data.jsonl record into a :class:`Task`, reporting every field defect.

Parsing never raises: each defect becomes a :class:`Problem` and the field gets a
neutral value, so one pass finds all of a record's problems. Label strings
(interaction level, visual complexity, domain) are taken as the data spells them.
"""

from __future__ import annotations

import re
from pathlib import Path

from evaluator.dataset.files import Limits
from evaluator.dataset.jsonfiles import read_json_object, wrong_type
from evaluator.dataset.model import ACTION_TYPES, DEFAULT_RESOLUTION, Action, Task
from evaluator.dataset.problems import Problems, Where

# Problems a record may have and still be loaded for scoring: the official judge lets an
# LLM fill these gaps, so refusing the whole task set over them would be too strict.
SOFT_CODES = frozenset({"type_without_text", "press_without_key", "duplicate_key"})

_RESOLUTION = re.compile(r"^\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*$")
_MIN_SIDE, _MAX_SIDE = 64, 8192
_MAX_KEY_LENGTH = 128
_LABELS = ("interaction_complexity", "visual_complexity", "domain")
_OPTIONAL_PARAMETERS = ("text", "key", "direction", "scroll_page")


def parse_resolution(value: object) -> tuple[int, int] | str:
    """(width, height) from a "WxH" string, or the reason it is not one."""
    if not isinstance(value, str):
        return wrong_type('a "WxH" string', value)
    match = _RESOLUTION.match(value)
    if not match:
        return f'resolution {value!r} is not "WxH" (for example "1920x1080")'
    width, height = int(match[1]), int(match[2])
    if not (_MIN_SIDE <= width <= _MAX_SIDE and _MIN_SIDE <= height <= _MAX_SIDE):
        return f"resolution {value!r} is outside {_MIN_SIDE}..{_MAX_SIDE} pixels per side"
    return width, height


def task_key(value: object) -> tuple[str | None, str | None]:
    """(key, None) for a usable task id, else (None, why not).

    The key names the task's folder, so it must not be able to point outside it.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None, wrong_type("a string or an integer", value)
    key = str(value)
    unsafe = (
        not key.strip() or key != key.strip() or key.startswith(".") or "/" in key or "\\" in key
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in key) or len(key) > _MAX_KEY_LENGTH
    )
    if unsafe:
        return None, f"id {key!r} cannot name a folder (empty, too long, leading dot, slash or control character)"
    return key, None


class RecordParser:
    """Parses records of one data.jsonl, reporting into one :class:`Problems`."""

    def __init__(self, data_dir: Path, data_file: str, rel_data_dir: str, sink: Problems, limits: Limits):
        self.limits = limits
        self.data_dir = data_dir
        self.data_file = data_file
        self.rel_data_dir = rel_data_dir
        self.sink = sink

    def parse(self, record: dict, line: int) -> Task | None:
        """The task a record describes; None when it has no usable id."""
        key, why = task_key(record.get("id")) if "id" in record else (None, "missing (expected a string or an integer)")
        where = Where(self.data_file, line, key)
        if why:
            self.sink.error(where, "id", why, "id")
        labels = self._labels(record, where)
        resolution, environment = self._recording(record, where)
        source = self._optional_str(record, "source_website", where, warn_missing=True)
        actions = self._actions(record, where)
        if key is None:
            return None
        task = Task(
            id=record["id"], key=key, **labels, environment=environment, source_website=source or "",
            width=DEFAULT_RESOLUTION[0], height=DEFAULT_RESOLUTION[1], actions=actions, raw=record,
            root=self.data_dir / key, line=line,
        )
        self._resolve_resolution(task, resolution)
        return task

    # -- top-level fields -------------------------------------------------------------

    def _labels(self, record: dict, where: Where) -> dict:
        block = record.get("classification")
        labels = dict.fromkeys((*_LABELS, "sub_domain"), "")
        if not isinstance(block, dict):
            self._bad(where, "classification", block, "an object", "classification" in record)
            return labels
        for name in _LABELS:
            value = block.get(name)
            if isinstance(value, str) and value.strip():
                labels[name] = value
            elif isinstance(value, str):
                self.sink.error(where, f"classification.{name}", "is empty", "empty_field")
            else:
                self._bad(where, f"classification.{name}", value, "a string", name in block)
        labels["sub_domain"] = self._optional_str(block, "sub_domain", where, "classification.", True) or ""
        return labels

    def _recording(self, record: dict, where: Where) -> tuple[tuple[int, int] | None, str]:
        block = record.get("recording_details")
        if block is None:
            return None, ""
        if not isinstance(block, dict):
            self._bad(where, "recording_details", block, "an object", True)
            return None, ""
        environment = self._optional_str(block, "environment", where, prefix="recording_details.") or ""
        if block.get("resolution") is None:
            return None, environment
        parsed = parse_resolution(block["resolution"])
        if isinstance(parsed, str):
            self.sink.error(where, "recording_details.resolution", parsed, "resolution")
            return None, environment
        return parsed, environment

    def _resolve_resolution(self, task: Task, resolution: tuple[int, int] | None) -> None:
        """Record first, then metadata.json, then the default (the official order)."""
        if resolution is None:
            resolution = self._metadata_resolution(task)
            task.resolution_source = "metadata" if resolution else "default"
        if resolution:
            task.width, task.height = resolution

    def _metadata_resolution(self, task: Task) -> tuple[int, int] | None:
        where = Where(f"{self.rel_data_dir}/{task.key}/metadata.json", None, task.key)
        metadata = read_json_object(task.metadata_path, where, self.sink, self.limits.json_bytes, optional=True)
        details = (metadata or {}).get("recording_details")
        if not isinstance(details, dict) or details.get("resolution") is None:
            return None
        parsed = parse_resolution(details["resolution"])
        if isinstance(parsed, str):
            self.sink.error(where, "recording_details.resolution", parsed, "resolution")
            return None
        return parsed

    # -- actions ----------------------------------------------------------------------

    def _actions(self, record: dict, where: Where) -> list[Action]:
        sequence = record.get("action_sequence")
        if not isinstance(sequence, list):
            self._bad(where, "action_sequence", sequence, "an array of actions", "action_sequence" in record)
            return []
        if not sequence:
            self.sink.error(where, "action_sequence", "has no actions", "no_actions")
        actions = []
        for index, raw in enumerate(sequence):
            action = self._action(raw, where, f"action_sequence[{index}]")
            if action is not None:
                actions.append(action)
        return actions

    def _action(self, raw: object, where: Where, path: str) -> Action | None:
        if not isinstance(raw, dict):
            self.sink.error(where, path, wrong_type("an object", raw), "type")
            return None
        kind = self._action_type(raw, where, path)
        params = raw.get("parameters")
        if not isinstance(params, dict):
            self._bad(where, f"{path}.parameters", params, "an object", "parameters" in raw)
            params = {}
        values = {name: self._optional_str(params, name, where, prefix=f"{path}.parameters.")
                  for name in _OPTIONAL_PARAMETERS}
        action = Action(
            type=kind, **values,
            description=self._optional_str(params, "description", where, prefix=f"{path}.parameters.") or "",
            element_index=self._element_index(params, where, path),
            visual_evaluation_flag=self._flag(raw, where, path),
            logical_assertion=self._assertion(raw, where, path), raw=raw,
        )
        self._check_needs(action, where, path)
        return action

    def _action_type(self, raw: dict, where: Where, path: str) -> str:
        kind = raw.get("type")
        if not isinstance(kind, str):
            self._bad(where, f"{path}.type", kind, "an action type", "type" in raw)
            return ""
        if kind not in ACTION_TYPES:
            close = [name for name in ACTION_TYPES if name.lower() == kind.strip().lower()]
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.sink.error(where, f"{path}.type",
                            f"unknown action type {kind!r} (expected one of {', '.join(ACTION_TYPES)}){hint}",
                            "action_type")
        return kind

    def _element_index(self, params: dict, where: Where, path: str) -> int | None:
        value = params.get("element_index")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.sink.error(where, f"{path}.parameters.element_index",
                            wrong_type("a non-negative integer", value), "type")
            return None
        return value

    def _flag(self, raw: dict, where: Where, path: str) -> bool:
        value = raw.get("visual_evaluation_flag")
        if isinstance(value, bool):
            return value
        self._bad(where, f"{path}.visual_evaluation_flag", value, "true or false", "visual_evaluation_flag" in raw)
        return False

    def _assertion(self, raw: dict, where: Where, path: str) -> str | None:
        value = self._optional_str(raw, "logical_assertion", where, prefix=f"{path}.")
        return value if value and value.strip() else None

    def _check_needs(self, action: Action, where: Where, path: str) -> None:
        """Each action type needs some parameters to be replayed without a language model."""
        params = f"{path}.parameters"
        if action.type == "Click" and not action.description.strip():
            self.sink.error(where, f"{params}.description", "Click action has no description of its target",
                            "click_without_description")
        if action.type == "Type" and not action.text:
            self.sink.error(where, f"{params}.text", "Type action has no text to type", "type_without_text")
        if action.type == "Press" and not action.key and not action.description.strip():
            self.sink.error(where, f"{params}.key", "Press action has neither a key nor a description",
                            "press_without_key")

    # -- helpers ----------------------------------------------------------------------

    def _optional_str(self, block: dict, name: str, where: Where, prefix: str = "",
                      warn_missing: bool = False) -> str | None:
        value = block.get(name)
        if value is None:
            if warn_missing:
                self.sink.warn(where, prefix + name, "missing", "missing_field")
            return None
        if not isinstance(value, str):
            self.sink.error(where, prefix + name, wrong_type("a string", value), "type")
            return None
        return value

    def _bad(self, where: Where, field: str, value: object, expected: str, present: bool) -> None:
        if present:
            self.sink.error(where, field, wrong_type(expected, value), "type")
        else:
            self.sink.error(where, field, f"missing (expected {expected})", "missing_field")

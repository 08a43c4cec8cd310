"""Authoring scripts: the JSON a task author writes, and the published record made from it.

A script holds everything the published record holds (classification, resolution,
source website, the official action schema) plus, per action, a CSS ``selector`` that
tells the recorder which element to act on. The selector is for recording only: the
published record describes elements in words, as the official data does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

ACTION_TYPES = ("Click", "Type", "Scroll", "Press")
INTERACTION_LEVELS = ("L1", "L2", "L3", "L4")
VISUAL_LEVELS = ("V1", "V2", "V3", "V4")
DEFAULT_ENVIRONMENT = "desktop, Chromium (headless, recorded by the IWR-Bench authoring tool)"
DEFAULT_PACE_MS = 1000
# Ids become folder names and URL parts: keep them to a safe alphabet.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# Keys of an action object that are for the recorder only and never published.
RECORDING_ONLY_KEYS = ("selector",)


class AuthoringError(Exception):
    """The authoring inputs cannot be used; the message is one line a person can act on."""


@dataclass
class ScriptAction:
    """One scripted action: the official fields plus the recorder's selector."""

    type: str
    parameters: dict
    visual_evaluation_flag: bool
    logical_assertion: str | None
    selector: str | None
    raw: dict = field(repr=False)

    def published(self) -> dict:
        """The action as it appears in the published record (recording-only keys removed)."""
        return {key: value for key, value in self.raw.items() if key not in RECORDING_ONLY_KEYS}


@dataclass
class Script:
    """A parsed authoring script."""

    id: str | int | None
    source_website: str
    width: int
    height: int
    environment: str
    classification: dict
    actions: list[ScriptAction]
    pace_ms: int
    raw: dict = field(repr=False)

    @property
    def resolution(self) -> str:
        return f"{self.width}x{self.height}"

    def record(self, task_id: str | int) -> dict:
        """The published data.jsonl record for this script under ``task_id``."""
        return {
            "id": task_id,
            "classification": dict(self.classification),
            "recording_details": {"resolution": self.resolution, "environment": self.environment},
            "source_website": self.source_website,
            "action_sequence": [action.published() for action in self.actions],
        }


def load_script(path: Path) -> Script:
    """Read and check an authoring script; raises AuthoringError naming the first problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AuthoringError(f"script not found: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AuthoringError(f"script {path} is not readable JSON: {exc}") from None
    return parse_script(data, where=str(path))


def parse_script(data: object, where: str = "script") -> Script:
    """Check a script given as parsed JSON and return it as a Script."""
    if not isinstance(data, dict):
        raise AuthoringError(f"{where}: top level must be a JSON object")
    width, height = parse_resolution(data.get("resolution", "1280x720"), where)
    task_id = data.get("id")
    if task_id is not None:
        check_task_id(task_id, where)
    actions = data.get("action_sequence")
    if not isinstance(actions, list) or not actions:
        raise AuthoringError(f"{where}: action_sequence must be a non-empty list")
    return Script(
        id=task_id,
        source_website=_required_text(data, "source_website", where),
        width=width,
        height=height,
        environment=data.get("environment") or DEFAULT_ENVIRONMENT,
        classification=_classification(data.get("classification"), where),
        actions=[_action(item, f"{where}: action {k}") for k, item in enumerate(actions, start=1)],
        pace_ms=_pace(data.get("pace_ms", DEFAULT_PACE_MS), where),
        raw=data,
    )


def parse_resolution(value: object, where: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{2,5})\s*[xX×]\s*(\d{2,5})\s*", str(value))
    if not match:
        raise AuthoringError(f"{where}: resolution must look like 1280x720, got {value!r}")
    width, height = int(match.group(1)), int(match.group(2))
    if not (200 <= width <= 3840 and 200 <= height <= 2160):
        raise AuthoringError(f"{where}: resolution {width}x{height} is outside 200x200..3840x2160")
    return width, height


def check_task_id(task_id: object, where: str = "task") -> None:
    if isinstance(task_id, bool) or not isinstance(task_id, (str, int)) or not ID_PATTERN.match(str(task_id)):
        raise AuthoringError(
            f"{where}: id must be an integer or a name of letters, digits, '.', '_' or '-', got {task_id!r}"
        )


def _required_text(data: dict, key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AuthoringError(f"{where}: {key} must be a non-empty string")
    return value


def _classification(value: object, where: str) -> dict:
    if not isinstance(value, dict):
        raise AuthoringError(f"{where}: classification must be an object")
    levels = {"interaction_complexity": INTERACTION_LEVELS, "visual_complexity": VISUAL_LEVELS}
    for key, allowed in levels.items():
        if value.get(key) not in allowed:
            raise AuthoringError(f"{where}: classification.{key} must be one of {', '.join(allowed)}")
    for key in ("domain", "sub_domain"):
        _required_text(value, key, f"{where}: classification")
    return value


def _pace(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
        raise AuthoringError(f"{where}: pace_ms must be an integer from 0 to 10000")
    return value


def _action(item: object, where: str) -> ScriptAction:
    if not isinstance(item, dict):
        raise AuthoringError(f"{where}: must be an object")
    kind = item.get("type")
    if kind not in ACTION_TYPES:
        raise AuthoringError(f"{where}: type must be one of {', '.join(ACTION_TYPES)}, got {kind!r}")
    params = item.get("parameters")
    if not isinstance(params, dict):
        raise AuthoringError(f"{where}: parameters must be an object")
    _required_text(params, "description", f"{where}: parameters")
    if kind == "Type":
        _required_text(params, "text", f"{where}: parameters")
    if kind == "Press":
        _required_text(params, "key", f"{where}: parameters")
    selector = item.get("selector")
    if kind in ("Click", "Type") and not (isinstance(selector, str) and selector.strip()):
        raise AuthoringError(f"{where}: a {kind} action needs a CSS selector to record it")
    if selector is not None and not isinstance(selector, str):
        raise AuthoringError(f"{where}: selector must be a string")
    if kind == "Scroll" and selector:
        raise AuthoringError(f"{where}: Scroll takes no selector (it always moves the page half a screen down)")
    flag = item.get("visual_evaluation_flag")
    if not isinstance(flag, bool):
        raise AuthoringError(f"{where}: visual_evaluation_flag must be true or false")
    assertion = item.get("logical_assertion")
    if assertion is not None and not (isinstance(assertion, str) and assertion.strip()):
        raise AuthoringError(f"{where}: logical_assertion must be a non-empty string or null")
    return ScriptAction(kind, params, flag, assertion, selector, raw=item)

"""The generation report (``generation.json``): settings used, every task's outcome, a summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

from evaluator import __version__
from evaluator.bundle import PAGE_NAME
from evaluator.generation.config import EndpointConfig

PROMPT_VERSION = "1"
REPORT_NAME = "generation.json"


def new_report(config: EndpointConfig, previous: dict | None = None) -> dict:
    tasks = {}
    if previous and _same_output(previous.get("endpoint") or {}, config.public_settings()):
        tasks = {key: value for key, value in previous.get("tasks", {}).items() if value.get("status") == "ok"}
    notes = list(previous.get("notes") or []) if tasks and previous else []
    return {"generator": f"iwr-bench evaluator {__version__}", "prompt_version": PROMPT_VERSION,
            "endpoint": config.public_settings(), "tasks": tasks, "notes": notes, "summary": {}}


def _same_output(before: dict, now: dict) -> bool:
    """Pages of a previous run are kept only if made with the settings that shape a page."""
    shaping = ("base_url", "model", "max_tokens", "max_images", "max_frames", "temperature", "frame_rate")
    return all(before.get(name) == now.get(name) for name in shaping)


def read_report(out_dir: Path) -> dict | None:
    try:
        report = json.loads((Path(out_dir) / REPORT_NAME).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None
    return report if isinstance(report, dict) and isinstance(report.get("tasks"), dict) else None


def write_report(out_dir: Path, report: dict) -> Path:
    path = Path(out_dir) / REPORT_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def summarize(tasks: dict) -> dict:
    usage: dict[str, int] = {}
    for outcome in tasks.values():
        for name, value in (outcome.get("usage") or {}).items():
            usage[name] = usage.get(name, 0) + value
    ok = sum(1 for outcome in tasks.values() if outcome.get("status") == "ok")
    # The protocol asks for temperature 0: say when any page was made at the model's default instead.
    default = any((outcome.get("request") or {}).get("temperature") == "default" for outcome in tasks.values()
                  if outcome.get("status") == "ok")
    return {"tasks": len(tasks), "ok": ok, "failed": len(tasks) - ok, "usage": usage,
            "temperature": "default" if default else 0}


def pages_of(out_dir: Path | str, report: dict) -> dict[str, Path]:
    """Task key -> generated index.html for every task that got a page."""
    out_dir = Path(out_dir)
    return {key: out_dir / key / PAGE_NAME for key, outcome in report["tasks"].items()
            if outcome.get("status") == "ok" and (out_dir / key / PAGE_NAME).is_file()}

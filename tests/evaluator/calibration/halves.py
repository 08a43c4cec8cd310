"""The committed split of the calibration corpus (``halves.json``) and the CI subset.

Halves are made of whole sites (a site's tasks share code and quirks: a judge tuned on one
of its pages has in effect seen the others). ``IWR_CALIBRATION=full`` makes the test suite
score every task instead of the CI subset.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

HALVES_FILE = Path(__file__).resolve().parent / "halves.json"
HALF_NAMES = ("tuning", "held_out")
FULL_ENV = "IWR_CALIBRATION"


def load() -> dict:
    return json.loads(HALVES_FILE.read_text(encoding="utf-8"))


def half_tasks(half: str) -> list[str]:
    if half not in HALF_NAMES:
        raise ValueError(f"unknown half {half!r}: use one of {', '.join(HALF_NAMES)}")
    return list(load()["halves"][half]["tasks"])


def half_of(task_key: str) -> str:
    for half in HALF_NAMES:
        if task_key in load()["halves"][half]["tasks"]:
            return half
    raise KeyError(f"{task_key} is in no half of {HALVES_FILE.name}")


def ci_subset() -> list[str]:
    return list(load()["ci_subset"])


def full_corpus_requested() -> bool:
    return os.environ.get(FULL_ENV, "").strip().lower() == "full"


def site_host(source_website: str) -> str:
    """The host a task's ``source_website`` names (what a half is made of)."""
    return (urlsplit(source_website).hostname or "").lower()

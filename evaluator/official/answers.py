"""Reading the judge's answers the official way; each quirk that decides a verdict is recorded.

- grounding: ``{"index": N}`` (or a bare number); anything else fails the step, as the official agent;
- assertion: ``{"answer": "Yes"|"No"}`` (or a leading Yes/No word); an unparseable answer PASSES
  (official quirk ``unparseable_assertion_pass``);
- rubric: "Score: 73/100", ``{"score": 73}``; an unparseable score is 0 (official quirk
  ``unparseable_rubric_zero``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

QUIRK_ASSERTION = "unparseable_assertion_pass"
QUIRK_RUBRIC = "unparseable_rubric_zero"


@dataclass(frozen=True)
class Verdict:
    value: object  # the parsed value (int index, bool, score 0-100, str) or None
    raw: str
    quirk: str | None = None


def json_object(text: str) -> dict | None:
    """The first JSON object in ``text`` (fenced or bare), if any."""
    for match in re.finditer(r"\{[^{}]*\}", text or ""):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def parse_index(text: str, count: int) -> int | None:
    found = json_object(text)
    value = found.get("index") if found is not None else _bare_number(text)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value < count else None


def _bare_number(text: str):
    match = re.fullmatch(r"\s*\[?(\d+)\]?\s*\.?\s*", text or "")
    return int(match.group(1)) if match else None


def parse_point(text: str, width: int, height: int) -> tuple[float, float] | None:
    found = json_object(text) or {}
    x, y = found.get("x"), found.get("y")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (x, y)):
        return None
    return (float(x), float(y)) if 0 <= x < width and 0 <= y < height else None


def parse_string(text: str, field: str) -> str | None:
    found = json_object(text) or {}
    value = found.get(field)
    return value if isinstance(value, str) and value else None


def parse_assertion(text: str) -> Verdict:
    found = json_object(text)
    word = found.get("answer") if found is not None else None
    if not isinstance(word, str):
        match = re.match(r"\W*(yes|no)\b", text or "", re.IGNORECASE)
        word = match.group(1) if match else None
    if isinstance(word, str) and word.strip().lower() in ("yes", "no"):
        return Verdict(word.strip().lower() == "yes", text)
    return Verdict(True, text, QUIRK_ASSERTION)


def parse_rubric(text: str) -> Verdict:
    match = re.search(r"score\s*[:=]\s*(\d{1,3}(?:\.\d+)?)\s*(?:/\s*100)?", text or "", re.IGNORECASE)
    value = float(match.group(1)) if match else None
    if value is None:
        found = json_object(text) or {}
        score = found.get("score")
        value = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
    if value is None or not 0 <= value <= 100:
        return Verdict(0.0, text, QUIRK_RUBRIC)
    return Verdict(value, text)

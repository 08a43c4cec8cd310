"""A scripted judge: a real OpenAI-style HTTP server (tests.evaluator.fake_endpoint) that answers as the truth says.

It reads each request the way a person would: a grounding request gets the index of the listed
element whose label the action's description names; a Type or Press request gets the quoted text
or the named key; an assertion request gets the verdict scripted for that assertion text; a rubric
request gets the scripted score line. ``FixedModels`` stands in for EasyOCR and DINOv2 where they
cannot exist (the default environment): the same text and embedding for every picture, so OCR and
DINO similarity are exactly 1 and the low-level score of every checkpoint is 1.
"""

from __future__ import annotations

import json
import re

from tests.evaluator.fake_endpoint import FakeEndpoint, Recorded, Reply, completion

LINE = re.compile(r"^\[(\d+)\] <[^>]*> (\".*\") at ", re.MULTILINE)


class ScriptedJudge(FakeEndpoint):
    def __init__(self, verdicts: dict[str, str] | None = None, rubric: str = "Score: 80/100", **kwargs):
        super().__init__(**kwargs)
        self.verdicts = verdicts or {}
        self.rubric = rubric

    def _next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self.script:
                return self.script.pop(0)
        return Reply(body=completion(self.answer(recorded.text), usage={"prompt_tokens": 100,
                                                                        "completion_tokens": 5}))

    def answer(self, text: str) -> str:
        if "connection check" in text:
            return "OK"
        if "interactive elements, numbered" in text:
            return json.dumps({"index": _grounded(text)})
        if "Press action is described" in text:
            return '{"key": "Enter"}'
        if "Type action is described" in text:
            quoted = re.search(r"'([^']+)'", text)
            return json.dumps({"text": quoted.group(1) if quoted else ""})
        if "ASSERTION (trusted)" in text:
            for needle, verdict in self.verdicts.items():
                if needle in text:
                    return verdict
            return '{"answer": "Yes"}'
        if "Grade the rebuilt page" in text:
            return f"The layout matches well.\n{self.rubric}"
        return "?"

    def purposes(self) -> list[str]:
        return [_purpose(r.text) for r in self.requests]


def _grounded(text: str) -> int | None:
    """The listed element whose label the description (the trusted task line) names."""
    task = re.search(r"TASK \(trusted\): .*described as: (\".*\")", text)
    description = json.loads(task.group(1)).lower() if task else ""
    for match in LINE.finditer(text):
        label = json.loads(match.group(2)).strip().lower()
        if label and re.search(rf"\b{re.escape(label)}\b", description):
            return int(match.group(1))
    return None


def _purpose(text: str) -> str:
    for needle, name in (("connection check", "preflight"), ("numbered", "grounding"),
                         ("ASSERTION (trusted)", "assertion"), ("Grade the rebuilt", "rubric")):
        if needle in text:
            return name
    return "other"


class FixedModels:
    """Same text and embedding for every picture (the stand-in for EasyOCR and DINOv2 named above)."""

    def __init__(self, spec: dict):
        self.spec = spec

    def text(self, image) -> str:
        return "shopping list"

    def embedding(self, image) -> list[float]:
        return [0.6, 0.8]

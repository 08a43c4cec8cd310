"""A scripted judge whose grounding is the truth of a sample task: the element its authoring selector names.

:func:`record_truth` plays a task's authoring script (evaluator/sample/tasks/<task>.json) on its
reference page exactly as the recorder did (served by evaluator.page_session, each action done
by evaluator.authoring.recorder on its selector's element, then settle, one clock step, settle)
and keeps, for each Click and Type, the box its selector's element has just before the action.

:class:`TruthJudge` then answers a grounding request with the index of the listed candidate
whose box is that box (the best overlap, at least half), and a screenshot grounding request
with that box's centre. Assertions, rubric and the rest are answered as
:class:`tests.evaluator.fake_judge.ScriptedJudge` answers them.

A grounding request names its action only by the description, so the truth is kept by
description; a description used for two different boxes is refused (the judge could not tell
which action asks).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.evaluator.fake_judge import ScriptedJudge

Box = tuple[float, float, float, float]  # left, top, width, height in viewport pixels
CANDIDATE = re.compile(r"^\[(\d+)\] <[^>]*> \".*\" at \((-?\d+),(-?\d+)\) size (\d+)x(\d+)$", re.MULTILINE)
TASK_LINE = re.compile(r"TASK \(trusted\): perform a \w+ action described as: (\".*\")")
MIN_OVERLAP = 0.5  # listed boxes are rounded to whole pixels: the right one overlaps almost fully


def record_truth(browser, script, task_root: Path, truth: dict[str, Box] | None = None) -> dict[str, Box]:
    """description -> the box of the element the selector names, before each Click and Type of ``script``.

    Added to ``truth`` when given (the truth of several tasks in one judge), refusing the same
    conflicts there."""
    from evaluator.authoring.recorder import perform
    from evaluator.bundle import read_page
    from evaluator.page_session import SiteMap, page_session

    index = Path(task_root) / "reference" / "site" / "index.html"
    site = SiteMap.for_page(index, Path(task_root) / "assets", index_text=read_page(index))
    truth = {} if truth is None else truth
    with page_session(browser, site, script.width, script.height) as session:
        for k, action in enumerate(script.actions, start=1):
            if action.type in ("Click", "Type"):
                _keep(truth, action.parameters["description"], session.page.locator(action.selector).bounding_box())
            perform(session.page, action, k)
            session.settle()
            session.advance_clock()
            session.settle()
    return truth


def _keep(truth: dict[str, Box], description: str, found: dict | None) -> None:
    if found is None:
        raise ValueError(f"{description!r}: the selector's element has no box")
    box = (found["x"], found["y"], found["width"], found["height"])
    if description in truth and overlap(truth[description], box) < MIN_OVERLAP:
        raise ValueError(f"{description!r} names two different elements: the judge could not tell them apart")
    truth[description] = box


def overlap(a: Box, b: Box) -> float:
    """Intersection over union of two boxes (0 when either is empty)."""
    width = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    height = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    inter = max(0.0, width) * max(0.0, height)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


class TruthJudge(ScriptedJudge):
    """Grounds by the recorded truth; ``truth`` maps each action description to its element's box."""

    def __init__(self, truth: dict[str, Box], verdicts: dict[str, str] | None = None, **kwargs):
        super().__init__(verdicts, **kwargs)
        self.truth = truth

    def answer(self, text: str) -> str:
        if "interactive elements, numbered" in text:
            return json.dumps({"index": truth_index(self.truth, text)})
        if "The screenshot below" in text:
            box = self.truth.get(_description(text))
            centre = (box[0] + box[2] / 2, box[1] + box[3] / 2) if box else (None, None)
            return json.dumps({"x": centre[0], "y": centre[1]})
        return super().answer(text)


def truth_index(truth: dict[str, Box], text: str) -> int | None:
    """The candidate of a grounding request whose listed box is the truth's box (None: the description
    is not in ``truth``, or no listed box overlaps its box by at least MIN_OVERLAP)."""
    box = truth.get(_description(text))
    if box is None:
        return None
    listed = [(overlap(box, tuple(float(v) for v in m.group(2, 3, 4, 5))), int(m.group(1)))
              for m in CANDIDATE.finditer(text)]
    best = max(listed, default=(0.0, None))
    return best[1] if best[0] >= MIN_OVERLAP else None


def _description(text: str) -> str | None:
    found = TASK_LINE.search(text)
    return json.loads(found.group(1)) if found else None

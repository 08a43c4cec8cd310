"""Generating a bundle of pages from an OpenAI-compatible chat-completions endpoint.

This follows the benchmark's generation settings (protocol section 2): for each task the
model gets one prompt stating the page rules and the recording's resolution, then the
stitched asset images, then frames of the task's video sampled at 1 frame per second, at
most 64 frames and 70 images in all (lower limits may be configured), at temperature 0.
Its answer goes through the official post-processing (the first fenced ``html`` block,
every iframe stripped; the asset placeholder stays, as in any uploaded bundle) and
becomes ``<out>/<task key>/index.html``. ``<out>/generation.json`` records every task's
status, the reason a page is missing, token usage, and the settings used.

Only public task inputs reach the model: the video, the stitched asset images and the
resolution. Action descriptions and assertions are ground truth and are never sent.

Frames: the video is sampled at 1 fps; when that gives more frames than the budget left
after the asset images, frames are picked evenly over the whole recording (first and
last kept), so the model sees the entire interaction rather than only its beginning.

Endpoints of current reasoning models refuse parts of that request: ``max_tokens`` (they
want ``max_completion_tokens``) and any temperature but their default. Such a refusal is
recognised from the HTTP 400 and the request changed once to what is accepted; the report's
``notes`` and each task's ``request`` say so, in particular when the model ran at its default
temperature rather than the protocol's 0 (``default_temperature`` asks for that up front).
Answers are streamed (server-sent events) unless ``stream`` is off; reasoning-token counts are
kept when the endpoint reports them.

Requests are retried with exponential backoff on HTTP 429, 408 and 5xx answers,
timeouts and dropped connections; a ``Retry-After`` header is honoured (capped). Every
other failure ends the task at once with a reason a person can act on. Redirects are
never followed, so the Authorization header only ever goes to the configured host, and each
request connects to the address its host name was resolved to and checked as (see
evaluator.generation.transport). The API key goes only over https (plain http to this machine
only, for development), is never logged nor written to any file, and an endpoint's own words
reach the submitter as one short line with the key and anything key-like removed.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evaluator.bundle import PAGE_NAME, task_sort_key
from evaluator.generation.answers import Page, page_from_answer
from evaluator.generation.client import MAX_ANSWER_BYTES, RETRY_STATUSES, Answer, EndpointClient, parse_retry_after
from evaluator.generation.config import (
    DETAIL_CHARS,
    FRAME_RATE,
    LENGTH_PARAMETERS,
    PROTOCOL_MAX_FRAMES,
    PROTOCOL_MAX_IMAGES,
    TEMPERATURE,
    ConfigError,
    EndpointConfig,
    TaskFailed,
    base_url_problems,
    config_problems,
)
from evaluator.generation.inputs import (
    FFMPEG_TIMEOUT_S,
    IMAGE_TYPES,
    PROMPT,
    ModelInputs,
    build_prompt,
    build_request,
    data_url,
    model_inputs,
    natural_key,
    pick_evenly,
    sample_frames,
    stitched_images,
)
from evaluator.generation.report import (
    PROMPT_VERSION,
    REPORT_NAME,
    new_report,
    pages_of,
    read_report,
    summarize,
    write_report,
)

__all__ = [
    "DETAIL_CHARS", "FFMPEG_TIMEOUT_S", "FRAME_RATE", "IMAGE_TYPES", "LENGTH_PARAMETERS", "MAX_ANSWER_BYTES",
    "PROMPT", "PROMPT_VERSION",
    "PROTOCOL_MAX_FRAMES", "PROTOCOL_MAX_IMAGES", "REPORT_NAME", "RETRY_STATUSES", "TEMPERATURE", "Answer",
    "ConfigError", "EndpointClient", "EndpointConfig", "ModelInputs", "Page", "TaskFailed", "TaskOutcome",
    "base_url_problems", "build_prompt", "build_request", "config_problems", "data_url", "ffmpeg_available",
    "generate", "generate_task", "model_inputs", "natural_key", "new_report", "outcome_from_record", "page_from_answer",
    "pages_of", "parse_retry_after", "pick_evenly", "read_report", "sample_frames", "stitched_images", "summarize",
    "write_page", "write_report",
]

# One logger for the whole generator, whichever part speaks.
log = logging.getLogger("evaluator.generation")


@dataclass
class TaskOutcome:
    """What happened to one task; ``reason`` says why there is no page when status is failed."""

    key: str
    status: str = "failed"  # ok | failed
    reason: str | None = None
    usage: dict = field(default_factory=dict)
    images: dict = field(default_factory=dict)
    attempts: int = 0
    seconds: float = 0.0
    finish_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    request: dict = field(default_factory=dict)  # how it was asked: length parameter, temperature, stream

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def generate_task(task, out_dir: Path, client: EndpointClient, deadline: float | None = None) -> TaskOutcome:
    """Ask the model for one task's page and write it; every failure becomes the outcome's reason."""
    outcome = TaskOutcome(task.key)
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="iwr-generate-") as tmp:
            inputs = model_inputs(task, client.config, Path(tmp))
            outcome.images = {"stitched": len(inputs.stitched), "frames": len(inputs.frames)}
            outcome.warnings += inputs.warnings
            answer = client.complete(build_request(task, client.config, inputs), deadline)
        outcome.attempts, outcome.request = answer.attempts, answer.request
        page = page_from_answer(answer.document)
        outcome.usage, outcome.finish_reason = page.usage, page.finish_reason
        outcome.warnings += page.warnings
        write_page(out_dir, task.key, page.html)
        outcome.status = "ok"
    except TaskFailed as failure:
        outcome.reason = client.scrub(str(failure))
    except Exception as exc:  # noqa: BLE001 - one task's surprise must not cost the other tasks their pages
        log.exception("task %s: unexpected error", task.key)
        outcome.reason = f"the generator hit an internal error ({type(exc).__name__})"
    outcome.seconds = round(time.monotonic() - started, 3)
    log.info("task %s: %s%s", task.key, outcome.status, f" ({outcome.reason})" if outcome.reason else "")
    return outcome


def write_page(out_dir: Path, key: str, html: str) -> Path:
    folder = out_dir / key
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PAGE_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
    return path


def generate(
    data_path: Path | str,
    out_dir: Path | str,
    config: EndpointConfig,
    task_keys: list[str] | None = None,
    *,
    workers: int = 1,
    resume: bool = False,
    deadline: float | None = None,
    on_task: Callable[[TaskOutcome], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict:
    """Generate a page per task of the task set at ``data_path`` into ``out_dir``.

    Returns the report also written to ``out_dir/generation.json`` (rewritten after each
    task). ``resume`` keeps pages a previous run generated; ``deadline`` (time.monotonic())
    bounds the whole run; ``on_task`` is called in this thread after each task.
    Raises DatasetError for an unusable task set and ValueError for unknown task keys.
    """
    from evaluator.dataset import load_dataset

    dataset = load_dataset(data_path)
    tasks = [dataset.task(key) for key in task_keys] if task_keys else list(dataset.tasks)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = new_report(config, previous=read_report(out_dir) if resume else None)
    client = EndpointClient(config, sleep)
    pending = [task for task in tasks if not _kept(report, out_dir, task.key)]
    for task in tasks:
        if task not in pending and on_task:
            on_task(outcome_from_record(report["tasks"][task.key]))
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="iwr-generate")
    try:
        futures = [pool.submit(_generate_one, task, out_dir, client, deadline) for task in pending]
        for future in as_completed(futures):
            outcome = future.result()
            report["tasks"][outcome.key] = asdict(outcome)
            report["notes"] = list(dict.fromkeys([*report.get("notes", []), *client.notes]))
            write_report(out_dir, report)
            if on_task:
                on_task(outcome)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # interrupted: start nothing more, let requests end
    report["tasks"] = {key: report["tasks"][key] for key in sorted(report["tasks"], key=task_sort_key)}
    report["notes"] = list(dict.fromkeys([*report.get("notes", []), *client.notes]))
    report["summary"] = summarize(report["tasks"])
    write_report(out_dir, report)
    return report


def _generate_one(task, out_dir: Path, client: EndpointClient, deadline: float | None) -> TaskOutcome:
    if deadline is not None and time.monotonic() >= deadline:
        return TaskOutcome(task.key, reason="not generated: the overall time limit was reached")
    return generate_task(task, out_dir, client, deadline)


def outcome_from_record(record: dict) -> TaskOutcome:
    known = {name: value for name, value in record.items() if name in TaskOutcome.__dataclass_fields__}
    return TaskOutcome(**known)


def _kept(report: dict, out_dir: Path, key: str) -> bool:
    """A page a resumed run already has (generated fine and still on disk)."""
    previous = report["tasks"].get(key)
    return bool(previous and previous.get("status") == "ok" and (out_dir / key / PAGE_NAME).is_file())


def ffmpeg_available() -> bool:
    return shutil.which("ffmpeg") is not None

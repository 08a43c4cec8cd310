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

Requests are retried with exponential backoff on HTTP 429, 408 and 5xx answers,
timeouts and dropped connections; a ``Retry-After`` header is honoured (capped). Every
other failure ends the task at once with a reason a person can act on. Redirects are
never followed, so the Authorization header only ever goes to the configured host. The
API key is never logged, never written to any file, and scrubbed from endpoint messages.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from evaluator import __version__
from evaluator.bundle import PAGE_NAME, extract_answer_html, strip_iframes, task_sort_key

log = logging.getLogger("evaluator.generation")

PROTOCOL_MAX_IMAGES = 70
PROTOCOL_MAX_FRAMES = 64
FRAME_RATE = 1  # frames per second sampled from the recording
TEMPERATURE = 0
PROMPT_VERSION = "1"
REPORT_NAME = "generation.json"
RETRY_STATUSES = frozenset({408, 429})  # plus every 5xx
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # a page answer is kilobytes; this bounds a misbehaving endpoint
FFMPEG_TIMEOUT_S = 300
DETAIL_CHARS = 300
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
               ".gif": "image/gif"}


class ConfigError(ValueError):
    """The endpoint settings cannot be used; the message is one line."""


class TaskFailed(Exception):
    """This task gets no page; the message is the reason shown to the submitter."""


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to ask the model. ``api_key`` never appears in repr, logs or files.

    retries: extra attempts after the first one for retryable failures.
    backoff: first wait between attempts in seconds, doubled each time, capped by max_wait
        (which also caps a Retry-After the endpoint asks for).
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    max_tokens: int = 16000
    max_images: int = PROTOCOL_MAX_IMAGES
    max_frames: int = PROTOCOL_MAX_FRAMES
    timeout: float = 600.0
    retries: int = 3
    backoff: float = 2.0
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        problems = config_problems(self)
        if problems:
            raise ConfigError("; ".join(problems))

    @property
    def url(self) -> str:
        """The chat-completions URL: base URL + /chat/completions (unless already given in full)."""
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    def public_settings(self) -> dict:
        """Everything but the key, for reports."""
        return {"base_url": self.base_url, "model": self.model, "max_tokens": self.max_tokens,
                "max_images": self.max_images, "max_frames": self.max_frames, "temperature": TEMPERATURE,
                "frame_rate": FRAME_RATE, "timeout": self.timeout, "retries": self.retries}


def config_problems(config: EndpointConfig) -> list[str]:
    """Every reason the settings cannot be used (empty list = usable)."""
    problems = base_url_problems(config.base_url)
    if not config.model.strip():
        problems.append("the model id is empty")
    if not 1 <= config.max_images <= PROTOCOL_MAX_IMAGES:
        problems.append(f"max images must be 1-{PROTOCOL_MAX_IMAGES} (the protocol's limit), got {config.max_images}")
    if not 1 <= config.max_frames <= PROTOCOL_MAX_FRAMES:
        problems.append(f"max frames must be 1-{PROTOCOL_MAX_FRAMES} (the protocol's limit), got {config.max_frames}")
    if config.max_tokens < 1:
        problems.append(f"max tokens must be at least 1, got {config.max_tokens}")
    if config.timeout <= 0:
        problems.append(f"the request timeout must be positive, got {config.timeout}")
    if config.retries < 0 or config.backoff < 0 or config.max_wait < 0:
        problems.append("retries, backoff and max wait cannot be negative")
    return problems


def base_url_problems(url: str) -> list[str]:
    """Why ``url`` is not a usable base URL (http or https, a host, no credentials or query)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises on a malformed port
    except ValueError as exc:
        return [f"the base URL is malformed ({exc})"]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ["the base URL must start with http:// or https:// and name a host (e.g. https://api.example.com/v1)"]
    if parts.username or parts.password:
        return ["the base URL must not hold credentials; give the key as the API key"]
    if parts.query or parts.fragment:
        return ["the base URL must not have a query string or fragment"]
    return [] if port is None or port > 0 else ["the base URL's port must be positive"]


# --------------------------------------------------------------------------- model inputs


def stitched_images(task) -> list[Path]:
    """The task's stitched asset images in natural order (stitched_image_2 before stitched_image_10)."""
    folder = Path(task.stitched_dir)
    if not folder.is_dir():
        return []
    images = [path for path in folder.iterdir() if path.suffix.lower() in IMAGE_TYPES and path.is_file()]
    return sorted(images, key=lambda path: natural_key(path.name))


def natural_key(text: str) -> list:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def sample_frames(video: Path, dest: Path, fps: float = FRAME_RATE) -> list[Path]:
    """Every frame of ``video`` at ``fps`` as JPEG files in ``dest``, in time order; raises TaskFailed."""
    if not Path(video).is_file():
        raise TaskFailed("the task has no video.mp4 to sample frames from")
    dest.mkdir(parents=True, exist_ok=True)
    command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(video), "-vf", f"fps={fps}",
               "-q:v", "3", str(dest / "frame_%05d.jpg")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FFMPEG_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise TaskFailed("ffmpeg is not installed on the generating machine") from None
    except subprocess.TimeoutExpired:
        raise TaskFailed(f"sampling the video took longer than {FFMPEG_TIMEOUT_S} s") from None
    frames = sorted(dest.glob("frame_*.jpg"))
    if done.returncode != 0 or not frames:
        last = (done.stderr.strip().splitlines() or ["no frame decoded"])[-1]
        last = last.replace(str(video), Path(video).name)  # server paths are nobody's business
        raise TaskFailed(f"the task's video could not be read ({last[:DETAIL_CHARS]})")
    return frames


def pick_evenly(items: list, count: int) -> list:
    """``count`` items spread evenly over ``items`` (first and last kept), in their order."""
    if count <= 0:
        return []
    if len(items) <= count:
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(n * step)] for n in range(count)]


@dataclass
class ModelInputs:
    stitched: list[Path]
    frames: list[Path]
    warnings: list[str] = field(default_factory=list)


def model_inputs(task, config: EndpointConfig, work_dir: Path) -> ModelInputs:
    """The images sent for ``task``: stitched images first, then frames within both limits."""
    stitched = stitched_images(task)
    warnings = []
    if len(stitched) > config.max_images:
        warnings.append(f"only the first {config.max_images} of {len(stitched)} stitched images were sent")
        stitched = stitched[: config.max_images]
    budget = min(config.max_frames, config.max_images - len(stitched))
    if budget <= 0:
        warnings.append("the stitched images fill the image limit; no video frame was sent")
        return ModelInputs(stitched, [], warnings)
    every = sample_frames(task.video_path, work_dir / "frames")
    frames = pick_evenly(every, budget)
    if len(frames) < len(every):
        warnings.append(f"{len(frames)} of {len(every)} frames sampled at {FRAME_RATE} fps were sent")
    return ModelInputs(stitched, frames, warnings)


PROMPT = """\
Rebuild an interactive web page from a screen recording of someone using it.

What you get, in this order:
- {sheets}
- {frames} frame(s) of the screen recording, one per second of the recording, in time \
order. They show the page as it first appears and then a person using it: what they \
click, type, press and scroll, and how the page responds each time.

The recording was made in a browser viewport of {width}x{height} pixels. Lay the page \
out for exactly that viewport size.

Write one web page that looks like the recorded page and behaves like it, so that \
repeating the recorded actions on your page gives the same results. Follow these rules:
1. Put everything in one self-contained HTML file: markup, CSS in <style> and \
JavaScript in <script>. Load nothing from the network: no external libraries, \
frameworks, stylesheets, scripts or web fonts.
2. Where the page would talk to a server (search, sign-in, cart, saving, loading more), \
imitate the server in your own JavaScript with made-up data, so that every interaction \
works with no network.
3. Give the CSS class "btn" to every element a person can click (buttons, links, tabs, \
menu entries, clickable icons, cards or rows that open something), in addition to any \
other classes it has.
4. To use one of the provided images, write its address as \
{placeholder}/ followed by the file name exactly as it is labelled on the asset sheet, \
for example <img src="{placeholder}/asset001.png" width="120" height="40" alt="logo">. \
The same address form works in CSS url(...). Never invent image names.
5. Give every <img> element width and height attributes.
6. Do not use <iframe> elements.
7. Answer with the complete page in a single fenced code block that opens with ```html \
and closes with ```. Do not split the page over several blocks.
"""

_SHEETS_TEXT = ("{count} asset sheet image(s): grids of the page's original images (photos, icons, "
                "logos), each tile labelled with its file name.")
_NO_SHEETS_TEXT = ("no asset sheet: this page has no image files; draw icons with CSS or inline SVG "
                   "and leave photos as plain coloured boxes.")


def build_prompt(task, n_stitched: int, n_frames: int) -> str:
    """The instructions for one task: counts of images, the resolution, the page rules."""
    from evaluator.bundle import ASSET_PLACEHOLDER

    sheets = _SHEETS_TEXT.format(count=n_stitched) if n_stitched else _NO_SHEETS_TEXT
    return PROMPT.format(sheets=sheets, frames=n_frames, width=task.width, height=task.height,
                         placeholder=ASSET_PLACEHOLDER)


def data_url(path: Path) -> str:
    mime = IMAGE_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def build_request(task, config: EndpointConfig, inputs: ModelInputs) -> dict:
    """The chat-completions request body: one user message, the prompt then every image in order."""
    content = [{"type": "text", "text": build_prompt(task, len(inputs.stitched), len(inputs.frames))}]
    for path in [*inputs.stitched, *inputs.frames]:
        content.append({"type": "image_url", "image_url": {"url": data_url(path)}})
    return {"model": config.model, "messages": [{"role": "user", "content": content}],
            "temperature": TEMPERATURE, "max_tokens": config.max_tokens}


# --------------------------------------------------------------------------- calling the endpoint


class _Retryable(Exception):
    """One attempt failed in a way worth trying again."""

    def __init__(self, kind: str, detail: str = "", retry_after: float | None = None, status: int | None = None):
        super().__init__(kind)
        self.kind, self.detail, self.retry_after, self.status = kind, detail, retry_after, status


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the Authorization header elsewhere: treat it as an answer instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


@dataclass
class Answer:
    document: dict
    attempts: int


class EndpointClient:
    """Posts chat-completions requests with retries; ``sleep`` is injectable for tests."""

    def __init__(self, config: EndpointConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.sleep = sleep
        self.opener = urllib.request.build_opener(_NoRedirects)

    def complete(self, payload: dict, deadline: float | None = None) -> Answer:
        """The endpoint's JSON answer; raises TaskFailed with a clear reason."""
        body = json.dumps(payload).encode("utf-8")
        attempts = self.config.retries + 1
        for attempt in range(1, attempts + 1):
            timeout = self._timeout(deadline)
            try:
                return Answer(self._post(body, timeout), attempt)
            except _Retryable as failure:
                if attempt == attempts:
                    raise TaskFailed(self._gave_up(failure, attempts)) from None
                wait = self._wait(failure, attempt)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise TaskFailed(f"{self._gave_up(failure, attempt)}; no time was left to retry") from None
                log.info("attempt %d failed (%s); retrying in %.1f s", attempt, failure.kind, wait)
                self.sleep(wait)
        raise AssertionError("unreachable")

    def _timeout(self, deadline: float | None) -> float:
        if deadline is None:
            return self.config.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise TaskFailed("not generated: the overall time limit was reached")
        return min(self.config.timeout, left)

    def _wait(self, failure: _Retryable, attempt: int) -> float:
        wait = self.config.backoff * 2 ** (attempt - 1)
        if failure.retry_after is not None:
            wait = failure.retry_after
        return max(0.0, min(wait, self.config.max_wait))

    def _post(self, body: bytes, timeout: float) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": f"iwr-bench-evaluator/{__version__}"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        # The scheme is checked to be http or https by EndpointConfig.
        request = urllib.request.Request(self.config.url, data=body, headers=headers, method="POST")  # noqa: S310
        started = time.monotonic()
        try:
            with self.opener.open(request, timeout=timeout) as response:
                raw = _read_limited(response, started + timeout)
        except urllib.error.HTTPError as error:
            raise self._http_failure(error) from None
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise _Retryable("timeout", f"{timeout:g}") from None
            raise _Retryable("connection", str(error.reason)) from None
        except TimeoutError:
            raise _Retryable("timeout", f"{timeout:g}") from None
        except (ConnectionError, OSError, http.client.HTTPException) as error:  # reset, dropped or garbled
            raise _Retryable("connection", type(error).__name__) from None
        return _parse_json(raw)

    def _http_failure(self, error: urllib.error.HTTPError) -> Exception:
        status = error.code
        detail = self.scrub(_error_detail(error))
        if status in RETRY_STATUSES or status >= 500:
            kind = "rate_limited" if status == 429 else "server_error"
            return _Retryable(kind, detail, parse_retry_after(error.headers.get("Retry-After")), status)
        return TaskFailed(self.scrub(_refusal_reason(status, detail, self.config.url, error.headers)))

    def _gave_up(self, failure: _Retryable, attempts: int) -> str:
        tries = f"{attempts} attempt{'s' * (attempts != 1)}"
        if failure.kind == "rate_limited":
            return (f"the endpoint was still rate limiting (HTTP 429) after {tries}; "
                    "raise your rate limit or retry later")
        if failure.kind == "server_error":
            return self.scrub(f"the endpoint failed with HTTP {failure.status} on all {tries}: {failure.detail}")
        if failure.kind == "timeout":
            return f"the endpoint gave no complete answer within the {failure.detail} s request timeout ({tries})"
        return self.scrub(f"could not reach the endpoint ({failure.detail}) in {tries}")

    def scrub(self, text: str) -> str:
        """``text`` without the API key (endpoints sometimes echo what they were sent)."""
        key = self.config.api_key
        return text.replace(key, "[api key]") if key else text


def _read_limited(response, deadline: float) -> bytes:
    """The whole body, refusing huge answers and answers trickling past the request timeout."""
    chunks, size = [], 0
    while True:
        chunk = response.read(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise TaskFailed(f"the endpoint's answer is larger than {MAX_ANSWER_BYTES // (1024 * 1024)} MB")
        if time.monotonic() > deadline:
            raise TimeoutError
        chunks.append(chunk)


def _parse_json(raw: bytes) -> dict:
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        start = raw[:80].decode("utf-8", "replace")
        raise TaskFailed(f"the endpoint's answer is not valid JSON (it starts {start!r})") from None
    if not isinstance(document, dict):
        raise TaskFailed("the endpoint's answer is JSON but not an object")
    return document


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The endpoint's own error message (OpenAI style ``{"error": {"message": ...}}`` or text)."""
    try:
        raw = error.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""
    try:
        message = json.loads(raw)["error"]
        message = message.get("message", message) if isinstance(message, dict) else message
    except (ValueError, KeyError, TypeError):
        message = raw
    return " ".join(str(message).split())[:DETAIL_CHARS]


def _refusal_reason(status: int, detail: str, url: str, headers) -> str:
    said = f": {detail}" if detail else ""
    if status == 401:
        return f"the endpoint refused the API key (HTTP 401){said}"
    if status == 403:
        return f"the endpoint denied access with this API key (HTTP 403){said}"
    if status == 404:
        return f"no chat-completions endpoint at {url} (HTTP 404); check the base URL (it often ends in /v1){said}"
    if status == 413:
        return f"the request was too large for the endpoint (HTTP 413); lower the image limit{said}"
    if 300 <= status < 400:
        target = headers.get("Location", "another address")
        return f"the endpoint redirected to {target} (HTTP {status}); give that address as the base URL"
    return f"the endpoint rejected the request (HTTP {status}){said}"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


# --------------------------------------------------------------------------- answers


@dataclass
class Page:
    html: str
    finish_reason: str | None
    usage: dict
    warnings: list[str]


def page_from_answer(document: dict) -> Page:
    """The page in a chat-completions answer, post-processed; raises TaskFailed when there is none."""
    try:
        choice = document["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise TaskFailed("the endpoint's answer has no choices[0].message (not a chat-completions answer)") from None
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    content = _text_of(content)
    if not content.strip():
        raise TaskFailed(f"the model's answer is empty (finish_reason={finish})")
    fenced = extract_answer_html(content)
    if fenced == content:
        start = " ".join(content.split())[:80]
        raise TaskFailed(f"the model's answer holds no ```html fenced block (it starts {start!r})")
    if not fenced.strip():
        raise TaskFailed("the model's ```html block is empty")
    warnings = ["the answer was cut off at the max tokens limit"] if finish == "length" else []
    return Page(strip_iframes(fenced), finish, _usage(document.get("usage")), warnings)


def _text_of(content) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if isinstance(part, dict))
    return ""


def _usage(usage) -> dict:
    if not isinstance(usage, dict):
        return {}
    names = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {name: usage[name] for name in names if isinstance(usage.get(name), int)}


# --------------------------------------------------------------------------- running a task set


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
        outcome.attempts = answer.attempts
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
            write_report(out_dir, report)
            if on_task:
                on_task(outcome)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # interrupted: start nothing more, let requests end
    report["tasks"] = {key: report["tasks"][key] for key in sorted(report["tasks"], key=task_sort_key)}
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


def new_report(config: EndpointConfig, previous: dict | None = None) -> dict:
    tasks = {}
    if previous and _same_output(previous.get("endpoint") or {}, config.public_settings()):
        tasks = {key: value for key, value in previous.get("tasks", {}).items() if value.get("status") == "ok"}
    return {"generator": f"iwr-bench evaluator {__version__}", "prompt_version": PROMPT_VERSION,
            "endpoint": config.public_settings(), "tasks": tasks, "summary": {}}


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
    return {"tasks": len(tasks), "ok": ok, "failed": len(tasks) - ok, "usage": usage}


def pages_of(out_dir: Path | str, report: dict) -> dict[str, Path]:
    """Task key -> generated index.html for every task that got a page."""
    out_dir = Path(out_dir)
    return {key: out_dir / key / PAGE_NAME for key, outcome in report["tasks"].items()
            if outcome.get("status") == "ok" and (out_dir / key / PAGE_NAME).is_file()}


def ffmpeg_available() -> bool:
    return shutil.which("ffmpeg") is not None

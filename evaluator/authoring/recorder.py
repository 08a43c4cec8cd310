"""Record a task: play the script on the reference page and save everything the task needs.

The page is rendered exactly as the evaluator renders a submission: the reference page
(evaluator.authoring.reference_page) goes through the official post-processing and is
served by evaluator.page_session at the fake origin, with the same viewport, seeded randomness,
paused clock and settle rules. So the checkpoints are what the reference page, submitted
as a bundle, produces when it is scored, and recording the same script twice gives the
same pixels.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from evaluator.authoring.script import AuthoringError, Script, ScriptAction

VISIBLE_TEXT_JS = Path(__file__).parent / "visible_text.js"
# References are recorded with the settle rules of the newest deterministic protocol: CSS animations on
# page time and a layout that holds still before each checkpoint (evaluator.protocols, iwr-det-3), so
# a checkpoint is the state an animation ends in, the same on every recording, never a moment of it
# that depends on the machine's load. Every protocol's replay reaches that state given the same
# page time; iwr-det-3 reaches it the same way on every run.
RECORDING_PROTOCOL = "iwr-det-3"
ACTION_TIMEOUT_MS = 5000
TYPE_DELAY_MS = 60  # per key: the video shows the text being typed, as a person would
VIDEO_LEAD_IN_S = 0.3


@dataclass
class Recording:
    steps: int
    warnings: list[str] = field(default_factory=list)
    video: Path | None = None


def record_steps(
    browser, script: Script, root: Path, record_video: bool = True, pace_ms: int | None = None
) -> Recording:
    """Serve ``root``'s reference page, play the script, write checkpoints, reference data and video."""
    from evaluator.authoring.video import convert_to_mp4, first_content_time
    from evaluator.bundle import read_page
    from evaluator.page_session import SiteMap, page_session

    pace = script.pace_ms if pace_ms is None else pace_ms
    index = root / "reference" / "site" / "index.html"
    # Served exactly as the replay serves a submission: after the official post-processing.
    site = SiteMap.for_page(index, root / "assets", index_text=read_page(index))
    with tempfile.TemporaryDirectory(prefix="iwr-author-") as tmp:
        video_dir = Path(tmp) / "video" if record_video else None
        with _playwright_errors("loading the page"):
            with page_session(browser, site, script.width, script.height, video_dir=video_dir,
                              settle_params=recording_settle()) as session:
                _capture(session, root, 0)
                for k, action in enumerate(script.actions, start=1):
                    session.page.wait_for_timeout(pace)  # pacing for the video's viewer, not for settling
                    perform(session.page, action, k)
                    session.after_action()  # exactly what the replay does after an action
                    _capture(session, root, k)
                session.page.wait_for_timeout(pace)
        recording = Recording(len(script.actions), _session_warnings(session))
        if record_video:
            if session.video_path is None:
                raise AuthoringError("the browser produced no video (is ffmpeg linked into .cache/playwright?)")
            # Drop the blank frames recorded while the page loaded (keep a short lead-in).
            lead = max(0.0, first_content_time(session.video_path) - VIDEO_LEAD_IN_S)
            recording.video = convert_to_mp4(session.video_path, root / "video.mp4", start_s=lead)
    return recording


def recording_settle() -> dict:
    """The settle parameters references are recorded with (:data:`RECORDING_PROTOCOL`)."""
    from evaluator.protocols import get_protocol

    return get_protocol(RECORDING_PROTOCOL).params["settle"]


def perform(page, action: ScriptAction, k: int) -> None:
    """Do one scripted action on the element its selector names, as the evaluator's replay does it.

    Click and Press act on the element like the replay acts on the element it found; Type
    clears the field and types key by key (with a human pace, for the video); Scroll is the
    replay's own official scroll, so both move the page by exactly the same amount.
    """
    where = f"action {k} ({action.type})"
    with _playwright_errors(where):
        if action.type == "Scroll":
            _scroll(page, where)
        elif action.type == "Press" and not action.selector:
            page.keyboard.press(action.parameters["key"])
        elif action.type == "Press":
            _target(page, action.selector, where).press(action.parameters["key"], timeout=ACTION_TIMEOUT_MS)
        elif action.type == "Click":
            _target(page, action.selector, where).click(timeout=ACTION_TIMEOUT_MS)
        else:
            editable = _target(page, action.selector, where)
            editable.fill("", timeout=ACTION_TIMEOUT_MS)
            editable.press_sequentially(action.parameters["text"], delay=TYPE_DELAY_MS, timeout=ACTION_TIMEOUT_MS * 4)


def _target(page, selector: str, where: str):
    locator = page.locator(selector)
    count = locator.count()
    if count != 1:
        found = "no element" if count == 0 else f"{count} elements"
        raise AuthoringError(f"{where}: selector {selector!r} matches {found}; it must match exactly one")
    return locator


def _scroll(page, where: str) -> None:
    from evaluator.agents.actions import perform as replay_perform

    executed, reason = replay_perform(page, SimpleNamespace(type="Scroll"), None, None)
    if not executed:
        raise AuthoringError(f"{where}: {reason}")


def _capture(session, root: Path, k: int) -> None:
    checkpoints = root / "checkpoints"
    checkpoints.mkdir(parents=True, exist_ok=True)
    session.screenshot(checkpoints / f"step_{k}.png")
    reference = session.page.evaluate(visible_text_script())
    path = root / "reference" / f"step_{k}.json"
    path.write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


@functools.cache
def visible_text_script() -> str:
    from evaluator.judges.state import with_covered_text

    return with_covered_text(VISIBLE_TEXT_JS.read_text(encoding="utf-8"))


def _session_warnings(session) -> list[str]:
    warnings = []
    if session.blocked:
        urls = sorted({item["url"] for item in session.blocked})
        warnings.append(f"{len(urls)} request(s) to other origins were blocked, e.g. {urls[0]}")
    if session.not_found:
        urls = sorted(set(session.not_found))
        warnings.append(f"{len(urls)} same-origin request(s) found no file, e.g. {urls[0]}")
    for item in session.console_errors[:5]:
        warnings.append(f"page {item['type']}: {item['text']}")
    return warnings


@contextlib.contextmanager
def _playwright_errors(where: str) -> Iterator[None]:
    from playwright.sync_api import Error as PlaywrightError

    try:
        yield
    except PlaywrightError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise AuthoringError(f"{where}: {first}") from None


SVG_PAGE = '<body style="margin:0;background:transparent"><img id="a" src="data:image/svg+xml;base64,{data}">'
FIT_SVG_JS = """(img, size) => {
  const w = img.naturalWidth || size, h = img.naturalHeight || size, s = Math.min(size / w, size / h);
  img.style.width = (w * s) + 'px';
  img.style.height = (h * s) + 'px';
}"""


@contextlib.contextmanager
def svg_rasterizer(browser) -> Iterator:
    """A function drawing an SVG file into a PIL image fitting ``size`` px (one page for all)."""
    import base64
    import io

    from PIL import Image

    context = browser.new_context(viewport={"width": 512, "height": 512}, device_scale_factor=1)
    try:
        context.route("**/*", lambda route: route.abort())  # an SVG drawn as an image loads nothing anyway
        page = context.new_page()

        def rasterize(path: Path, size: int):
            try:
                page.set_content(SVG_PAGE.format(data=base64.b64encode(path.read_bytes()).decode("ascii")))
                image = page.locator("#a")
                image.evaluate(FIT_SVG_JS, size)
                png = image.screenshot(omit_background=True, timeout=ACTION_TIMEOUT_MS)
                return Image.open(io.BytesIO(png)).convert("RGBA")
            except Exception:  # a broken SVG only loses its preview
                return None

        yield rasterize
    finally:
        with contextlib.suppress(Exception):
            context.close()


def reset_task_folder(data_dir: Path, key: str) -> Path:
    """The task's folder under ``data_dir``, emptied (re-authoring replaces a task whole)."""
    root = (data_dir / key).resolve()
    if root.parent != data_dir.resolve():
        raise AuthoringError(f"task id {key!r} does not name a folder inside {data_dir}")
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    return root

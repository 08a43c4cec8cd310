"""One task's page on a running Chromium: serve, route, make repeatable, record, close.

:func:`page_session` opens a fresh browser context + page for one task on a Chromium started
by :func:`evaluator.browser.launch`: the page is served at the fake origin
``http://iwr.test/`` from the task's bundle folder and assets folder, every other request is
aborted and recorded, randomness and time are made repeatable, and the video (if asked for)
is available only after the context has closed.

Everything opened is closed in reverse order in ``finally`` blocks.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import mimetypes
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from evaluator.browser import Browser
from evaluator.page_scripts import (
    ANIMATION_STEP_SCRIPT,
    COUNTS_SCRIPT,
    INIT_SCRIPT,
    JSON_RESULT_HEAD,
    JSON_RESULT_TAIL,
    LAYOUT_SCRIPT,
    SCREENSHOT_CLEANUP,
    SCREENSHOT_PREPARE,
    SETTLE_SCRIPT,
)

ORIGIN = "http://iwr.test"
ASSETS_PREFIX = "/__assets__/"

# 2024-01-01T12:00:00Z: every page sees the same "now" (Playwright takes seconds).
FIXED_TIME_S = 1704110400.0

MAX_RECORDED = 200  # cap on blocked / console lists: an error storm must not eat memory
MAX_TEXT = 500

EXTRA_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".webp": "image/webp",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".ico": "image/x-icon",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mp3": "audio/mpeg",
    ".gif": "image/gif",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}


# --------------------------------------------------------------------------- site and routing


@dataclass(frozen=True)
class SiteMap:
    """What ``http://iwr.test/`` serves: the page folder and the task's assets folder."""

    page_dir: Path
    assets_dir: Path | None = None
    index_name: str = "index.html"
    index_text: str | None = None  # served for / and /index.html instead of the file (post-processed page)

    @classmethod
    def for_page(cls, index_html: Path, assets_dir: Path | None = None, index_text: str | None = None) -> SiteMap:
        index_html = Path(index_html)
        return cls(index_html.parent, Path(assets_dir) if assets_dir else None, index_html.name, index_text)

    def is_index(self, url: str) -> bool:
        return unquote(urlsplit(url).path) in ("", "/", "/index.html", "/" + self.index_name)

    def resolve(self, url: str) -> Path | None:
        """The file a same-origin URL maps to, or None (unknown, outside the folders, traversal)."""
        path = unquote(urlsplit(url).path)
        if path in ("", "/", "/index.html"):
            return _inside(self.page_dir, self.index_name)
        if path.startswith(ASSETS_PREFIX):
            return _inside(self.assets_dir, path[len(ASSETS_PREFIX):]) if self.assets_dir else None
        return _inside(self.page_dir, path.lstrip("/"))


def _inside(base: Path, relative: str) -> Path | None:
    if not relative or "\x00" in relative:
        return None
    base = base.resolve()
    candidate = (base / relative).resolve()
    if candidate != base and base not in candidate.parents:
        return None
    return candidate if candidate.is_file() else None


def content_type(path: Path) -> str:
    suffix = path.suffix.lower()
    return EXTRA_TYPES.get(suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"


# --------------------------------------------------------------------------- determinism

# The scripts themselves (seeded randomness, native timers, settle, screenshot preparation) are
# in evaluator.page_scripts.
FONTS_WAIT_MS = 5000  # fonts still loading after this are not waited for (Playwright: its timeout)


# --------------------------------------------------------------------------- page session


@dataclass
class PageSession:
    """One task's page: the Playwright page plus everything recorded about it."""

    page: object
    context: object
    site: SiteMap
    settle_params: dict
    clock_enabled: bool
    blocked: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)
    not_found: list = field(default_factory=list)
    dialogs: int = 0
    popups: int = 0
    downloads: int = 0
    websockets: int = 0
    crashed: bool = False
    page_counts: dict = field(default_factory=dict)  # alert/confirm/prompt/open/print calls, read from the page
    video_path: Path | None = None
    pending: set = field(default_factory=set)  # requests not yet done (see _install_listeners)
    page_requests: int = 0  # requests the page itself started (not the browser's favicon), ever
    page_responses: int = 0  # ... and of those, the ones that are done
    startup_steps: int = 0  # short clock steps the page's start-up took after the load step
    paused_at_ms: float = FIXED_TIME_S * 1000  # where the fake clock was paused (page time 0), in ms
    _video_dir: Path | None = None
    _cdp: object = None

    def goto(self, path: str = "/", timeout_ms: int = 15000) -> dict:
        """Load the page, run its start-up on the fake clock until it stops loading, settle."""
        self.page.goto(ORIGIN + path, wait_until="load", timeout=timeout_ms)
        self.startup_steps = self.run_startup()
        return self.settle()

    def run_startup(self) -> int:
        """Advance page time by the load step, then in short steps while start-up loads more; returns the short steps.

        Pages that load their code after the load event (require.js, dynamic imports, fetched
        templates) chain each module through a short timer, set only once the module has
        arrived: after a single load step those timers would wait, paused, for the first action.
        So page time moves on in ``startup_step_ms`` steps while the previous step made the page
        request or receive something, at most ``startup_max_steps`` times (a page that polls
        forever ends at that bound, the same way on every run). Before each step the network is
        quiet and the DOM has been quiet for a while, so whatever arrived has run. DOM changes
        alone do not call for a step: some come from real-time events (image decoding, font
        loading) and would make the number of steps differ between runs. A page that keeps the
        network busy without pause is stopped by a real-time bound instead (``network_quiet_ms``
        plus ``dom_quiet_ms`` per step), so it still loads well within the load limit.
        """
        if not self.clock_enabled:
            return 0
        p = self.settle_params
        limit = int(p["startup_max_steps"])
        deadline = time.monotonic() + (int(p["network_quiet_ms"]) + limit * int(p["dom_quiet_ms"])) / 1000
        self._quiet_window(deadline)  # what the page fetched during load arrives before page time moves
        mark = self._network_mark()
        self._run_clock(int(p["load_clock_ms"]))
        for steps in range(limit + 1):
            self._quiet_window(deadline)
            now = self._network_mark()
            if now == mark or steps == limit or self.crashed or time.monotonic() >= deadline:
                return steps
            mark = now
            self._run_clock(int(p["startup_step_ms"]))
        return limit

    def settle(self, frames: int | None = None, min_ms: int = 0) -> dict:
        """Wait for network quiet, two animation frames, and a bounded DOM-mutation quiet period.

        ``frames`` overrides the number of animation frames (0 when no screenshot follows);
        ``min_ms`` is the least real time to wait, even on a page that has long been quiet. After
        waiting for requests it is at least ``dom_quiet_ms``: what arrived gets time to be used.
        """
        p = self.settle_params
        if self.inflight > 0:
            min_ms = max(min_ms, int(p["dom_quiet_ms"]))
        network_quiet = self._wait_network(int(p["network_quiet_ms"]))
        args = {"frames": int(p["animation_frames"] if frames is None else frames), "quietMs": int(p["dom_quiet_ms"]),
                "maxMs": int(p["dom_quiet_max_ms"]), "minMs": int(min_ms)}
        result = self._settle_document(args)
        if self._navigating():  # the new document was still on its way: settle that one
            network_quiet = self._wait_network(int(p["network_quiet_ms"]))
            result = self._settle_document(args)
        result["network_quiet"] = network_quiet
        return result

    def _settle_document(self, args: dict) -> dict:
        try:
            return self.page.evaluate(SETTLE_SCRIPT, args)
        except Exception as exc:
            if not _navigated(exc):
                raise
            # The action started a navigation: wait for the new document, then settle it.
            self.page.wait_for_load_state("load")
            return self.page.evaluate(SETTLE_SCRIPT, args)

    def _navigating(self) -> bool:
        """A request for a new document of the page is under way."""
        with contextlib.suppress(Exception):
            main = self.page.main_frame
            return any(r.is_navigation_request() and r.frame == main for r in list(self.pending))
        return False

    def after_action(self) -> dict:
        """What follows every action, in the order reference checkpoints are recorded in.

        Settle first, frames included: the action's own effects (promises, fetches, and events
        that wait for the next frame, such as scroll and resize handlers and observers) happen
        before page time moves, not at a moment that depends on the machine's load. Then one
        clock step, and settle again for the screenshot.
        """
        self.settle()
        self.advance_clock()
        result = self.settle()
        if self.settle_params.get("layout_stable") and self.clock_enabled:
            result["layout_steps"] = self.settle_layout()
        return result

    def settle_layout(self) -> int:
        """iwr-det-3: wait, in animation frames, until no animation runs and no element box moves.

        Running finite animations and transitions (which run in real time, not on the page clock)
        are finished, so their end is reached and their end handlers run whatever the machine's
        speed; then element boxes are compared over two frames. Page time does not move here: the
        state captured is the one an idle machine reaches within the same page time. At most
        ``layout_max_steps`` rounds, so a page that moves forever still gets its screenshot.
        """
        limit = int(self.settle_params["layout_max_steps"])
        for rounds in range(limit + 1):
            try:
                state = self.page.evaluate(LAYOUT_SCRIPT, {"maxElements": 2000})
            except Exception as exc:
                if not _navigated(exc):
                    raise
                return rounds
            if not (state.get("finished") or state.get("moved")) or rounds == limit:
                return rounds
            self.settle(frames=0)
        return limit

    def advance_clock(self, ms: int | None = None) -> None:
        """Move page time forward in one fixed step, firing the timers due in it."""
        if not self.clock_enabled:
            return
        self._run_clock(int(self.settle_params["clock_step_ms"] if ms is None else ms))

    @property
    def animations_on_clock(self) -> bool:
        """iwr-det-3: CSS transitions and animations move with page time only (see start_page_time_animations)."""
        return self.clock_enabled and bool(self.settle_params.get("page_time_animations"))

    def start_page_time_animations(self) -> None:
        """Stop the document timeline (DevTools keeps it stopped for every document the page loads):
        from now on, animations move only when page time does (:meth:`_run_clock`)."""
        cdp = self._devtools()
        if cdp is None:
            raise RuntimeError("page-time animations need Chromium's DevTools protocol")
        cdp.send("Animation.enable")
        cdp.send("Animation.setPlaybackRate", {"playbackRate": 0})

    def _run_clock(self, step: int) -> None:
        """Move page time on by ``step`` ms: the fake clock's timers and, on page time, the animations.

        With animations on page time, the step stops at every moment a finite animation ends
        (at most ``animation_max_rounds`` stops, then the rest in one go): timers due before that
        moment fire first, then the animations reach their end and its handlers run, in the same
        order on every run and whatever the machine's load.
        """
        if not self.animations_on_clock:
            self._clock_run_for(step)
            return
        limit = int(self.settle_params.get("animation_max_rounds", 50))
        state = self._step_animations(0)
        remaining, rounds = step, 0
        while remaining > 0:
            upcoming = state.get("next")
            part = remaining if upcoming is None or rounds >= limit else \
                min(remaining, max(1, math.ceil(upcoming)))
            self._clock_run_for(part)
            state = self._step_animations(part)
            remaining -= part
            rounds += 1

    def _step_animations(self, ms: int) -> dict:
        try:
            return self.page.evaluate(ANIMATION_STEP_SCRIPT, {"dt": ms, "pausedAt": self.paused_at_ms}) or {}
        except Exception as exc:
            if not _navigated(exc):
                raise
            return {}  # a new document is loading: its animations start from its own beginning

    def _clock_run_for(self, step: int) -> None:
        for attempt in range(3):
            try:
                self.page.clock.run_for(step)
                return
            except Exception:
                # The clock is the context's: a popup closing mid-step aborts it for every page.
                if attempt == 2 or self.crashed or self.page.is_closed():
                    raise

    def screenshot(self, path: Path | str | None = None, timeout_ms: int = 10000) -> bytes:
        """Viewport-only PNG with animations stopped and the caret hidden.

        The pixels of Playwright's ``page.screenshot(animations="disabled", caret="hide")``, taken
        with its preparation steps but through Chromium's fast PNG encoder (lossless like the
        default one, with a third of the encoding work and two fewer round trips).
        """
        cdp = self._devtools()
        if cdp is None:
            data = self.page.screenshot(animations="disabled", caret="hide", timeout=timeout_ms)
        else:
            data = self._fast_screenshot(cdp)
        if path:
            Path(path).write_bytes(data)
        return data

    def _fast_screenshot(self, cdp) -> bytes:
        frames = self.page.frames
        x, y, scale = self.page.main_frame.evaluate(SCREENSHOT_PREPARE, FONTS_WAIT_MS)
        try:
            for frame in frames[1:]:  # frames the page made itself (submitted iframes are stripped)
                with contextlib.suppress(Exception):
                    frame.evaluate(SCREENSHOT_PREPARE, FONTS_WAIT_MS)
            viewport = self.page.viewport_size
            width, height = (int(viewport[side] / scale + 1e-3) for side in ("width", "height"))
            clip = {"x": x, "y": y, "width": width, "height": height, "scale": scale}
            shot = cdp.send("Page.captureScreenshot", {"format": "png", "clip": clip, "optimizeForSpeed": True,
                                                        "captureBeyondViewport": False})
        finally:
            for frame in frames:
                with contextlib.suppress(Exception):
                    frame.evaluate(SCREENSHOT_CLEANUP)
        return base64.b64decode(shot["data"])

    def _devtools(self):
        """A DevTools session on the page (None where Chromium's protocol is not available)."""
        if self._cdp is None:
            try:
                self._cdp = self.context.new_cdp_session(self.page)
            except Exception:
                self._cdp = False
        return self._cdp or None

    def counts(self) -> dict:
        """Dialogs, popups and downloads the page attempted (page-side and browser-side)."""
        page_counts = {}
        with contextlib.suppress(Exception):  # a crashed or navigating page has no counts to give
            page_counts = self.page.evaluate(COUNTS_SCRIPT) or {}
        return {**page_counts, "dialogs": self.dialogs, "popups": self.popups,
                "downloads": self.downloads, "websockets": self.websockets}

    def _quiet_window(self, deadline: float) -> dict:
        """Settle without frames until no request is left in flight (requests started while waiting count)."""
        p = self.settle_params
        while True:
            result = self.settle(frames=0, min_ms=int(p["dom_quiet_ms"]))
            if self.inflight <= 0 or self.crashed or time.monotonic() >= deadline:
                return result

    @property
    def inflight(self) -> int:
        """Requests started and not done yet."""
        return len(self.pending)

    def _network_mark(self) -> tuple[int, int]:
        return self.page_requests, self.page_responses

    def _wait_network(self, limit_ms: int) -> bool:
        waited = 0
        while self.inflight > 0 and waited < limit_ms and not self.crashed:
            self.page.wait_for_timeout(10)  # lets Playwright dispatch request events
            waited += 10
        return self.inflight <= 0

    # -- recording -------------------------------------------------------------
    def record_blocked(self, url: str, resource_type: str, reason: str) -> None:
        if len(self.blocked) < MAX_RECORDED:
            self.blocked.append({"url": url[:MAX_TEXT], "type": resource_type, "reason": reason})

    def record_console(self, kind: str, text: str) -> None:
        if len(self.console_errors) < MAX_RECORDED:
            self.console_errors.append({"type": kind, "text": str(text)[:MAX_TEXT]})


class JsonPage:
    """A Playwright page whose ``evaluate`` returns large results through JSON (same values, faster).

    Everything else is the page itself. Given to the code that reads big page data (targeting,
    state capture); a result JSON cannot carry exactly, or a failing call, is evaluated again
    the usual way, so values and errors are Playwright's own.
    """

    def __init__(self, page):
        self._page = page

    def __getattr__(self, name):
        return getattr(self._page, name)

    def evaluate(self, expression: str, arg=None):
        try:
            text = self._page.evaluate(JSON_RESULT_HEAD + expression + JSON_RESULT_TAIL, arg)
        except Exception:
            text = None
        if isinstance(text, str):
            return json.loads(text)
        return self._page.evaluate(expression, arg)


@contextlib.contextmanager
def page_session(
    browser: Browser,
    site: SiteMap,
    width: int,
    height: int,
    video_dir: Path | None = None,
    seed: int = 0,
    clock: float | None = FIXED_TIME_S,
    settle_params: dict | None = None,
    url: str | None = "/",
    video_size: tuple[int, int] | None = None,
) -> Iterator[PageSession]:
    """A fresh context + page serving ``site`` at ``http://iwr.test/``; closed in reverse order.

    ``clock`` is the fixed start time (Unix seconds; None leaves real time). ``url`` is loaded
    before yielding (None: the caller navigates with ``session.goto``). The recorded video's
    path is set on the session after the context has closed; ``video_size`` scales it
    (default: the viewport).
    """
    pw_browser = getattr(browser, "pw_browser", browser)
    options = _context_options(width, height, video_dir, video_size)
    context = pw_browser.new_context(**options)
    session = None
    try:
        context.add_init_script(INIT_SCRIPT % {"seed": int(seed)})
        # Marks elements that get click handlers through addEventListener, so the targeting
        # agent counts them as interactive.
        from evaluator.agents.targeting import LISTENER_TRACKER_JS

        context.add_init_script(LISTENER_TRACKER_JS)
        page = context.new_page()
        session = PageSession(page, context, site, {**default_settle(), **(settle_params or {})},
                              clock is not None, _video_dir=video_dir)
        _install_routes(context, session)
        _install_listeners(context, page, session)
        if clock is not None:
            # Installed a little earlier, then paused exactly at ``clock``: pausing cannot go back
            # in time, and real time passes between the two calls.
            page.clock.install(time=clock - 60)
            page.clock.pause_at(clock)
            session.paused_at_ms = clock * 1000
            if session.animations_on_clock:
                session.start_page_time_animations()
        if url is not None:
            session.goto(url)
        yield session
    finally:
        video = _video_of(session)
        with contextlib.suppress(Exception):
            context.close()
        if session is not None and video is not None:
            session.video_path = _finished_video(video)


def default_settle() -> dict:
    """The default protocol's settle parameters (one source of truth: evaluator.protocols)."""
    from evaluator.protocols import get_protocol

    return get_protocol().params["settle"]


def _context_options(width: int, height: int, video_dir: Path | None, video_size=None) -> dict:
    options = dict(
        viewport={"width": int(width), "height": int(height)},
        screen={"width": int(width), "height": int(height)},
        device_scale_factor=1,
        locale="en-US",
        timezone_id="UTC",
        reduced_motion="reduce",
        color_scheme="light",
        service_workers="block",
        accept_downloads=False,
        java_script_enabled=True,
    )
    if video_dir is not None:
        Path(video_dir).mkdir(parents=True, exist_ok=True)
        options["record_video_dir"] = str(video_dir)
        video_w, video_h = video_size or (width, height)
        options["record_video_size"] = {"width": int(video_w), "height": int(video_h)}
    return options


def _video_of(session: PageSession | None):
    if session is None or session._video_dir is None:
        return None
    with contextlib.suppress(Exception):
        return session.page.video
    return None


def _finished_video(video) -> Path | None:
    with contextlib.suppress(Exception):
        path = Path(video.path())
        return path if path.exists() else None
    return None


def _install_routes(context, session: PageSession) -> None:
    def handle(route, request):
        url = request.url
        if not url.startswith(ORIGIN + "/"):
            session.record_blocked(url, request.resource_type, "external")
            route.abort("blockedbyclient")
            return
        if session.site.index_text is not None and session.site.is_index(url):
            route.fulfill(status=200, body=session.site.index_text, content_type=EXTRA_TYPES[".html"],
                          headers={"cache-control": "no-store"})
            return
        target = session.site.resolve(url)
        if target is None:
            session.not_found.append(url[:MAX_TEXT]) if len(session.not_found) < MAX_RECORDED else None
            route.fulfill(status=404, body="not found", content_type="text/plain")
            return
        route.fulfill(status=200, body=target.read_bytes(), content_type=content_type(target),
                      headers={"cache-control": "no-store"})

    def handle_ws(ws):
        session.websockets += 1
        session.record_blocked(ws.url, "websocket", "external")
        with contextlib.suppress(Exception):
            ws.close()

    context.route("**/*", handle)
    context.route_web_socket("**/*", handle_ws)


def _install_listeners(context, page, session: PageSession) -> None:
    def on_dialog(dialog):
        session.dialogs += 1
        with contextlib.suppress(Exception):
            dialog.dismiss()

    def on_popup(popup):
        session.popups += 1
        with contextlib.suppress(Exception):
            popup.close()

    def on_download(download):
        session.downloads += 1
        with contextlib.suppress(Exception):
            download.cancel()

    def on_console(msg):
        # Blocked requests are already in session.blocked; their console echo is noise.
        if msg.type == "error" and "ERR_BLOCKED_BY_CLIENT" not in msg.text:
            session.record_console("console", msg.text)

    def on_crash(_page):
        session.crashed = True
        session.record_console("crash", "the page's renderer crashed")

    def on_request(request):
        session.pending.add(request)
        session.page_requests += _started_by_page(request)

    def on_request_done(request):
        if request in session.pending:
            session.pending.discard(request)
            session.page_responses += _started_by_page(request)

    def on_response(response):
        # A fetch() body is read only when the page reads it: one never read never "finishes",
        # so a fetch is done once its response has arrived (an image, a script: once loaded).
        with contextlib.suppress(Exception):
            if response.request.resource_type == "fetch":
                on_request_done(response.request)

    page.on("dialog", on_dialog)
    page.on("download", on_download)
    page.on("console", on_console)
    page.on("pageerror", lambda err: session.record_console("pageerror", err))
    page.on("crash", on_crash)
    context.on("page", lambda p: on_popup(p) if p is not page else None)
    page.on("request", on_request)
    page.on("response", on_response)
    page.on("requestfinished", on_request_done)
    page.on("requestfailed", on_request_done)


def _started_by_page(request) -> bool:
    """False for the favicon, which the browser fetches on its own at a moment that varies between runs."""
    try:
        return request.resource_type != "other"
    except Exception:
        return True


def _navigated(exc: BaseException) -> bool:
    """True for the errors Playwright raises when the page navigated under an evaluate."""
    text = str(exc)
    return "Execution context was destroyed" in text or "navigation" in text.lower()

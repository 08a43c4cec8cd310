"""Chromium lifecycle for scoring: launch, route, make repeatable, record, close.

Two context managers hold the whole lifecycle:

- :func:`launch` starts one Chromium (Debian's ``/usr/bin/chromium``) through Playwright.
  When the evaluator runs as root, Chromium runs as the unprivileged user ``iwr-sandbox``
  through a small wrapper script (generated at run time into a private temporary folder) so
  that Chromium keeps its own sandbox; otherwise it runs as the current user, sandbox on.
- :func:`page_session` opens a fresh browser context + page for one task: the page is served
  at the fake origin ``http://iwr.test/`` from the task's bundle folder and assets folder,
  every other request is aborted and recorded, randomness and time are made repeatable, and
  the video (if asked for) is available only after the context has closed.

Everything opened is closed in reverse order in ``finally`` blocks.
"""

from __future__ import annotations

import contextlib
import logging
import mimetypes
import os
import pwd
import shlex
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)

ORIGIN = "http://iwr.test"
ASSETS_PREFIX = "/__assets__/"
# Debian's real binary first: its /usr/bin/chromium shell launcher adds flags that depend on
# the machine (e.g. /dev/shm size), which would make rendering differ between hosts.
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
SANDBOX_USER = "iwr-sandbox"
CONTAINER_SANDBOX_ENV = "IWR_CHROMIUM_SANDBOX"  # "0" only in docker/Dockerfile.evaluator
REPO_ROOT = Path(__file__).resolve().parent.parent

# Quiet offline: nothing phones home, no GPU differences between machines.
CHROMIUM_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
)

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


class BrowserError(RuntimeError):
    """Chromium could not be started or used; the message says why in one line."""


# --------------------------------------------------------------------------- launch


@dataclass
class Browser:
    """A running Chromium: the Playwright browser plus what is needed to police it.

    Attribute access falls through to the Playwright ``Browser`` (``new_context`` etc.).
    """

    pw_browser: object
    pid_file: Path
    sandboxed: bool
    as_user: str | None

    def __getattr__(self, name):
        return getattr(self.pw_browser, name)

    @property
    def pid(self) -> int | None:
        """Process id of Chromium's main process (the wrapper execs into it)."""
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def descendant_pids(self) -> list[int]:
        """Every live process below Chromium's main process (renderers, GPU, utility)."""
        root = self.pid
        return process_descendants(root) if root else []

    def renderer_pids(self) -> list[int]:
        """Renderer processes: the ones that run page code."""
        return [p for p in self.descendant_pids() if "--type=renderer" in _cmdline(p)]

    def kill_renderers(self) -> int:
        """Kill every renderer (unblocks Playwright calls stuck on a hung page); returns how many."""
        return _kill_all(self.renderer_pids())

    def kill(self) -> None:
        """Kill Chromium outright (last resort when a context will not close)."""
        _kill_all([*self.descendant_pids(), *([self.pid] if self.pid else [])])

    def renderer_rss_bytes(self) -> int:
        """Resident memory of all renderers together."""
        return sum(rss_bytes(p) for p in self.renderer_pids())


@contextlib.contextmanager
def launch(sandbox: bool = True, heap_mb: int | None = None, headless: bool = True) -> Iterator[Browser]:
    """Start Chromium; yield a :class:`Browser`; always stop it and remove its private files.

    ``sandbox=False`` turns Chromium's own sandbox off: for development only, logged loudly.
    The evaluator container sets ``IWR_CHROMIUM_SANDBOX=0``: there the container (no network,
    read-only, every capability dropped) is the sandbox and Chromium cannot build its own.
    ``heap_mb`` caps each renderer's JavaScript heap so memory bombs crash the page early.
    """
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    if os.environ.get(CONTAINER_SANDBOX_ENV) == "0":
        sandbox = False
        log.info("Chromium sandbox off: this evaluator runs inside its isolated container")
    _default_browsers_path()
    private = Path(tempfile.mkdtemp(prefix="iwr-browser-"))
    home = Path(tempfile.mkdtemp(prefix="iwr-chromium-home-"))
    try:
        executable, as_user = _write_wrapper(private, home, sandbox)
        args = list(CHROMIUM_ARGS)
        if heap_mb:
            args.append(f"--js-flags=--max-old-space-size={int(heap_mb)}")
        if not sandbox and os.environ.get(CONTAINER_SANDBOX_ENV) != "0":
            log.warning("CHROMIUM SANDBOX DISABLED (sandbox=False): development use only")
        with sync_playwright() as pw:
            try:
                pw_browser = pw.chromium.launch(
                    executable_path=str(executable), chromium_sandbox=sandbox, args=args, headless=headless
                )
            except PlaywrightError as exc:
                raise BrowserError(f"Chromium did not start: {_first_line(exc)}") from exc
            try:
                yield Browser(pw_browser, private / "chromium.pid", sandbox, as_user)
            finally:
                with contextlib.suppress(Exception):
                    pw_browser.close()
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


def _default_browsers_path() -> None:
    """Point Playwright at the project's ffmpeg link (video recording) unless told otherwise."""
    local = REPO_ROOT / ".cache" / "playwright"
    if "PLAYWRIGHT_BROWSERS_PATH" not in os.environ and local.is_dir():
        os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(local)


def _write_wrapper(private: Path, home: Path, sandbox: bool) -> tuple[Path, str | None]:
    """Write the script Playwright starts instead of Chromium; return it and the user it runs as.

    The script records Chromium's pid (so hung renderers can be killed) and, under root,
    hands the profile folder to the sandbox user and drops privileges with setpriv.
    """
    chromium = shlex.quote(chromium_binary())
    q_home = shlex.quote(str(home))
    # TMPDIR: Chromium puts its singleton socket there; a sandboxed /tmp may not be writable.
    lines = ["#!/bin/sh", f"echo $$ > {shlex.quote(str(private / 'chromium.pid'))}", f"export TMPDIR={q_home}"]
    as_user = None
    if os.geteuid() == 0 and sandbox:
        as_user = SANDBOX_USER
        _give_to_sandbox_user(home)
        lines += [
            'for a in "$@"; do case "$a" in --user-data-dir=*) '
            f'chown -R {SANDBOX_USER}: "${{a#--user-data-dir=}}";; esac; done',
            f"export HOME={q_home} XDG_CONFIG_HOME={q_home}/.config XDG_CACHE_HOME={q_home}/.cache",
            f'exec setpriv --reuid={SANDBOX_USER} --regid={SANDBOX_USER} --init-groups {chromium} "$@"',
        ]
    else:
        if os.geteuid() == 0:
            log.warning("Chromium runs as root WITHOUT its sandbox: development use only")
        lines.append(f'exec {chromium} "$@"')
    wrapper = private / "chromium-wrapper.sh"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o700)
    return wrapper, as_user


def chromium_binary() -> str:
    """The Chromium executable: $IWR_CHROMIUM, else Debian's."""
    override = os.environ.get("IWR_CHROMIUM")
    for candidate in ([override] if override else CHROMIUM_CANDIDATES):
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise BrowserError("Chromium not found: install Debian's chromium package (scripts/setup.sh)")


def _give_to_sandbox_user(home: Path) -> None:
    """Chromium keeps small caches in HOME: give it one the sandbox user can write."""
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError as exc:
        raise BrowserError(f"user {SANDBOX_USER} missing: run scripts/setup.sh (creates it)") from exc
    os.chown(home, entry.pw_uid, entry.pw_gid)


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

INIT_SCRIPT = r"""
(() => {
  const seed = %(seed)d >>> 0;
  function mulberry32(a) {
    return function () {
      a |= 0; a = (a + 0x6D2B79F5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const rand = mulberry32(seed);
  Math.random = rand;
  const bytesRand = mulberry32(seed ^ 0x9E3779B9);
  if (window.crypto && crypto.getRandomValues) {
    const fill = function (arr) {
      const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(bytesRand() * 256);
      return arr;
    };
    try { Object.defineProperty(Crypto.prototype, 'getRandomValues', {value: fill}); } catch (e) {}
    try {
      Object.defineProperty(Crypto.prototype, 'randomUUID', {value: function () {
        const b = fill(new Uint8Array(16));
        b[6] = (b[6] & 0x0f) | 0x40; b[8] = (b[8] & 0x3f) | 0x80;
        const h = Array.from(b, x => x.toString(16).padStart(2, '0')).join('');
        return `${h.slice(0,8)}-${h.slice(8,12)}-${h.slice(12,16)}-${h.slice(16,20)}-${h.slice(20)}`;
      }});
    } catch (e) {}
  }
  // Native timers, kept before the fake clock replaces them: settle() measures real quiet time.
  window.__iwrNative = {
    raf: window.requestAnimationFrame.bind(window),
    setTimeout: window.setTimeout.bind(window),
    clearTimeout: window.clearTimeout.bind(window),
    now: performance.now.bind(performance),
  };
  const counts = window.__iwrCounts = {alert: 0, confirm: 0, prompt: 0, open: 0, print: 0};
  window.alert = function () { counts.alert++; };
  window.confirm = function () { counts.confirm++; return false; };
  window.prompt = function () { counts.prompt++; return null; };
  window.print = function () { counts.print++; };
  window.open = function () { counts.open++; return null; };
  // Mutation bookkeeping for settle(): time of the last DOM change, by the native clock.
  window.__iwrLastMutation = 0;
  const watch = () => {
    new MutationObserver(() => { window.__iwrLastMutation = window.__iwrNative.now(); })
      .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  };
  watch();
})();
"""

SETTLE_SCRIPT = r"""
async ({frames, quietMs, maxMs}) => {
  const n = window.__iwrNative;
  if (!n) return {frames: 0, quiet: false, waited: 0};
  const start = n.now();
  const frame = () => new Promise(resolve => {
    const t = n.setTimeout(resolve, 100);   // hidden pages get no frames: do not wait forever
    n.raf(() => { n.clearTimeout(t); resolve(); });
  });
  for (let i = 0; i < frames; i++) await frame();
  const sleep = ms => new Promise(resolve => n.setTimeout(resolve, ms));
  while (true) {
    const now = n.now();
    const since = now - (window.__iwrLastMutation || 0);
    if (since >= quietMs) return {frames, quiet: true, waited: Math.round(now - start)};
    if (now - start >= maxMs) return {frames, quiet: false, waited: Math.round(now - start)};
    await sleep(Math.min(quietMs - since, maxMs - (now - start)) + 1);
  }
}
"""

COUNTS_SCRIPT = "() => window.__iwrCounts ? Object.assign({}, window.__iwrCounts) : {}"


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
    inflight: int = 0
    _video_dir: Path | None = None

    def goto(self, path: str = "/", timeout_ms: int = 15000) -> None:
        """Load the page, let its start-up timers fire on the fake clock, settle."""
        self.page.goto(ORIGIN + path, wait_until="load", timeout=timeout_ms)
        self.advance_clock(int(self.settle_params["load_clock_ms"]))
        self.settle()

    def settle(self, frames: int | None = None) -> dict:
        """Wait for network quiet, two animation frames, and a bounded DOM-mutation quiet period.

        ``frames`` overrides the number of animation frames (0 when no screenshot follows).
        """
        p = self.settle_params
        network_quiet = self._wait_network(int(p["network_quiet_ms"]))
        args = {"frames": int(p["animation_frames"] if frames is None else frames), "quietMs": int(p["dom_quiet_ms"]),
                "maxMs": int(p["dom_quiet_max_ms"])}
        try:
            result = self.page.evaluate(SETTLE_SCRIPT, args)
        except Exception as exc:
            if not _navigated(exc):
                raise
            # The action started a navigation: wait for the new document, then settle it.
            self.page.wait_for_load_state("load")
            result = self.page.evaluate(SETTLE_SCRIPT, args)
        result["network_quiet"] = network_quiet
        return result

    def advance_clock(self, ms: int | None = None) -> None:
        """Move page time forward in one fixed step, firing the timers due in it."""
        if not self.clock_enabled:
            return
        step = int(self.settle_params["clock_step_ms"] if ms is None else ms)
        for attempt in range(3):
            try:
                self.page.clock.run_for(step)
                return
            except Exception:
                # The clock is the context's: a popup closing mid-step aborts it for every page.
                if attempt == 2 or self.crashed or self.page.is_closed():
                    raise

    def screenshot(self, path: Path | str | None = None, timeout_ms: int = 10000) -> bytes:
        """Viewport-only PNG with animations stopped and the caret hidden."""
        return self.page.screenshot(
            path=str(path) if path else None, animations="disabled", caret="hide", timeout=timeout_ms
        )

    def counts(self) -> dict:
        """Dialogs, popups and downloads the page attempted (page-side and browser-side)."""
        page_counts = {}
        with contextlib.suppress(Exception):  # a crashed or navigating page has no counts to give
            page_counts = self.page.evaluate(COUNTS_SCRIPT) or {}
        return {**page_counts, "dialogs": self.dialogs, "popups": self.popups,
                "downloads": self.downloads, "websockets": self.websockets}

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

    def on_request(_request):
        session.inflight += 1

    def on_request_done(_request):
        session.inflight = max(0, session.inflight - 1)

    page.on("dialog", on_dialog)
    page.on("download", on_download)
    page.on("console", on_console)
    page.on("pageerror", lambda err: session.record_console("pageerror", err))
    page.on("crash", on_crash)
    context.on("page", lambda p: on_popup(p) if p is not page else None)
    page.on("request", on_request)
    page.on("requestfinished", on_request_done)
    page.on("requestfailed", on_request_done)


# --------------------------------------------------------------------------- processes


def process_descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        ppid = _ppid(int(entry))
        if ppid is not None:
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _kill_all(pids: list[int]) -> int:
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _navigated(exc: BaseException) -> bool:
    """True for the errors Playwright raises when the page navigated under an evaluate."""
    text = str(exc)
    return "Execution context was destroyed" in text or "navigation" in text.lower()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

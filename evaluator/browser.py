"""Chromium lifecycle for scoring: start one Chromium, police its processes, stop it.

:func:`launch` starts one Chromium through Playwright: Debian's headless shell
(``chromium-headless-shell``, the same engine without the browser's user interface, which
costs a fifth less CPU per task), or Debian's full ``chromium`` for a visible window.
When the evaluator runs as root, Chromium runs as the unprivileged user ``iwr-sandbox``
through a small wrapper script (generated at run time into a private temporary folder) so
that Chromium keeps its own sandbox; otherwise it runs as the current user, sandbox on.
Chromium's sandbox is never turned off on a scoring path: a launch without it is refused
unless unsandboxed runs are explicitly allowed for development. Chromium gets an explicit
environment (locale, timezone, PATH, its private HOME and TMPDIR), nothing of the caller's.
Each task's page is opened on it by :func:`evaluator.page_session.page_session`.

Everything opened is closed in reverse order in ``finally`` blocks.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluator.isolation import browser_environment

log = logging.getLogger(__name__)

# Debian's real binaries, not its /usr/bin/chromium shell launcher: that adds flags that depend
# on the machine (e.g. /dev/shm size), which would make rendering differ between hosts. Scoring
# runs headless, in the headless shell: same Blink and Skia, without the browser's user
# interface, so less CPU per page; the full browser is the fallback and the only choice for
# a visible window. Rendering differs between the two by a few anti-aliased pixels: a task
# set's reference checkpoints are recorded with the browser that scores it (scripts/setup.sh
# installs both), and results.json names the browser.
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
SANDBOX_USER = "iwr-sandbox"
# Once the way to run Chromium without its sandbox in the evaluator container; now refused (see launch).
CONTAINER_SANDBOX_ENV = "IWR_CHROMIUM_SANDBOX"
REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# Node's compile cache for Playwright's driver: its 7 MB of bundled JavaScript compiles in a
# sixth of a second on every worker start without it. scripts/setup.sh fills it
# (warm_driver_cache); sandboxed jobs only read it. The evaluator image sets its own path.
NODE_COMPILE_CACHE_ENV = "NODE_COMPILE_CACHE"
DRIVER_CACHE = REPO_ROOT / ".cache" / "node-compile"

# Quiet offline: nothing phones home, no GPU differences between machines.
CHROMIUM_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
    # Repeatable pixels: with partial raster and several raster threads, the tiles of a page
    # are drawn in an order that depends on timing, and a few anti-aliased pixels (gradients,
    # icon edges) differed between runs of the same page. Whole tiles on one thread: same
    # pixels run after run, at no measurable cost here.
    "--disable-partial-raster",
    "--num-raster-threads=1",
    # Keyboard and wheel scrolls land at once: Chromium animates them over real time, beside the
    # page's fake clock, so a screenshot after an arrow key on a page that does not handle it
    # caught the scroll a few pixels short, by a different amount every run.
    "--disable-smooth-scrolling",
)


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
    binary: str = ""

    def __getattr__(self, name):
        return getattr(self.pw_browser, name)

    @property
    def description(self) -> str:
        """The running browser and its version, as :func:`browser_version` names it (no extra process)."""
        return _named(self.binary, self.pw_browser.version)

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

    ``sandbox=False`` turns Chromium's own sandbox off: refused (BrowserError) unless unsandboxed
    runs are allowed for development (``IWR_ALLOW_UNSANDBOXED=1``), and then logged loudly.
    ``heap_mb`` caps each renderer's JavaScript heap so memory bombs crash the page early.
    """
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    check_sandbox_wanted(sandbox)
    os.environ.update(driver_settings())
    private = Path(tempfile.mkdtemp(prefix="iwr-browser-"))
    home = Path(tempfile.mkdtemp(prefix="iwr-chromium-home-"))
    try:
        executable, as_user = _write_wrapper(private, home, sandbox, headless)
        args = list(CHROMIUM_ARGS)
        if heap_mb:
            args.append(f"--js-flags=--max-old-space-size={int(heap_mb)}")
        if not sandbox:
            log.warning("CHROMIUM SANDBOX DISABLED (sandbox=False): development use only")
        with sync_playwright() as pw:
            try:
                pw_browser = pw.chromium.launch(
                    executable_path=str(executable), chromium_sandbox=sandbox, args=args, headless=headless,
                    env=browser_environment(str(home), str(home)),
                )
            except PlaywrightError as exc:
                raise BrowserError(f"Chromium did not start: {_first_line(exc)}") from exc
            try:
                yield Browser(pw_browser, private / "chromium.pid", sandbox, as_user, chromium_binary(headless))
            finally:
                with contextlib.suppress(Exception):
                    pw_browser.close()
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


def check_sandbox_wanted(sandbox: bool) -> None:
    """Refuse to run Chromium without its own sandbox, saying why, unless development allows it."""
    if os.environ.get(CONTAINER_SANDBOX_ENV) == "0":
        raise BrowserError(f"{CONTAINER_SANDBOX_ENV}=0 would run untrusted pages in Chromium without its own "
                           "sandbox; it is no longer supported: the evaluator container keeps Chromium's sandbox "
                           "(docker/seccomp-evaluator.json)")
    if not sandbox and os.environ.get("IWR_ALLOW_UNSANDBOXED") != "1":
        raise BrowserError("Chromium without its own sandbox runs untrusted pages unconfined: refused "
                           "(development only: set IWR_ALLOW_UNSANDBOXED=1)")


def driver_settings() -> dict[str, str]:
    """Where Playwright's driver finds its ffmpeg link (videos) and its compiled JavaScript.

    The caller's settings when given, else the set-up's folders under ``.cache`` when they exist
    (for ffmpeg, an installed evaluator makes its link in the user's cache: evaluator.video_tool).
    A sandboxed job reads both, read-only (:func:`evaluator.isolation.runtime_paths`).
    """
    from evaluator.video_tool import browsers_path

    videos = browsers_path()
    settings = {}
    for name, default in (("PLAYWRIGHT_BROWSERS_PATH", videos), (NODE_COMPILE_CACHE_ENV, DRIVER_CACHE)):
        value = os.environ.get(name) or (str(default) if default is not None and default.is_dir() else "")
        if value and Path(value).exists():
            settings[name] = value
    return settings


def warm_driver_cache() -> Path:
    """Fill Node's compile cache for Playwright's driver (run once at set-up); return its folder.

    The driver is started once with the cache on; Node stores the compiled bundles, keyed by
    Node's version and each file's path and content, so an upgraded Playwright simply misses
    the old entries (and any unsandboxed launch stores the new ones).
    """
    from playwright._impl._driver import compute_driver_executable

    folder = Path(os.environ.get(NODE_COMPILE_CACHE_ENV) or DRIVER_CACHE)
    folder.mkdir(parents=True, exist_ok=True)
    node, cli = compute_driver_executable()
    try:
        subprocess.run([str(node), str(cli), "--version"], env={**os.environ, NODE_COMPILE_CACHE_ENV: str(folder)},
                       capture_output=True, check=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BrowserError(f"Playwright's driver did not start: {_first_line(exc)}") from exc
    return folder


def _write_wrapper(private: Path, home: Path, sandbox: bool, headless: bool = True) -> tuple[Path, str | None]:
    """Write the script Playwright starts instead of Chromium; return it and the user it runs as.

    The script records Chromium's pid (so hung renderers can be killed) and, under root,
    hands the profile folder to the sandbox user and drops privileges with setpriv.
    """
    chromium = shlex.quote(chromium_binary(headless))
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


def chromium_binary(headless: bool = True) -> str:
    """The Chromium to run: $IWR_CHROMIUM, else Debian's headless shell (if ``headless``), else its full browser."""
    override = os.environ.get("IWR_CHROMIUM")
    candidates = [override] if override else [*([HEADLESS_SHELL] if headless else []), *CHROMIUM_CANDIDATES]
    for candidate in candidates:
        if Path(candidate).is_file() and os.access(candidate, os.X_OK):
            if headless and not override and candidate != HEADLESS_SHELL:
                _warn_no_shell()
            return candidate
    raise BrowserError("Chromium not found: install Debian's chromium-headless-shell package (scripts/setup.sh)")


@functools.lru_cache(maxsize=1)
def _warn_no_shell() -> None:
    log.warning("%s missing: scoring with the full Chromium, which costs more CPU per page and renders a "
                "few pixels differently (scripts/setup.sh installs the headless shell)", HEADLESS_SHELL)


@functools.lru_cache(maxsize=4)
def browser_version(headless: bool = True) -> str:
    """The scoring browser and its version, e.g. ``chromium-headless-shell 156.0.8078.108``."""
    binary = chromium_binary(headless)
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{Path(binary).name} (version unknown: {type(exc).__name__})"
    return _named(binary, out.split()[-1] if out.split() else "unknown")


def _named(binary: str, version: str) -> str:
    """How results.json names a browser: its binary's name and its version."""
    return f"{Path(binary).name} {version}"


def _give_to_sandbox_user(home: Path) -> None:
    """Chromium keeps small caches in HOME: give it one the sandbox user can write."""
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError as exc:
        raise BrowserError(f"user {SANDBOX_USER} missing: run scripts/setup.sh (creates it)") from exc
    os.chown(home, entry.pw_uid, entry.pw_gid)



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
    # Read for every process on every memory check of the watchdog: plain file calls, no Path objects.
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        stat = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    return int(stat.rsplit(b")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` (its VmRSS), read from /proc/PID/statm: the cheapest place to read it."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0


def _kill_all(pids: list[int]) -> int:
    killed = 0
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__

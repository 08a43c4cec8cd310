"""Where the page being authored comes from: a local folder or a server on this machine.

Both kinds answer the same question, "the bytes at this URL, or None", so the reference
page builder needs to know nothing about files or sockets. A folder is addressed through
a virtual origin so relative references resolve exactly as a browser would resolve them.
Only ``file://`` URLs and servers on the loopback interface are accepted: authoring never
reaches the internet, and a page that needs it cannot be recorded reproducibly anyway.
"""

from __future__ import annotations

import ipaddress
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from evaluator.authoring.script import AuthoringError

# Folders are served under this origin while their references are resolved.
FOLDER_ORIGIN = "http://source.invalid/"
MAX_FILE_BYTES = 50 * 1024 * 1024
HTTP_TIMEOUT_S = 10
LOOPBACK_NAMES = ("localhost", "localhost.localdomain")


class FolderSource:
    """A page inside a folder; files outside the folder are never read."""

    def __init__(self, root: Path, page: str):
        self.root = root.resolve()
        self.page_url = urljoin(FOLDER_ORIGIN, page)
        self.label = str(self.root / page)

    def read(self, url: str) -> bytes | None:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}/" != FOLDER_ORIGIN:
            return None
        path = (self.root / unquote(parts.path).lstrip("/")).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        if path.stat().st_size > MAX_FILE_BYTES:
            raise AuthoringError(f"{path} is larger than {MAX_FILE_BYTES // 2**20} MiB")
        return path.read_bytes()

    def local_name(self, url: str) -> str:
        """The path of ``url`` inside the folder, for the private asset map."""
        return unquote(urlsplit(url).path).lstrip("/")


class LoopbackSource:
    """A page served by a web server on this machine (localhost, 127.0.0.0/8, ::1)."""

    def __init__(self, url: str):
        self.page_url = url
        parts = urlsplit(url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.label = url
        # No proxy: a loopback address must never be sent through one.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def read(self, url: str) -> bytes | None:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            return None
        try:
            with self._opener.open(url.split("#")[0], timeout=HTTP_TIMEOUT_S) as response:
                data = response.read(MAX_FILE_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError):
            return None
        if len(data) > MAX_FILE_BYTES:
            raise AuthoringError(f"{url} is larger than {MAX_FILE_BYTES // 2**20} MiB")
        return data

    def local_name(self, url: str) -> str:
        parts = urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")


def open_source(site: str) -> FolderSource | LoopbackSource:
    """Turn the ``--site`` argument into a source; refuses anything that is not local."""
    parts = urlsplit(site)
    if parts.scheme in ("http", "https"):
        if not is_loopback_host(parts.hostname or ""):
            raise AuthoringError(
                f"--site {site}: only file:// URLs and servers on localhost can be recorded (no network)"
            )
        return LoopbackSource(site if parts.path else site + "/")
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise AuthoringError(f"--site {site}: file:// URLs must name a local path")
        return folder_source(Path(unquote(parts.path)))
    if parts.scheme and len(parts.scheme) > 1:
        raise AuthoringError(
            f"--site {site}: unsupported URL scheme {parts.scheme!r} (use a folder, file:// or localhost)"
        )
    return folder_source(Path(site))


def folder_source(path: Path) -> FolderSource:
    """A folder means its index.html; an .html file means that page inside its folder."""
    if path.is_dir():
        if not (path / "index.html").is_file():
            raise AuthoringError(f"--site {path}: the folder has no index.html (name the page file instead)")
        return FolderSource(path, "index.html")
    if path.is_file() and path.suffix.lower() in (".html", ".htm"):
        return FolderSource(path.parent, path.name)
    raise AuthoringError(f"--site {path}: not a folder with index.html nor an .html file")


def is_loopback_host(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

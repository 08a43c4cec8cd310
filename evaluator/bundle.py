"""Safe intake of submission bundles, and the official post-processing of pages.

A bundle holds ``<task key>/index.html`` for each task (plus sibling files the page
references relatively). It arrives as a zip file or a folder, possibly wrapped in one
top-level folder (``mymodel/1/index.html``). Bundles come from strangers, so intake
assumes hostility: every name, size and byte is checked, nothing is ever written
outside the destination folder, symlinks are never created or followed, and a rejected
bundle leaves the destination empty. Every problem found is reported at once, so a
person fixing an upload sees the whole list, not one error per attempt.

Page decoding choice: pages are read as UTF-8 (a UTF-8 or UTF-16 byte-order mark is
honoured). Bytes that are not valid UTF-8 become U+FFFD and the bundle gets a warning
naming the task: this is what a browser does with a page served as UTF-8, it keeps every
valid character intact (a Latin-1 fallback would garble all of them), and one stray
byte should not cost a model a whole task.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import stat
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

ASSET_PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
ASSETS_URL_PREFIX = "/__assets__"
PAGE_NAME = "index.html"

MiB = 1024 * 1024
# A list longer than this helps nobody: the rest is summarised in one line.
MAX_REPORTED_PROBLEMS = 100
# Linux refuses longer path components (NAME_MAX); catch it as a bundle problem.
_MAX_COMPONENT_BYTES = 255
_CHUNK = 64 * 1024
# Enough bytes to recognise every archive signature below (tar's sits at offset 257).
_HEAD_BYTES = 512

# Files that operating systems add to archives on their own; never part of a page.
_OS_JUNK_DIRS = frozenset({"__MACOSX"})
_OS_JUNK_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})

_ARCHIVE_SUFFIXES = (
    ".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".7z", ".rar",
    ".zst", ".lz", ".lzma", ".z", ".cab", ".jar", ".war", ".apk",
)
_ARCHIVE_MAGIC = (
    (b"PK\x03\x04", "zip"), (b"PK\x05\x06", "zip"), (b"PK\x07\x08", "zip"),
    (b"\x1f\x8b", "gzip"), (b"\x1f\x9d", "compress"), (b"\xfd7zXZ\x00", "xz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"), (b"Rar!\x1a\x07", "rar"), (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"LZIP", "lzip"), (b"MSCF", "cab"),
)
_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})
_ZIP_READ_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError)


@dataclass(frozen=True)
class Limits:
    """What a bundle may hold. Defaults leave real bundles far below every line.

    max_total_bytes: 113 single-file pages are typically a few MB in all; 200 MB leaves
        room for sibling images yet keeps an upload from filling the disk.
    max_file_bytes: a page is one self-contained HTML file, rarely above 1 MB; 20 MB is
        far beyond that and bounds what the browser and OCR must load per task.
    max_files: a handful of files per task; thousands of tiny files exhaust inodes and
        slow every later step (this counts folders too).
    max_ratio: HTML deflates 5-20x; zip bombs reach 1000x and more.
    ratio_floor_bytes: members smaller than this may compress as well as they like;
        they cannot blow anything up and repetitive small files are normal.
    max_path_bytes: far above any sensible relative path, below the OS's PATH_MAX.
    """

    max_total_bytes: int = 200 * MiB
    max_file_bytes: int = 20 * MiB
    max_files: int = 5000
    max_ratio: float = 100.0
    ratio_floor_bytes: int = 1 * MiB
    max_path_bytes: int = 1024


class BundleError(Exception):
    """The bundle cannot be accepted; ``problems`` lists every reason, each naming its path or task."""

    def __init__(self, problems: list[str], report: BundleReport | None = None):
        self.problems = list(problems)
        self.report = report
        super().__init__(self.problems)

    def __str__(self) -> str:
        count = len(self.problems)
        return f"bundle rejected ({count} problem{'s' * (count != 1)}): " + "; ".join(self.problems)


@dataclass
class Bundle:
    """An accepted bundle extracted under ``root``; pages maps task key -> its index.html."""

    root: Path
    pages: dict[str, Path]
    unmatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class BundleReport:
    """Everything intake found: fatal problems plus what an accepted bundle would report."""

    problems: list[str]
    pages: list[str]
    unmatched: list[str]
    missing: list[str]
    warnings: list[str]


@dataclass
class _Entry:
    raw_name: str  # as stored, for messages
    kind: str  # "file" | "dir" | "symlink" | "special"
    size: int
    compressed: int | None  # None for folder bundles
    origin: zipfile.ZipInfo | str  # zip member, or path relative to the source folder
    name_ok: bool = True  # False when the stored name is not valid UTF-8
    path: str = ""  # normalised relative path; "" when the name is unusable
    problems: list[str] = field(default_factory=list)


_Opener = Callable[[_Entry], BinaryIO]


# ---------------------------------------------------------------- public API


def extract_bundle(source: Path, dest: Path, task_keys: set[str], limits: Limits = Limits()) -> Bundle:
    """Check ``source`` (zip or folder) and extract it into ``dest``, which must be empty or absent.

    Raises BundleError listing every fatal problem; ``dest`` is then left empty.
    """
    dest = Path(dest)
    report = _extract(Path(source), dest, {str(key) for key in task_keys}, limits)
    if report.problems:
        raise BundleError(report.problems, report)
    pages = {key: dest / key / PAGE_NAME for key in report.pages}
    return Bundle(dest, pages, report.unmatched, report.missing, report.warnings)


def inspect_bundle(source: Path, task_keys: set[str], limits: Limits = Limits()) -> BundleReport:
    """Run every intake check in a throw-away folder and return the full report."""
    with tempfile.TemporaryDirectory(prefix="iwr-bundle-check-") as tmp:
        try:
            return _extract(Path(source), Path(tmp) / "bundle", {str(key) for key in task_keys}, limits)
        except BundleError as exc:  # the source itself is unreadable
            return BundleReport(exc.problems, [], [], [], [])


def validate_bundle(source: Path, task_keys: set[str], limits: Limits = Limits()) -> list[str]:
    """Fatal problems of a bundle (empty list = acceptable); nothing is kept on disk.

    Missing and unmatched tasks are not fatal; use inspect_bundle to show them too.
    """
    return inspect_bundle(source, task_keys, limits).problems


def make_bundle_zip(pages: Mapping[str, str | Path], out_zip: Path) -> Path:
    """Package pages into a bundle zip: task key -> HTML text, an HTML file, or a folder to copy.

    The zip is deterministic (sorted names, fixed timestamps) so equal inputs give equal bytes.
    """
    out_zip = Path(out_zip)
    with zipfile.ZipFile(out_zip, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(pages, key=task_sort_key):
            for name, data in _bundle_members(str(key), pages[key]):
                _write_member(zf, name, data)
    return out_zip


def prepare_html(text: str) -> str:
    """Official post-processing of a page before it is served.

    Takes the first ```html fenced block when the text is a raw model answer, strips every
    iframe, and points the asset placeholder at ASSETS_URL_PREFIX.
    """
    return replace_placeholder(strip_iframes(extract_answer_html(text)))


def decode_page(data: bytes) -> tuple[str, str | None]:
    """Page bytes -> (text, warning or None); see the module docstring for the choice made."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16"), None
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        warning = (
            f"is not valid UTF-8 (first bad byte at offset {exc.start}); undecodable bytes were replaced by U+FFFD"
        )
        return data.decode("utf-8", "replace"), warning


def read_page(path: Path) -> str:
    """The page at ``path`` decoded and post-processed, ready to serve."""
    return prepare_html(decode_page(Path(path).read_bytes())[0])


def task_sort_key(key: str) -> tuple:
    """Numeric task keys in number order, then the others alphabetically."""
    return (0, int(key), "") if key.isdigit() else (1, 0, key)


# ---------------------------------------------------------------- page post-processing

_FENCE_OPEN = re.compile(r"```[ \t]*html\b[ \t]*\n?", re.IGNORECASE)
_FENCE_CLOSE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_DOCUMENT_START = re.compile(r"<(?:!doctype|html|head|body)\b", re.IGNORECASE)
_TAG_REST = r"""(?:(?:[^>"']|"[^"]*"|'[^']*')*>|[^>]*>?)"""
_IFRAME_OPEN = re.compile(r"<iframe(?=[\s/>]|$)" + _TAG_REST, re.IGNORECASE)
_IFRAME_TOKEN = re.compile(
    r"(?P<open><iframe(?=[\s/>]|$)" + _TAG_REST + r")|(?P<close></iframe(?=[\s/>]|$)[^>]*>?)", re.IGNORECASE
)
_PLACEHOLDER = re.compile(r"(?:\.?/)?" + re.escape(ASSET_PLACEHOLDER) + r"(/*)(?=([\w%.~-])?)")


def extract_answer_html(text: str) -> str:
    """The first ```html block when ``text`` is a raw model answer, else ``text`` unchanged.

    A text counts as a raw answer when the fence comes before any HTML document start, so
    a real page that merely shows a markdown sample somewhere is left alone. An answer cut
    off before its closing fence keeps everything after the opening one.
    """
    opening = _FENCE_OPEN.search(text)
    if not opening or _DOCUMENT_START.search(text, 0, opening.start()):
        return text
    body = text[opening.end():]
    closing = _FENCE_CLOSE_LINE.search(body)
    end = closing.start() if closing else body.find("```")
    return (body if end < 0 else body[:end]).strip()


def strip_iframes(html: str) -> str:
    """Remove every iframe: ``<iframe ...>...</iframe>`` blocks, unclosed or self-closing tags, stray ends.

    Like a browser, everything up to the next ``</iframe>`` belongs to the iframe (``/>``
    does not close it). An iframe never closed loses only its tag. One linear pass.
    """
    out: list[str] = []
    pos = 0
    open_match = None
    for token in _IFRAME_TOKEN.finditer(html):
        if token.group("open") and open_match is None:
            out.append(html[pos:token.start()])
            open_match = token
        elif token.group("close") and open_match is not None:
            pos, open_match = token.end(), None
        elif token.group("close"):
            out.append(html[pos:token.start()])
            pos = token.end()
    if open_match is not None:
        out.append(_IFRAME_OPEN.sub("", html[open_match.end():]))
    else:
        out.append(html[pos:])
    return "".join(out)


def replace_placeholder(html: str) -> str:
    """``__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png`` -> ``/__assets__/asset001.png``.

    Also mends the usual slips: a missing or doubled slash after the placeholder, and a
    ``/`` or ``./`` before it (which would otherwise make a ``//host`` URL).
    """

    def replace(match: re.Match) -> str:
        slash = "/" if match.group(1) or match.group(2) else ""
        return ASSETS_URL_PREFIX + slash

    return _PLACEHOLDER.sub(replace, html)


# ---------------------------------------------------------------- intake pipeline


def _extract(source: Path, dest: Path, task_keys: set[str], limits: Limits) -> BundleReport:
    """Intake into ``dest``; when the report has problems, ``dest`` has been emptied again."""
    _prepare_dest(source, dest)
    try:
        report = _intake(source, dest, task_keys, limits)
    except BaseException:
        _empty_dir(dest)
        raise
    if report.problems:
        _empty_dir(dest)
        report.problems = _capped(report.problems)
    return report


def _intake(source: Path, dest: Path, task_keys: set[str], limits: Limits) -> BundleReport:
    with _open_source(source, limits) as (entries, opener):
        problems, warnings = _check_entries(entries, task_keys, limits)
        blocked = bool(problems)
        for entry in entries:
            problems.extend(entry.problems)
        if not blocked:
            problems.extend(_write_entries(entries, opener, dest, limits))
    report = _match_tasks(_content(entries), task_keys)
    # A blocked bundle may not have been listed in full, so "no page" would be a guess.
    report.problems = problems + ([] if blocked else report.problems)
    report.warnings = warnings + report.warnings
    if not report.problems:
        report.warnings.extend(_page_warnings(dest, report.pages))
    return report


def _check_entries(entries: list[_Entry], task_keys: set[str], limits: Limits) -> tuple[list[str], list[str]]:
    """Per-entry problems go on each entry; returns (bundle-wide blocking problems, warnings)."""
    for entry in entries:
        entry.problems.extend(_entry_problems(entry, limits))
    warnings = []
    junk = [entry for entry in entries if entry.path and _is_os_junk(entry.path)]
    if junk:
        warnings.append(f"ignored {len(junk)} operating-system metadata file(s) such as {_show(junk[0].path)}")
    wrapper = _strip_wrapper(_content(entries), task_keys)
    if wrapper:
        warnings.append(f"every file was inside the folder {_show(wrapper)}/, which was read as the bundle root")
    _mark_duplicates(_content(entries))
    return _bundle_problems(entries, limits), warnings


def _content(entries: list[_Entry]) -> list[_Entry]:
    """Entries that make up the bundle: usable names, not operating-system metadata."""
    return [entry for entry in entries if entry.path and not _is_os_junk(entry.path)]


def _bundle_problems(entries: list[_Entry], limits: Limits) -> list[str]:
    """Problems of the bundle as a whole; any of them stops extraction before a byte is written."""
    problems = []
    if len(entries) > limits.max_files:
        problems.append(f"bundle has more than the limit of {limits.max_files} entries (files and folders)")
    total = sum(entry.size for entry in entries if entry.kind == "file")
    if total > limits.max_total_bytes:
        problems.append(f"bundle unpacks to {_mb(total)}; the limit is {_mb(limits.max_total_bytes)} in all")
    if not any(entry.kind == "file" for entry in _content(entries)) and not any(e.problems for e in entries):
        problems.append("bundle is empty: it holds no files")
    return problems


def _entry_problems(entry: _Entry, limits: Limits) -> list[str]:
    path, problem = _normalise_name(entry, limits)
    if problem:
        return [f"{_show(entry.raw_name)}: {problem}"]
    entry.path = path
    if _is_os_junk(path):
        return []  # never read nor extracted
    shown = _show(path)
    if entry.kind == "symlink":
        return [f"{shown}: symbolic links are not accepted"]
    if entry.kind == "special":
        return [f"{shown}: only regular files and folders are accepted (this is a device, pipe or socket)"]
    if entry.kind == "dir":
        return []
    return [f"{shown}: {problem}" for problem in _file_problems(entry, limits)]


def _normalise_name(entry: _Entry, limits: Limits) -> tuple[str, str | None]:
    """Relative POSIX path of an entry, or a reason its name is unacceptable."""
    name = entry.raw_name
    if not entry.name_ok:
        return "", "file name is not valid UTF-8"
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        return "", "file name contains control characters"
    name = name.replace("\\", "/")  # some Windows tools write backslashes despite the zip spec
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "", "absolute paths are not accepted; use paths relative to the bundle"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return "", "path leaves the bundle ('..' is not accepted)"
    path = "/".join(parts)
    too_long = len(path.encode()) > limits.max_path_bytes
    if too_long or any(len(part.encode()) > _MAX_COMPONENT_BYTES for part in parts):
        return "", f"path is too long (at most {_MAX_COMPONENT_BYTES} bytes per name, {limits.max_path_bytes} in all)"
    if not path and entry.kind != "dir":
        return "", "empty file name"
    return path, None


def _file_problems(entry: _Entry, limits: Limits) -> Iterator[str]:
    if isinstance(entry.origin, zipfile.ZipInfo):
        yield from _zip_member_problems(entry.origin)
    if entry.size > limits.max_file_bytes:
        yield f"file is {_mb(entry.size)}; the limit per file is {_mb(limits.max_file_bytes)}"
    ratio = entry.size / max(entry.compressed or 1, 1)
    if entry.compressed is not None and entry.size >= limits.ratio_floor_bytes and ratio > limits.max_ratio:
        yield f"compression ratio {ratio:.0f}:1 exceeds {limits.max_ratio:.0f}:1 (possible zip bomb)"
    suffix = next((s for s in _ARCHIVE_SUFFIXES if entry.path.lower().endswith(s)), None)
    if suffix:
        yield f"archives inside the bundle are not accepted ({suffix}); put the files themselves in the bundle"


def _zip_member_problems(info: zipfile.ZipInfo) -> Iterator[str]:
    if info.flag_bits & 0x1:
        yield "encrypted files are not accepted"
    if info.compress_type not in _ZIP_METHODS:
        yield f"unsupported compression method {info.compress_type}; use deflate"


def _is_os_junk(path: str) -> bool:
    parts = path.split("/")
    return parts[0] in _OS_JUNK_DIRS or parts[-1] in _OS_JUNK_FILES or parts[-1].startswith("._")


def _strip_wrapper(entries: list[_Entry], task_keys: set[str]) -> str | None:
    """Drop one folder that wraps the whole bundle when no task folder sits at the top."""
    files = [entry for entry in entries if entry.kind == "file"]
    tops = {entry.path.split("/")[0] for entry in files}
    if len(tops) != 1 or tops & task_keys or any("/" not in entry.path for entry in files):
        return None
    wrapper = tops.pop()
    for entry in entries:
        entry.path = entry.path[len(wrapper) + 1:] if entry.path.startswith(wrapper + "/") else ""
    return wrapper


def _mark_duplicates(entries: list[_Entry]) -> None:
    """Names that collide exactly, by letter case, by Unicode normalisation, or as file versus folder."""
    seen: dict[str, tuple[str, str]] = {}
    for entry in entries:
        parts = entry.path.split("/")
        claims = [("/".join(parts[:i]), "dir") for i in range(1, len(parts))]
        claims.append((entry.path, entry.kind if entry.kind == "file" else "dir"))
        for path, kind in claims:
            clash = _claim(seen, path, kind)
            if clash and clash not in entry.problems:
                entry.problems.append(clash)


def _claim(seen: dict[str, tuple[str, str]], path: str, kind: str) -> str | None:
    key = unicodedata.normalize("NFC", path).casefold()
    if key not in seen:
        seen[key] = (path, kind)
        return None
    first_path, first_kind = seen[key]
    if kind == first_kind == "dir" and path == first_path:
        return None
    if kind != first_kind:
        return f"{_show(path)}: the same name is used for a file and a folder"
    if path == first_path:
        return f"{_show(path)}: the name appears more than once"
    return f"{_show(path)}: clashes with {_show(first_path)} (names must differ by more than letter case or accents)"


def _match_tasks(entries: list[_Entry], task_keys: set[str]) -> BundleReport:
    files = {entry.path for entry in entries if entry.kind == "file" and not entry.problems}
    tops = {entry.path.split("/")[0] for entry in entries if entry.path}
    pages = sorted((key for key in task_keys if f"{key}/{PAGE_NAME}" in files), key=task_sort_key)
    unmatched = sorted(tops - task_keys, key=task_sort_key)
    missing = sorted(task_keys - set(pages), key=task_sort_key)
    warnings = [_missing_page_hint(key, files) for key in missing if key in tops]
    warnings += [
        f"{_show(name)}: a page goes in {name.rsplit('.', 1)[0]}/{PAGE_NAME}"
        for name in unmatched
        if name in files and name.rsplit(".", 1)[0] in task_keys
    ]
    problems = []
    if task_keys and not pages and any(entry.kind == "file" for entry in entries):
        problems.append(_no_pages_problem(unmatched))
    return BundleReport(problems, pages, unmatched, missing, warnings)


def _missing_page_hint(key: str, files: set[str]) -> str:
    inside = sorted(path[len(key) + 1:] for path in files if path.startswith(key + "/"))
    found = ", ".join(_show(name) for name in inside[:5]) or "nothing usable"
    return f"task {key}: folder {key}/ has no {PAGE_NAME} (found: {found})"


def _no_pages_problem(unmatched: list[str]) -> str:
    seen = ", ".join(_show(name) for name in unmatched[:5])
    return f"no task page found: expected <task id>/{PAGE_NAME} (e.g. 1/{PAGE_NAME}); top-level names seen: {seen}"


def _page_warnings(dest: Path, keys: list[str]) -> list[str]:
    warnings = []
    for key in keys:
        data = (dest / key / PAGE_NAME).read_bytes()
        _text, problem = decode_page(data)
        if problem:
            warnings.append(f"task {key}: {PAGE_NAME} {problem}")
        if not data.strip():
            warnings.append(f"task {key}: {PAGE_NAME} is empty")
    return warnings


# ---------------------------------------------------------------- reading sources


@contextmanager
def _open_source(source: Path, limits: Limits):
    """Yields (entries, opener) where opener(entry) returns a binary stream of the entry's bytes."""
    if source.is_dir():
        yield _folder_entries(source, limits), lambda entry: _open_in_folder(source, entry.origin)
        return
    if not source.is_file():
        raise BundleError([f"bundle not found: {_show(source.name)}"])
    with _open_zip(source, limits) as zf:
        yield [_zip_entry(info) for info in zf.infolist()], lambda entry: zf.open(entry.origin)


@contextmanager
def _open_zip(source: Path, limits: Limits):
    size = source.stat().st_size
    if size > limits.max_total_bytes:
        raise BundleError([f"bundle file is {_mb(size)}; the limit is {_mb(limits.max_total_bytes)}"])
    count = _declared_entry_count(source)
    if count is not None and count > limits.max_files:
        # Refused before zipfile builds one object per entry of a hostile archive.
        raise BundleError([f"bundle has {count} entries (files and folders); the limit is {limits.max_files}"])
    try:
        zf = zipfile.ZipFile(source)
    except UnicodeDecodeError:
        raise BundleError(["bundle has a file name marked as UTF-8 that is not valid UTF-8"]) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise BundleError([_not_a_zip_message(source, exc)]) from None
    with zf:
        yield zf


def _not_a_zip_message(source: Path, exc: Exception) -> str:
    with source.open("rb") as fh:
        head = fh.read(_HEAD_BYTES)
    kind = _archive_kind(head)
    if kind and kind != "zip":
        return f"bundle is a {kind} archive, not a zip file; upload a .zip"
    if kind == "zip" or zipfile.is_zipfile(source):
        detail = f" ({exc})" if isinstance(exc, zipfile.BadZipFile) else ""  # OSError text may hold server paths
        return f"bundle is a corrupt zip file{detail}"
    return "bundle is not a zip file (or a folder)"


def _declared_entry_count(path: Path) -> int | None:
    """Entry count from the zip's end-of-central-directory record (zip64 aware), or None."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - 65_557))  # the record plus the longest possible comment
        tail = fh.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    count = struct.unpack("<H", tail[at + 10:at + 12])[0]
    if count != 0xFFFF:
        return count
    at64 = tail.rfind(b"PK\x06\x06", 0, at)
    if at64 < 0 or at - at64 < 40:
        return None
    return struct.unpack("<Q", tail[at64 + 32:at64 + 40])[0]


def _zip_entry(info: zipfile.ZipInfo) -> _Entry:
    name, name_ok = info.orig_filename, True
    if not info.flag_bits & 0x800:
        # Not flagged UTF-8: zipfile decoded it as cp437; recover the bytes and insist on UTF-8
        # (Linux and macOS tools write UTF-8 without setting the flag).
        raw = name.encode("cp437")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            name, name_ok = raw.decode("utf-8", "backslashreplace"), False
    return _Entry(name, _zip_kind(info, name), info.file_size, info.compress_size, info, name_ok)


def _zip_kind(info: zipfile.ZipInfo, name: str) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "symlink"
    if name.endswith(("/", "\\")) or stat.S_ISDIR(mode):
        return "dir"
    if mode and not stat.S_ISREG(mode) and stat.S_IFMT(mode):
        return "special"
    return "file"


def _folder_entries(root: Path, limits: Limits) -> list[_Entry]:
    """Every entry under ``root`` without following symlinks; stops early past the file limit."""
    entries: list[_Entry] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(root / rel if rel else root) as scan:
            for item in sorted(scan, key=lambda item: item.name):
                entry = _folder_entry(item, f"{rel}/{item.name}" if rel else item.name)
                entries.append(entry)
                if len(entries) > limits.max_files:
                    return entries  # enough to refuse it; do not walk the rest
                if entry.kind == "dir":
                    pending.append(entry.origin)
    return entries


def _folder_entry(item: os.DirEntry, rel: str) -> _Entry:
    info = item.stat(follow_symlinks=False)
    mode = info.st_mode
    kind = "symlink" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file"
    if kind == "file" and not stat.S_ISREG(mode):
        kind = "special"
    try:
        rel.encode("utf-8")
        name_ok = True
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        name_ok = False
    shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _Entry(shown if not name_ok else rel, kind, info.st_size if kind == "file" else 0, None, rel, name_ok)


def _open_in_folder(root: Path, rel: str) -> BinaryIO:
    """Open root/rel for reading, refusing a symlink at every level (the folder may change under us)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise OSError(f"{rel} is no longer a regular file")
    return os.fdopen(file_fd, "rb")


# ---------------------------------------------------------------- writing


def _write_entries(entries: list[_Entry], opener: _Opener, dest: Path, limits: Limits) -> list[str]:
    problems = []
    budget = limits.max_total_bytes
    for entry in _content(entries):
        if entry.problems or entry.kind != "file":
            continue
        target = dest.joinpath(*entry.path.split("/"))
        if dest.resolve() not in target.resolve().parents:  # defence in depth; names are checked above
            problems.append(f"{_show(entry.path)}: path leaves the bundle")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        problem, written = _copy_entry(entry, opener, target, min(limits.max_file_bytes, budget))
        budget -= written
        if problem:
            problems.append(f"{_show(entry.path)}: {problem}")
    return problems


def _copy_entry(entry: _Entry, opener: _Opener, target: Path, max_bytes: int) -> tuple[str | None, int]:
    """Stream one entry to ``target``; returns (problem or None, bytes written)."""
    try:
        stream = opener(entry)
    except (*_ZIP_READ_ERRORS, NotImplementedError, RuntimeError) as exc:
        return f"cannot be read ({exc})", 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with stream, os.fdopen(os.open(target, flags, 0o644), "wb") as out:
        written = 0
        head = b""
        while True:
            try:
                chunk = stream.read(_CHUNK)
            except _ZIP_READ_ERRORS as exc:
                return f"corrupt data ({exc})", written
            if len(head) < _HEAD_BYTES:
                head += chunk[:_HEAD_BYTES - len(head)]
                kind = _archive_kind(head) if len(head) >= _HEAD_BYTES or not chunk else None
                if kind:
                    return f"archives inside the bundle are not accepted (this file is a {kind} archive)", written
            if not chunk:
                return None, written
            written += len(chunk)
            if written > max_bytes:
                return f"holds more than {_mb(max_bytes)}, over the limit", written
            out.write(chunk)


def _archive_kind(head: bytes) -> str | None:
    for magic, kind in _ARCHIVE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[257:262] == b"ustar":
        return "tar"
    if re.match(rb"BZh[1-9]1AY&SY", head):
        return "bzip2"
    return None


def _prepare_dest(source: Path, dest: Path) -> None:
    if source.is_dir() and (dest.resolve() == source.resolve() or source.resolve() in dest.resolve().parents):
        raise ValueError("the destination folder must not be inside the bundle folder")
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"destination folder is not empty: {dest}")


def _empty_dir(folder: Path) -> None:
    """Remove everything intake wrote (the folder was empty before)."""
    if not folder.is_dir():
        return
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


# ---------------------------------------------------------------- building bundles


def _bundle_members(key: str, page: str | Path) -> Iterator[tuple[str, bytes]]:
    if isinstance(page, str):
        yield f"{key}/{PAGE_NAME}", page.encode("utf-8")
    elif page.is_dir():
        for path in sorted(page.rglob("*")):
            if path.is_file() and not path.is_symlink():
                yield f"{key}/{path.relative_to(page).as_posix()}", path.read_bytes()
    else:
        yield f"{key}/{PAGE_NAME}", page.read_bytes()


def _write_member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)


# ---------------------------------------------------------------- messages


def _show(name: str) -> str:
    """A name safe to print: control characters escaped, very long names shortened."""
    shown = "".join(char if char.isprintable() else repr(char)[1:-1] for char in name)
    return shown if len(shown) <= 160 else shown[:150] + "..." + shown[-7:]


def _mb(size: int) -> str:
    return f"{size / MiB:.1f} MB" if size >= MiB / 10 else f"{size} bytes"


def _capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_REPORTED_PROBLEMS:
        return problems
    extra = len(problems) - MAX_REPORTED_PROBLEMS
    return problems[:MAX_REPORTED_PROBLEMS] + [f"... and {extra} more problems"]

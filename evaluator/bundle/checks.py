"""Checks on a bundle's entries before anything is written: names, kinds, sizes, clashes, task pages."""

from __future__ import annotations

import re
import unicodedata
import zipfile
from collections.abc import Iterator
from pathlib import Path

from evaluator.bundle.layout import Layout, resolve_layout
from evaluator.bundle.model import PAGE_NAME, BundleReport, Entry, Limits, mb, show
from evaluator.bundle.pages import decode_page, task_sort_key

# Linux refuses longer path components (NAME_MAX); catch it as a bundle problem.
_MAX_COMPONENT_BYTES = 255

# Files that operating systems add to archives on their own; never part of a page.
_OS_JUNK_DIRS = frozenset({"__MACOSX"})
_OS_JUNK_FILES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})

_ARCHIVE_SUFFIXES = (
    ".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz", ".tbz2", ".xz", ".txz", ".7z", ".rar",
    ".zst", ".lz", ".lzma", ".z", ".cab", ".jar", ".war", ".apk",
)
_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})


def check_entries(entries: list[Entry], task_keys: set[str], limits: Limits) -> tuple[list[str], list[str], Layout]:
    """Per-entry problems go on each entry; returns (bundle-wide blocking problems, warnings, layout)."""
    for entry in entries:
        entry.problems.extend(_entry_problems(entry, limits))
    warnings = []
    junk = [entry for entry in entries if entry.path and _is_os_junk(entry.path)]
    if junk:
        warnings.append(f"ignored {len(junk)} operating-system metadata file(s) such as {show(junk[0].path)}")
    seen = _seen(content_entries(entries))  # before any re-rooting: what the submitter packed
    wrapper = _strip_wrapper(content_entries(entries), task_keys)
    if wrapper:
        warnings.append(f"every file was inside the folder {show(wrapper)}/, which was read as the bundle root")
    layout, problems, layout_warnings = resolve_layout(content_entries(entries), task_keys)
    layout.wrapper, layout.seen = wrapper, seen
    warnings += layout_warnings
    _mark_duplicates(content_entries(entries))
    return _bundle_problems(entries, limits) + problems, warnings, layout


def content_entries(entries: list[Entry]) -> list[Entry]:
    """Entries that make up the bundle: usable names, not operating-system metadata."""
    return [entry for entry in entries if entry.path and not _is_os_junk(entry.path)]


def _bundle_problems(entries: list[Entry], limits: Limits) -> list[str]:
    """Problems of the bundle as a whole; any of them stops extraction before a byte is written."""
    problems = []
    if len(entries) > limits.max_files:
        problems.append(f"bundle has more than the limit of {limits.max_files} entries (files and folders)")
    total = sum(entry.size for entry in entries if entry.kind == "file")
    if total > limits.max_total_bytes:
        problems.append(f"bundle unpacks to {mb(total)}; the limit is {mb(limits.max_total_bytes)} in all")
    if not any(entry.kind == "file" for entry in content_entries(entries)) and not any(e.problems for e in entries):
        problems.append(f"bundle is empty: it holds no files ({_empty_detail(entries)})")
    return problems


def _empty_detail(entries: list[Entry]) -> str:
    folders = [f"{show(entry.path)}/" for entry in content_entries(entries) if entry.kind == "dir"]
    junk = [show(entry.path) for entry in entries if entry.path and _is_os_junk(entry.path)]
    if folders:
        return f"seen: {len(folders)} empty folder(s) such as " + ", ".join(folders[:3])
    if junk:
        return f"seen: only operating-system metadata such as {junk[0]}"
    return "seen: no entries at all"


def _entry_problems(entry: Entry, limits: Limits) -> list[str]:
    path, problem = _normalise_name(entry, limits)
    if problem:
        return [f"{show(entry.raw_name)}: {problem}"]
    entry.path = path
    if _is_os_junk(path):
        return []  # never read nor extracted
    shown = show(path)
    if entry.kind == "symlink":
        return [f"{shown}: symbolic links are not accepted"]
    if entry.kind == "special":
        return [f"{shown}: only regular files and folders are accepted (this is a device, pipe or socket)"]
    if entry.kind == "dir":
        return []
    return [f"{shown}: {problem}" for problem in _file_problems(entry, limits)]


def _normalise_name(entry: Entry, limits: Limits) -> tuple[str, str | None]:
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


def _file_problems(entry: Entry, limits: Limits) -> Iterator[str]:
    if isinstance(entry.origin, zipfile.ZipInfo):
        yield from _zip_member_problems(entry.origin)
    if entry.size > limits.max_file_bytes:
        yield f"file is {mb(entry.size)}; the limit per file is {mb(limits.max_file_bytes)}"
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


def _strip_wrapper(entries: list[Entry], task_keys: set[str]) -> str | None:
    """Drop one folder that wraps the whole bundle when no task folder sits at the top."""
    files = [entry for entry in entries if entry.kind == "file"]
    tops = {entry.path.split("/")[0] for entry in files}
    if len(tops) != 1 or tops & task_keys or any("/" not in entry.path for entry in files):
        return None
    wrapper = tops.pop()
    for entry in entries:
        entry.path = entry.path[len(wrapper) + 1:] if entry.path.startswith(wrapper + "/") else ""
    return wrapper


def _mark_duplicates(entries: list[Entry]) -> None:
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
        return f"{show(path)}: the same name is used for a file and a folder"
    if path == first_path:
        return f"{show(path)}: the name appears more than once"
    return f"{show(path)}: clashes with {show(first_path)} (names must differ by more than letter case or accents)"


def match_tasks(entries: list[Entry], task_keys: set[str], seen: str = "") -> BundleReport:
    files = {entry.path for entry in entries if entry.kind == "file" and not entry.problems}
    tops = {entry.path.split("/")[0] for entry in entries if entry.path}
    pages = sorted((key for key in task_keys if f"{key}/{PAGE_NAME}" in files), key=task_sort_key)
    unmatched = sorted(tops - task_keys, key=task_sort_key)
    missing = sorted(task_keys - set(pages), key=task_sort_key)
    warnings = [_missing_page_hint(key, files) for key in missing if key in tops]
    warnings += [
        f"{show(name)}: a page goes in {name.rsplit('.', 1)[0]}/{PAGE_NAME}"
        for name in unmatched
        if name in files and name.rsplit(".", 1)[0] in task_keys
    ]
    problems = []
    if task_keys and not pages and any(entry.kind == "file" for entry in entries):
        problems.append(_no_pages_problem(seen or _seen(entries)))
    return BundleReport(problems, pages, unmatched, missing, warnings)


def _missing_page_hint(key: str, files: set[str]) -> str:
    inside = sorted(path[len(key) + 1:] for path in files if path.startswith(key + "/"))
    found = ", ".join(show(name) for name in inside[:5]) or "nothing usable"
    return f"task {key}: folder {key}/ has no {PAGE_NAME} (found: {found})"


def _no_pages_problem(seen: str) -> str:
    return (f"no task page found: expected <task id>/{PAGE_NAME} or <task id>/<model folder>/{PAGE_NAME} "
            f"(e.g. 1/{PAGE_NAME}), possibly inside one wrapper folder; seen: {seen}")


def _seen(entries: list[Entry], shown: int = 6) -> str:
    """The top of the bundle as packed: its first names, each folder with a few names inside."""
    tree: dict[str, set[str]] = {}
    for entry in entries:
        if not entry.path:
            continue
        top, _, rest = entry.path.partition("/")
        inside = tree.setdefault(top + ("/" if rest or entry.kind == "dir" else ""), set())
        if rest:
            inside.add(rest.split("/")[0] + ("/" if "/" in rest or entry.kind == "dir" else ""))
    if not tree:
        return "nothing usable"
    parts = []
    for name in sorted(tree, key=lambda name: task_sort_key(name.rstrip("/")))[:shown]:
        inside = sorted(tree[name], key=lambda name: task_sort_key(name.rstrip("/")))
        holds = ", ".join(show(item) for item in inside[:3]) + (", ..." if len(inside) > 3 else "")
        parts.append(show(name) + (f" (holding {holds})" if holds else ""))
    more = len(tree) - shown
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def page_warnings(dest: Path, keys: list[str]) -> list[str]:
    warnings = []
    for key in keys:
        data = (dest / key / PAGE_NAME).read_bytes()
        _text, problem = decode_page(data)
        if problem:
            warnings.append(f"task {key}: {PAGE_NAME} {problem}")
        if not data.strip():
            warnings.append(f"task {key}: {PAGE_NAME} is empty")
    return warnings

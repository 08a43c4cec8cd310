"""The intake run: check every entry, write the accepted ones, and leave nothing behind on refusal."""

from __future__ import annotations

import lzma
import os
import shutil
import zipfile
import zlib
from pathlib import Path

from evaluator.bundle.checks import check_entries, content_entries, match_tasks, page_warnings
from evaluator.bundle.model import BundleReport, Entry, Limits, Opener, capped, mb, show
from evaluator.bundle.sources import HEAD_BYTES, archive_kind, open_source

_CHUNK = 64 * 1024
_ZIP_READ_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError)


def extract(source: Path, dest: Path, task_keys: set[str], limits: Limits) -> BundleReport:
    """Intake into ``dest``; when the report has problems, ``dest`` has been emptied again."""
    _prepare_dest(source, dest)
    try:
        report = _intake(source, dest, task_keys, limits)
    except BaseException:
        _empty_dir(dest)
        raise
    if report.problems:
        _empty_dir(dest)
        report.problems = capped(report.problems)
    return report


def _intake(source: Path, dest: Path, task_keys: set[str], limits: Limits) -> BundleReport:
    with open_source(source, limits) as (entries, opener):
        problems, warnings, layout = check_entries(entries, task_keys, limits)
        blocked = bool(problems)
        for entry in entries:
            problems.extend(entry.problems)
        if not blocked:
            problems.extend(_write_entries(entries, opener, dest, limits))
    report = match_tasks(content_entries(entries), task_keys, layout.seen)
    # A blocked bundle may not have been listed in full, so "no page" would be a guess.
    report.problems = problems + ([] if blocked else report.problems)
    report.warnings = warnings + report.warnings
    report.layout = layout
    if not report.problems:
        report.warnings.extend(page_warnings(dest, report.pages))
    return report


def _write_entries(entries: list[Entry], opener: Opener, dest: Path, limits: Limits) -> list[str]:
    problems = []
    budget = limits.max_total_bytes
    for entry in content_entries(entries):
        if entry.problems or entry.kind != "file":
            continue
        target = dest.joinpath(*entry.path.split("/"))
        if dest.resolve() not in target.resolve().parents:  # defence in depth; names are checked above
            problems.append(f"{show(entry.path)}: path leaves the bundle")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        problem, written = _copy_entry(entry, opener, target, min(limits.max_file_bytes, budget))
        budget -= written
        if problem:
            problems.append(f"{show(entry.path)}: {problem}")
    return problems


def _copy_entry(entry: Entry, opener: Opener, target: Path, max_bytes: int) -> tuple[str | None, int]:
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
            if len(head) < HEAD_BYTES:
                head += chunk[:HEAD_BYTES - len(head)]
                kind = archive_kind(head) if len(head) >= HEAD_BYTES or not chunk else None
                if kind:
                    return f"archives inside the bundle are not accepted (this file is a {kind} archive)", written
            if not chunk:
                return None, written
            written += len(chunk)
            if written > max_bytes:
                return f"holds more than {mb(max_bytes)}, over the limit", written
            out.write(chunk)


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

"""What bundle intake works with: its limits, its results, the entries it reads, and its messages."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

PAGE_NAME = "index.html"

MiB = 1024 * 1024
# A list longer than this helps nobody: the rest is summarised in one line.
MAX_REPORTED_PROBLEMS = 100


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
    layout: Any = None  # evaluator.bundle.layout.Layout


@dataclass
class BundleReport:
    """Everything intake found: fatal problems plus what an accepted bundle would report."""

    problems: list[str]
    pages: list[str]
    unmatched: list[str]
    missing: list[str]
    warnings: list[str]
    layout: Any = None  # evaluator.bundle.layout.Layout; None when the source could not be read


@dataclass
class Entry:
    raw_name: str  # as stored, for messages
    kind: str  # "file" | "dir" | "symlink" | "special"
    size: int
    compressed: int | None  # None for folder bundles
    origin: zipfile.ZipInfo | str  # zip member, or path relative to the source folder
    name_ok: bool = True  # False when the stored name is not valid UTF-8
    path: str = ""  # normalised relative path; "" when the name is unusable
    problems: list[str] = field(default_factory=list)


Opener = Callable[[Entry], BinaryIO]


def show(name: str) -> str:
    """A name safe to print: control characters escaped, very long names shortened."""
    shown = "".join(char if char.isprintable() else repr(char)[1:-1] for char in name)
    return shown if len(shown) <= 160 else shown[:150] + "..." + shown[-7:]


def mb(size: int) -> str:
    return f"{size / MiB:.1f} MB" if size >= MiB / 10 else f"{size} bytes"


def capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_REPORTED_PROBLEMS:
        return problems
    extra = len(problems) - MAX_REPORTED_PROBLEMS
    return problems[:MAX_REPORTED_PROBLEMS] + [f"... and {extra} more problems"]

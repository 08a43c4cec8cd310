"""Safe intake of submission bundles, and the official post-processing of pages.

A bundle holds ``<task key>/index.html`` for each task (plus sibling files the page
references relatively). It arrives as a zip file or a folder, possibly wrapped in one
top-level folder (``mymodel/1/index.html``). Bundles come from strangers, so intake
assumes hostility: every name, size and byte is checked, nothing is ever written
outside the destination folder, symlinks are never created or followed, and a rejected
bundle leaves the destination empty. Every problem found is reported at once, so a
person fixing an upload sees the whole list, not one error per attempt.

How pages are decoded and post-processed is in ``evaluator.bundle.pages``; every name
other code uses is importable from ``evaluator.bundle`` itself.
"""

from __future__ import annotations

import stat
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from evaluator.bundle import intake
from evaluator.bundle.model import (
    MAX_REPORTED_PROBLEMS,
    PAGE_NAME,
    Bundle,
    BundleError,
    BundleReport,
    Limits,
    MiB,
)
from evaluator.bundle.pages import (
    ASSET_PLACEHOLDER,
    ASSETS_URL_PREFIX,
    decode_page,
    extract_answer_html,
    prepare_html,
    read_page,
    replace_placeholder,
    strip_iframes,
    task_sort_key,
)

__all__ = [
    "ASSETS_URL_PREFIX", "ASSET_PLACEHOLDER", "MAX_REPORTED_PROBLEMS", "PAGE_NAME", "Bundle", "BundleError",
    "BundleReport", "Limits", "MiB", "check_bundle", "decode_page", "extract_answer_html", "extract_bundle",
    "inspect_bundle", "make_bundle_zip", "prepare_html", "read_page", "replace_placeholder", "strip_iframes",
    "task_sort_key", "validate_bundle",
]


def extract_bundle(source: Path, dest: Path, task_keys: set[str], limits: Limits = Limits()) -> Bundle:
    """Check ``source`` (zip or folder) and extract it into ``dest``, which must be empty or absent.

    Raises BundleError listing every fatal problem; ``dest`` is then left empty.
    """
    dest = Path(dest)
    report = intake.extract(Path(source), dest, {str(key) for key in task_keys}, limits)
    if report.problems:
        raise BundleError(report.problems, report)
    pages = {key: dest / key / PAGE_NAME for key in report.pages}
    return Bundle(dest, pages, report.unmatched, report.missing, report.warnings, report.layout)


def inspect_bundle(source: Path, task_keys: set[str], limits: Limits = Limits()) -> BundleReport:
    """Run every intake check in a throw-away folder and return the full report."""
    with tempfile.TemporaryDirectory(prefix="iwr-bundle-check-") as tmp:
        try:
            return intake.extract(Path(source), Path(tmp) / "bundle", {str(key) for key in task_keys}, limits)
        except BundleError as exc:  # the source itself is unreadable
            return BundleReport(exc.problems, [], [], [], [])


def check_bundle(source: Path, task_keys: set[str] | list[str], limits: Limits = Limits()) -> dict:
    """A dry run of intake against a task list, as a JSON-ready report (nothing is scored or kept).

    ``accepted`` is whether scoring would take the bundle; ``pages`` lists the tasks that have a
    page, ``missing`` those that would score 0, ``ignored`` the top-level folders matching no task,
    ``layout`` how the pages were laid out (see evaluator.bundle.layout).
    """
    keys = {str(key) for key in task_keys}
    report = inspect_bundle(source, keys, limits)
    layout = report.layout.as_dict() if report.layout else None
    return {"accepted": not report.problems, "tasks": len(keys), "pages": report.pages, "missing": report.missing,
            "ignored": report.unmatched, "layout": layout, "problems": report.problems, "warnings": report.warnings}


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

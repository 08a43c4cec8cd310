"""Live previews of submitted pages: signed links, the unpacked bundle, and the policy they run under.

A submitted page is untrusted HTML, so a preview is only ever served

- behind a signed link that expires (``PREVIEW_LINK_SECONDS``) and names whom it was issued
  to. The preview view never reads cookies or the session: a preview renders without them,
  and a deployer may serve previews from a host of their own (``PREVIEW_ORIGIN``);
- with ``Content-Security-Policy: sandbox allow-scripts; ...`` (:func:`content_security_policy`):
  even opened directly in a tab, the page runs in an opaque origin, so it cannot read the
  site's cookies or storage, submit forms or open windows, and it has no network at all
  (``connect-src 'none'``): it may load the bundle's own files under its link and the task's
  public assets, nothing else;
- inside ``<iframe sandbox="allow-scripts">`` on the submission page (the same opaque origin).

Reference-page baselines of held-out tasks are ground truth: only staff may preview them
(:func:`leaderboard.access.reveals_ground_truth`, the rule the replays follow too).

Unpacked bundles expire (:func:`sweep`): a folder no link has opened for a link's lifetime
plus a margin is removed, and so is the folder of a submission that was deleted or whose
bundle was withdrawn or replaced. Creating a preview sweeps a little (:func:`maybe_sweep`);
``manage.py clean_previews`` sweeps everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.db import DatabaseError
from django.urls import reverse

from evaluator.bundle import ASSETS_URL_PREFIX, PAGE_NAME, BundleError, extract_bundle, read_page
from leaderboard import access, tasksets
from leaderboard.models import Submission, Task
from leaderboard.models.submissions import copy_bundle

SALT = "leaderboard.preview"
PUBLIC, MANAGER, STAFF = "public", "manager", "staff"
ASSETS_PATH = ASSETS_URL_PREFIX.strip("/") + "/"  # the task's assets inside a preview link: __assets__/NAME

# A folder's modification time says when a link last opened it (refreshed at most this often).
KEEP_ALIVE_SECONDS = 300
# Beyond the link lifetime: a page may still be loading files when its link expires, and clocks differ.
EXPIRY_MARGIN_SECONDS = 3600
# Creating a preview sweeps at most this many folders, at most once per interval across processes.
SWEEP_LIMIT = 20
SWEEP_INTERVAL_SECONDS = 600
FOLDER = re.compile(r"([0-9]+)-[0-9a-z]+")  # <submission id>-<bundle tag>
UNPACKING, CONDEMNED, SWEPT = ".unpack-", ".expired-", ".swept"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """What a valid preview link opens: one task's page of one submission."""

    submission: Submission
    task: Task


# --------------------------------------------------------------------------- who may preview what


def audience(user, submission: Submission) -> str:
    """How a link issued to ``user`` is checked later: as staff, as the owner, or as the public."""
    if access.is_staff(user):
        return STAFF
    return MANAGER if access.can_manage(user, submission) else PUBLIC


def allowed(submission: Submission, reader: str) -> bool:
    """Whether a reader of this audience may preview ``submission`` (which they can already open)."""
    if not submission.bundle:
        return False  # paper rows, endpoint submissions still generating their pages
    if reader == STAFF:
        return True
    if access.reveals_ground_truth(submission):
        return False  # the reference pages (and snapshots of them) of held-out tasks
    return reader == MANAGER or submission.public


def link(submission: Submission, task_key: str, reader: str) -> str:
    """A signed, expiring URL of one task's page of ``submission`` (on PREVIEW_ORIGIN if set)."""
    token = signing.dumps({"s": submission.pk, "k": task_key, "a": reader}, salt=SALT)
    return settings.PREVIEW_ORIGIN + reverse("preview", args=[token])


def resolve(token: str) -> Target | None:
    """The submission and task of a preview link, or None (forged, expired, or no longer allowed:
    a link given to the public stops working once its submission is made private)."""
    try:
        claims = signing.loads(token, salt=SALT, max_age=settings.PREVIEW_LINK_SECONDS)
    except signing.BadSignature:
        return None
    if not isinstance(claims, dict):
        return None
    submission = Submission.objects.filter(pk=claims.get("s")).first()
    if submission is None or not allowed(submission, claims.get("a")):
        return None
    task = tasksets.split_tasks(submission.split).filter(key=claims.get("k")).first()
    return Target(submission, task) if task else None


# --------------------------------------------------------------------------- the bundle's files


def unpacked(submission: Submission) -> Path | None:
    """The bundle unpacked once (by the same safe intake the evaluator uses) under PREVIEW_ROOT.

    A bundle the intake refuses gives an empty folder (no page to show); None when the stored
    file cannot be read right now (nothing is cached then).
    """
    root = Path(settings.PREVIEW_ROOT)
    folder = root / folder_name(submission)
    if folder.is_dir():
        _keep_alive(folder)
        return folder
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{UNPACKING}{submission.pk}-", dir=root))
    created = False
    try:
        try:
            zipped = copy_bundle(submission, work / "bundle.zip")
        except OSError:
            return None
        with contextlib.suppress(BundleError):
            extract_bundle(zipped, work / "pages", tasksets.split_task_keys(submission.split))
        (work / "pages").mkdir(exist_ok=True)
        os.utime(work / "pages")  # its age counts from now, whatever the archive said
        with contextlib.suppress(OSError):  # another process unpacked it first: keep theirs
            os.rename(work / "pages", folder)
            created = True
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if created:
        maybe_sweep()
    return folder if folder.is_dir() else None


def folder_name(submission: Submission) -> str:
    """``<id>-<tag>``: the tag changes when the bundle is replaced, which leaves the old folder to the sweep."""
    tag = hashlib.sha256(f"{submission.bundle.name}\n{submission.bundle_sha256}".encode()).hexdigest()[:16]
    return f"{submission.pk}-{tag}"


def _keep_alive(folder: Path) -> None:
    with contextlib.suppress(OSError):
        if time.time() - folder.stat().st_mtime > KEEP_ALIVE_SECONDS:
            os.utime(folder)


def page_html(folder: Path, key: str, link_path: str) -> str | None:
    """The task's page post-processed as the judge serves it, with asset URLs under the link."""
    path = inside(folder / key, PAGE_NAME)
    if path is None:
        return None
    return read_page(path).replace(ASSETS_URL_PREFIX + "/", link_path + ASSETS_PATH)


def file_path(folder: Path, task: Task, relative: str) -> Path | None:
    """A file under a preview link: one of the task's public assets, or a file beside the page."""
    if relative.startswith(ASSETS_PATH):
        return tasksets.public_file_path(task, "assets/" + relative[len(ASSETS_PATH):])
    return inside(folder / task.key, relative)


def inside(base: Path, relative: str) -> Path | None:
    """``base/relative`` if it is a regular file within ``base`` (no traversal, no way out by a link)."""
    if not relative or "\x00" in relative or not base.is_dir():
        return None
    base = base.resolve()
    candidate = (base / relative).resolve()
    return candidate if candidate.is_relative_to(base) and candidate.is_file() else None


# --------------------------------------------------------------------------- expiry


@dataclass
class Sweep:
    """What a sweep removed (folder name, why), and the symbolic links it refused to touch."""

    removed: list[tuple[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def sweep(now: float | None = None, limit: int | None = None, dry_run: bool = False) -> Sweep:
    """Remove the folders under PREVIEW_ROOT that no valid link can open, oldest first, at most ``limit``.

    Only real directories this module names are candidates; anything else under the root is left
    alone, and a symbolic link is neither followed nor removed, so nothing outside the root goes.
    """
    root = Path(settings.PREVIEW_ROOT)
    now = time.time() if now is None else now
    result = Sweep()
    folders = []
    for entry in _entries(root):
        if entry.is_symlink():
            result.refused.append(entry.name)
        elif entry.is_dir(follow_symlinks=False):
            folders.append((entry.stat(follow_symlinks=False).st_mtime, entry.name))
    current = _current_folders([int(m[1]) for _, name in folders if (m := FOLDER.fullmatch(name))])
    stale = [(mtime, name, why) for mtime, name in sorted(folders) if (why := _why_stale(name, mtime, now, current))]
    for _mtime, name, why in stale[:limit]:
        if dry_run or _remove(root, name):
            result.removed.append((name, why))
    return result


def maybe_sweep() -> None:
    """A bounded sweep, unless one ran in the last SWEEP_INTERVAL_SECONDS (by the marker's time)."""
    marker = Path(settings.PREVIEW_ROOT) / SWEPT
    with contextlib.suppress(FileNotFoundError):
        if time.time() - marker.lstat().st_mtime < SWEEP_INTERVAL_SECONDS:
            return
    try:
        _touch(marker)
        sweep(limit=SWEEP_LIMIT)
    except (OSError, DatabaseError) as exc:  # the preview being opened matters more than tidying up
        log.warning("preview sweep failed: %s", exc)


def _touch(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)  # a link there is an error, not followed
    try:
        os.utime(fd)
    finally:
        os.close(fd)


def _entries(root: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(root) as entries:
            return list(entries)
    except FileNotFoundError:
        return []


def _current_folders(pks: list[int]) -> dict[int, str | None]:
    """The folder each existing submission's bundle unpacks to (None: it has no bundle any more)."""
    rows = Submission.objects.filter(pk__in=set(pks)).only("pk", "bundle", "bundle_sha256")
    return {row.pk: folder_name(row) if row.bundle else None for row in rows}


def _why_stale(name: str, mtime: float, now: float, current: dict[int, str | None]) -> str | None:
    if name.startswith(CONDEMNED):
        return "left over from an interrupted removal"
    if name.startswith(UNPACKING):
        return "unpacking abandoned" if now - mtime > EXPIRY_MARGIN_SECONDS else None
    match = FOLDER.fullmatch(name)
    if match is None:
        return None  # not a preview folder
    pk = int(match[1])
    if pk not in current:
        return "submission deleted"
    if current[pk] is None:
        return "bundle withdrawn"
    if current[pk] != name:
        return "bundle replaced"
    if now - mtime > settings.PREVIEW_LINK_SECONDS + EXPIRY_MARGIN_SECONDS:
        return "expired"
    return None


def _remove(root: Path, name: str) -> bool:
    """Move the folder aside in one step (a request sees it whole or not at all), then delete it."""
    path = root / name
    if not name.startswith(CONDEMNED):
        path = root / f"{CONDEMNED}{name}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(root / name, path)
        except OSError:
            return False  # removed by another sweep meanwhile
    try:
        # Refuses a symbolic link, and on Linux deletes through directory descriptors, following
        # no link inside (shutil.rmtree.avoids_symlink_attacks): nothing outside the folder goes.
        shutil.rmtree(path)
    except OSError as exc:
        log.warning("could not remove preview folder %s: %s", path, exc)
        return False
    return True


# --------------------------------------------------------------------------- the policy


def content_security_policy(link_url: str) -> str:
    """The CSP of everything under a preview link ``link_url`` (absolute, ending in ``/``)."""
    own = _csp_source(link_url)
    return "; ".join((
        "sandbox allow-scripts",  # an opaque origin even when opened directly: no cookies, no storage
        "default-src 'none'",
        f"script-src {own} 'unsafe-inline' 'unsafe-eval'",  # generated pages are mostly inline code
        f"style-src {own} 'unsafe-inline'",
        f"img-src {own} data: blob:",
        f"font-src {own} data:",
        f"media-src {own} data: blob:",
        "connect-src 'none'", "worker-src 'none'", "frame-src 'none'", "object-src 'none'",
        "manifest-src 'none'", "form-action 'none'", "base-uri 'none'",
        f"frame-ancestors {frame_ancestors()}",
    ))


def _csp_source(url: str) -> str:
    # A CSP source may not contain ";" or "," and a path match is by prefix: the link's own path.
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}".replace(";", "%3B").replace(",", "%2C")


def frame_ancestors() -> str:
    """The pages that may frame a preview: this site's own (by its configured URL too)."""
    site = urlsplit(settings.SITE_URL)
    return "'self'" + (f" {site.scheme}://{site.netloc}" if settings.PREVIEW_ORIGIN and site.netloc else "")


def harden(response, link_url: str):
    """Every answer under a preview link, errors included, carries the sandboxing headers."""
    response["Content-Security-Policy"] = content_security_policy(link_url)
    response["X-Content-Type-Options"] = "nosniff"
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "private, max-age=300"
    return response

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
(:func:`leaderboard.submissions.reveals_ground_truth`, the rule the replays follow too).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.urls import reverse

from evaluator.bundle import ASSETS_URL_PREFIX, PAGE_NAME, BundleError, extract_bundle, read_page
from leaderboard import submissions, tasksets
from leaderboard.models import Submission, Task

SALT = "leaderboard.preview"
PUBLIC, MANAGER, STAFF = "public", "manager", "staff"
ASSETS_PATH = ASSETS_URL_PREFIX.strip("/") + "/"  # the task's assets inside a preview link: __assets__/NAME


@dataclass(frozen=True)
class Target:
    """What a valid preview link opens: one task's page of one submission."""

    submission: Submission
    task: Task


# --------------------------------------------------------------------------- who may preview what


def audience(user, submission: Submission) -> str:
    """How a link issued to ``user`` is checked later: as staff, as the owner, or as the public."""
    if user.is_authenticated and user.is_staff:
        return STAFF
    return MANAGER if submissions.can_manage(user, submission) else PUBLIC


def allowed(submission: Submission, reader: str) -> bool:
    """Whether a reader of this audience may preview ``submission`` (which they can already open)."""
    if not submission.bundle:
        return False  # paper rows, endpoint submissions still generating their pages
    if reader == STAFF:
        return True
    if submissions.reveals_ground_truth(submission):
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
    task = submissions.split_tasks(submission.split).filter(key=claims.get("k")).first()
    return Target(submission, task) if task else None


# --------------------------------------------------------------------------- the bundle's files


def unpacked(submission: Submission) -> Path | None:
    """The bundle unpacked once (by the same safe intake the evaluator uses) under PREVIEW_ROOT.

    A bundle the intake refuses gives an empty folder (no page to show); None when the stored
    file cannot be read right now (nothing is cached then).
    """
    root = Path(settings.PREVIEW_ROOT)
    folder = root / f"{submission.pk}-{(submission.bundle_sha256 or 'bundle')[:16]}"
    if folder.is_dir():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".unpack-{submission.pk}-", dir=root))
    try:
        try:
            zipped = submissions.copy_bundle(submission, work / "bundle.zip")
        except OSError:
            return None
        with contextlib.suppress(BundleError):
            extract_bundle(zipped, work / "pages", submissions.split_task_keys(submission.split))
        (work / "pages").mkdir(exist_ok=True)
        with contextlib.suppress(OSError):  # another process unpacked it first: keep theirs
            os.rename(work / "pages", folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder if folder.is_dir() else None


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

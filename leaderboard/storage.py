"""Stored files: uploads under MEDIA_ROOT, ground truth kept apart from them.

MEDIA_ROOT is where uploaded bundles go; a deployment may well serve that folder as it is. Ground
truth must never be there: a held-out reference baseline's bundle *is* the hidden reference pages.
The default storage (:class:`UploadStorage`) therefore keeps every name under
:data:`GROUND_TRUTH_PREFIX` in ``GROUND_TRUTH_ROOT``, outside MEDIA_ROOT, and
:func:`ground_truth_checks` refuses a configuration that nests task files or ground truth inside
a folder served as it is.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core import checks
from django.core.files.storage import FileSystemStorage
from django.utils._os import safe_join

GROUND_TRUTH_PREFIX = "ground-truth/"


class UploadStorage(FileSystemStorage):
    """MEDIA_ROOT's storage, except ground-truth names, which live in GROUND_TRUTH_ROOT."""

    def path(self, name: str) -> str:
        if name.startswith(GROUND_TRUTH_PREFIX):
            return safe_join(str(settings.GROUND_TRUTH_ROOT), name[len(GROUND_TRUTH_PREFIX):])
        return super().path(name)

    def _save(self, name, content):
        saved = super()._save(name, content)  # named relative to MEDIA_ROOT: keep the prefixed name
        return name if name.startswith(GROUND_TRUTH_PREFIX) else saved

    def _ensure_location_group_id(self, full_path):
        # Django gives a saved file MEDIA_ROOT's group; ground truth does not live there.
        if not inside(Path(full_path), Path(settings.GROUND_TRUTH_ROOT)):
            super()._ensure_location_group_id(full_path)

    def url(self, name):
        if str(name).startswith(GROUND_TRUTH_PREFIX):
            raise ValueError("ground truth has no public address")
        return super().url(name)


def inside(path: Path, folder: Path) -> bool:
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


@checks.register(checks.Tags.security)
def ground_truth_checks(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Task files and ground truth must not sit in a folder that may be served as it is."""
    errors = []
    for name in ("TASKS_ROOT", "GROUND_TRUTH_ROOT"):
        for served in ("MEDIA_ROOT", "STATIC_ROOT"):
            if inside(getattr(settings, name), getattr(settings, served)):
                errors.append(checks.Error(
                    f"{name} ({getattr(settings, name)}) is inside {served} ({getattr(settings, served)}).",
                    hint=f"Ground truth must never be reachable through {served}: move it to a folder of its own.",
                    id="leaderboard.E010"))
    return errors

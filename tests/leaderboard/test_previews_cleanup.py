"""Preview folders expire: unused for a link's lifetime plus a margin, or left by a deleted submission
or a withdrawn bundle, they are removed by a bounded sweep when a preview is created and by
``manage.py clean_previews``; nothing outside PREVIEW_ROOT is ever removed."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from leaderboard import previews
from leaderboard.models import Submission
from tests.leaderboard.factories import make_bundle_submission

pytestmark = pytest.mark.django_db
PAGES = {"101": "<!doctype html><p>PAGE</p>"}


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PREVIEW_ROOT = tmp_path / "previews"


def lifetime(settings) -> float:
    return settings.PREVIEW_LINK_SECONDS + previews.EXPIRY_MARGIN_SECONDS


def unpacked(owner) -> Path:
    """A real preview folder of a new submission, with a file in a subfolder."""
    folder = previews.unpacked(make_bundle_submission(owner, pages=PAGES))
    (folder / "101").mkdir(exist_ok=True)
    (folder / "101" / "style.css").write_text("p {}")
    return folder


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)


def test_a_folder_no_link_opened_for_its_lifetime_plus_the_margin_is_removed(owner, settings):
    """Just past link lifetime + margin it goes with everything in it; just before, it stays."""
    old, recent = unpacked(owner), unpacked(owner)
    age(old, lifetime(settings) + 60)
    age(recent, lifetime(settings) - 60)
    result = previews.sweep()
    assert result.removed == [(old.name, "expired")]
    assert not old.exists() and recent.is_dir()
    assert [p.name for p in Path(settings.PREVIEW_ROOT).iterdir() if p.name != previews.SWEPT] == [recent.name]


def test_opening_a_preview_counts_as_use(owner, settings):
    """A folder opened again (a link issued later) gets a fresh time and survives the sweep."""
    submission = make_bundle_submission(owner, pages=PAGES)
    folder = previews.unpacked(submission)
    age(folder, lifetime(settings) + 60)
    assert previews.unpacked(submission) == folder
    assert time.time() - folder.stat().st_mtime < 60
    assert previews.sweep().removed == [] and folder.is_dir()


def test_folders_of_deleted_submissions_and_withdrawn_or_replaced_bundles_go_at_once(owner):
    """However fresh: the submission is gone, its bundle was cleared, or another bundle replaced it."""
    deleted, withdrawn, replaced, kept = (make_bundle_submission(owner, pages=PAGES) for _ in range(4))
    folders = {name: previews.unpacked(s) for name, s in
               (("deleted", deleted), ("withdrawn", withdrawn), ("replaced", replaced), ("kept", kept))}
    Submission.objects.filter(pk=deleted.pk).delete()
    Submission.objects.filter(pk=withdrawn.pk).update(bundle="")
    Submission.objects.filter(pk=replaced.pk).update(bundle="bundles/other.zip")
    removed = dict(previews.sweep().removed)
    assert removed == {folders["deleted"].name: "submission deleted", folders["withdrawn"].name: "bundle withdrawn",
                       folders["replaced"].name: "bundle replaced"}
    assert folders["kept"].is_dir() and not any(folders[k].exists() for k in ("deleted", "withdrawn", "replaced"))


def test_symbolic_links_are_neither_followed_nor_removed(owner, settings, tmp_path):
    """A link named like a stale preview folder stays; a link inside a removed folder loses only itself."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    root = Path(settings.PREVIEW_ROOT)
    root.mkdir()
    (root / "99999-0123456789abcdef").symlink_to(outside, target_is_directory=True)  # no such submission
    (root / f"{previews.CONDEMNED}x").symlink_to(outside, target_is_directory=True)
    folder = unpacked(owner)
    (folder / "101" / "escape").symlink_to(outside, target_is_directory=True)
    age(folder, lifetime(settings) + 60)
    result = previews.sweep()
    assert result.removed == [(folder.name, "expired")] and not folder.exists()
    assert sorted(result.refused) == sorted(["99999-0123456789abcdef", f"{previews.CONDEMNED}x"])
    assert (outside / "precious.txt").read_text() == "keep me"
    assert (root / "99999-0123456789abcdef").is_symlink() and (root / f"{previews.CONDEMNED}x").is_symlink()


def test_only_preview_folders_are_candidates(owner, settings):
    """Other files and folders under the root stay; an unpacking goes only once it is clearly abandoned."""
    root = Path(settings.PREVIEW_ROOT)
    (root / "notes").mkdir(parents=True)
    (root / "README").write_text("mine")
    abandoned, busy = root / f"{previews.UNPACKING}7-abc", root / f"{previews.UNPACKING}8-def"
    abandoned.mkdir()
    busy.mkdir()
    for path in (root / "notes", root / "README", abandoned):
        age(path, lifetime(settings) * 10)
    age(busy, previews.EXPIRY_MARGIN_SECONDS - 60)
    assert previews.sweep().removed == [(abandoned.name, "unpacking abandoned")]
    assert (root / "notes").is_dir() and (root / "README").is_file() and busy.is_dir()


def test_creating_a_preview_sweeps_a_bounded_number_at_most_once_per_interval(owner, settings):
    """The sweep a new preview triggers removes at most SWEEP_LIMIT folders, then waits for the interval."""
    root = Path(settings.PREVIEW_ROOT)
    stale = [root / f"{90000 + n}-00000000000000{n:02d}" for n in range(previews.SWEEP_LIMIT + 5)]
    for folder in stale:
        folder.mkdir(parents=True)
        age(folder, 30)  # fresh, but of submissions that do not exist
    unpacked(owner)
    assert sum(folder.exists() for folder in stale) == 5
    unpacked(owner)  # within the interval: no sweep
    assert sum(folder.exists() for folder in stale) == 5
    age(root / previews.SWEPT, previews.SWEEP_INTERVAL_SECONDS + 1)
    unpacked(owner)
    assert not any(folder.exists() for folder in stale)


def test_the_command_prints_what_it_removes_and_a_dry_run_removes_nothing(owner, settings):
    """``clean_previews --dry-run`` lists the folder and keeps it; without the flag it is gone."""
    folder = unpacked(owner)
    age(folder, lifetime(settings) + 60)
    out = io.StringIO()
    call_command("clean_previews", "--dry-run", stdout=out)
    assert f"would remove {folder} (expired)" in out.getvalue() and "1 preview folder(s) to remove" in out.getvalue()
    assert folder.is_dir()
    out = io.StringIO()
    call_command("clean_previews", stdout=out)
    assert f"removed {folder} (expired)" in out.getvalue() and not folder.exists()
    out = io.StringIO()
    call_command("clean_previews", stdout=out)
    assert "0 preview folder(s) removed" in out.getvalue()

"""Where Playwright finds an ffmpeg to record replay videos with.

Playwright records video with an ffmpeg build of its own, which nothing here may download:
Debian's ffmpeg stands in for it, linked where Playwright looks (PLAYWRIGHT_BROWSERS_PATH,
``ffmpeg-<revision>/ffmpeg-linux``). scripts/setup.sh makes that folder in a checkout
(.cache/playwright); an evaluator installed with pip makes the same link under the user's cache
the first time it scores, so ``iwr-eval score`` records videos with no set-up step.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
from pathlib import Path

REPO_FOLDER = Path(__file__).resolve().parent.parent / ".cache" / "playwright"


def browsers_path() -> Path | None:
    """The folder to give Playwright: the environment's, the checkout's, or one made in the user's cache."""
    if os.environ.get("PLAYWRIGHT_BROWSERS_PATH"):
        return Path(os.environ["PLAYWRIGHT_BROWSERS_PATH"])
    if REPO_FOLDER.is_dir():
        return REPO_FOLDER
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "iwr-bench" / "playwright"
    with contextlib.suppress(OSError, ValueError, KeyError, StopIteration):
        return link_ffmpeg(cache)
    return None


def link_ffmpeg(folder: Path) -> Path | None:
    """``folder`` with Debian's ffmpeg linked in as Playwright's; None when there is no ffmpeg or Playwright."""
    ffmpeg = shutil.which("ffmpeg")
    spec = importlib.util.find_spec("playwright")  # located, not imported: this runs before every job
    if not ffmpeg or spec is None or spec.origin is None:
        return None
    listing = Path(spec.origin).parent / "driver" / "package" / "browsers.json"
    revision = next(b["revision"] for b in json.loads(listing.read_text())["browsers"] if b["name"] == "ffmpeg")
    target = folder / f"ffmpeg-{revision}"
    link = target / "ffmpeg-linux"
    if not link.exists():
        target.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another job made it meanwhile
            link.symlink_to(ffmpeg)
        for marker in ("INSTALLATION_COMPLETE", "DEPENDENCIES_VALIDATED"):
            (target / marker).touch()
    return folder

"""Checks of one task's files: video, metadata, assets, stitched assets, checkpoints, references.

Every file is looked at through ``lstat`` first: symbolic links could expose files
outside the task to the pages being judged, and FIFOs or devices would hang a reader.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.dataset import files as F
from evaluator.dataset.jsonfiles import read_json_object
from evaluator.dataset.model import Task
from evaluator.dataset.numbering import Checkpoints, fitting, mismatch
from evaluator.dataset.problems import Problems, Where
from evaluator.dataset.records import parse_resolution
from evaluator.dataset.references import asset_references, check_reference

_ACCEPTED = ", ".join(sorted(F.ASSET_EXTENSIONS))


@dataclass
class Tree:
    """Regular files of a task folder (path relative to it, posix) with their sizes."""

    files: dict[str, int] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)


@dataclass
class FileStats:
    videos: int = 0
    video_bytes: int = 0
    assets: int = 0
    asset_bytes: int = 0
    checkpoints: int = 0
    references: int = 0


class TaskChecker:
    """Checks the files of each task of one dataset, reporting into one sink."""

    def __init__(self, data_file: str, data_label: str, sink: Problems, limits: F.Limits):
        self.data_file = data_file  # the jsonl file and the data folder, as problems name them
        self.data_label = data_label
        self.sink = sink
        self.limits = limits
        self.stats = FileStats()

    def check(self, task: Task, checkpoints: Checkpoints, numbering: str, settled: bool = True) -> None:
        """Check one task; its checkpoints are compared with ``numbering`` (see numbering.mismatch)."""
        try:
            self._check(task, checkpoints, numbering, settled)
        except OSError as exc:  # a file vanished or became unreadable while being checked
            self._unreadable(task, exc)

    def _check(self, task: Task, checkpoints: Checkpoints, numbering: str, settled: bool) -> None:
        tree = self._scan(task)
        if tree is None:
            return
        self._check_video(task, tree)
        self._check_metadata(task, tree)
        assets = self._check_assets(task, tree)
        self._check_stitched(task, tree)
        self._check_checkpoints(task, checkpoints, numbering, settled)
        references = self._check_references(task, tree, set(checkpoints.steps))
        self._check_asset_references(task, assets, references)

    def where(self, task: Task, relative: str = "") -> Where:
        label = f"{self.data_label}/{task.key}" + (f"/{relative}" if relative else "")
        return Where(label, None, task.key)

    # -- the folder -------------------------------------------------------------------

    def _scan(self, task: Task) -> Tree | None:
        try:
            info = os.lstat(task.root)
        except OSError:
            self.sink.error(self.where(task), None, "missing task folder", "missing_folder")
            return None
        if not stat.S_ISDIR(info.st_mode):
            why = "is a symbolic link (not allowed: it could expose files outside the task)" if stat.S_ISLNK(
                info.st_mode) else "is not a folder"
            self.sink.error(self.where(task), None, why, "missing_folder")
            return None
        tree = Tree()
        for directory, dirnames, filenames in os.walk(task.root, onerror=lambda exc: self._unreadable(task, exc)):
            for name in dirnames + filenames:
                self._classify(task, Path(directory, name), tree)
        return tree

    def _classify(self, task: Task, path: Path, tree: Tree) -> None:
        relative = path.relative_to(task.root).as_posix()
        try:
            info = os.lstat(path)
        except OSError as exc:
            self._unreadable(task, exc)
            return
        mode = info.st_mode
        if stat.S_ISLNK(mode):
            self.sink.error(self.where(task, relative), None,
                            "is a symbolic link (not allowed: it could expose files outside the task)", "symlink")
        elif stat.S_ISDIR(mode):
            tree.dirs.add(relative)
        elif stat.S_ISREG(mode):
            tree.files[relative] = info.st_size
        else:
            self.sink.error(self.where(task, relative), None, "is not a regular file", "special_file")

    def _unreadable(self, task: Task, exc: OSError) -> None:
        name = Path(exc.filename) if exc.filename else task.root
        relative = name.relative_to(task.root).as_posix() if name.is_relative_to(task.root) else ""
        relative = "" if relative == "." else relative
        self.sink.error(self.where(task, relative), None, f"cannot be read ({exc.strerror})", "unreadable")

    def _too_large(self, task: Task, relative: str, size: int, limit: int) -> bool:
        if size <= limit:
            return False
        self.sink.error(self.where(task, relative), None,
                        f"is {F.human_size(size)}, over the limit of {F.human_size(limit)}", "too_large")
        return True

    # -- video and metadata -----------------------------------------------------------

    def _check_video(self, task: Task, tree: Tree) -> None:
        size = tree.files.get("video.mp4")
        if size is None:
            if not (task.root / "video.mp4").is_symlink():
                self.sink.error(self.where(task, "video.mp4"), None, "missing video", "missing_video")
            return
        self.stats.videos += 1
        self.stats.video_bytes += size
        if self._too_large(task, "video.mp4", size, self.limits.video_bytes):
            return
        head = F.read_head(task.video_path, 64)
        kind = F.sniff(head)
        if kind != "mp4":
            found = F.content_name(kind, head)
            self.sink.error(self.where(task, "video.mp4"), None, f"is not an MP4 video (found {found})", "video_format")

    def _check_metadata(self, task: Task, tree: Tree) -> None:
        # When the record has no resolution, loading already read (and checked) metadata.json.
        if task.resolution_source != "record" or "metadata.json" not in tree.files:
            return
        where = self.where(task, "metadata.json")
        metadata = read_json_object(task.metadata_path, where, self.sink, self.limits.json_bytes)
        details = (metadata or {}).get("recording_details")
        if isinstance(details, dict) and details.get("resolution") is not None:
            parsed = parse_resolution(details["resolution"])
            if isinstance(parsed, str):
                self.sink.error(where, "recording_details.resolution", parsed, "resolution")

    # -- assets -----------------------------------------------------------------------

    def _check_assets(self, task: Task, tree: Tree) -> set[str]:
        names = {path.removeprefix("assets/"): size for path, size in tree.files.items() if path.startswith("assets/")}
        if "assets" not in tree.dirs:
            self.sink.warn(self.where(task, "assets"), None, "no assets folder", "no_assets")
            return set()
        for name, size in sorted(names.items()):
            self._check_asset(task, name, size)
        total = sum(names.values())
        self.stats.assets += len(names)
        self.stats.asset_bytes += total
        if total > self.limits.assets_total_bytes:
            self._too_large(task, "assets", total, self.limits.assets_total_bytes)
        return set(names)

    def _check_asset(self, task: Task, name: str, size: int) -> None:
        relative = f"assets/{name}"
        where = self.where(task, relative)
        if self._too_large(task, relative, size, self.limits.asset_bytes):
            return
        head = F.read_head(task.assets_dir / name)
        kind = F.sniff(head)
        extension = name.rpartition(".")[2].lower() if "." in name else ""
        promised = F.ASSET_EXTENSIONS.get(extension)
        if promised is None:
            shown = f".{extension}" if extension else "a name without extension"
            found = F.content_name(kind, head)
            self.sink.error(where, None, f"{shown} is not an accepted asset type ({found}; accepted: {_ACCEPTED})",
                            "asset_type")
        elif kind is None:
            self.sink.error(where, None, f"is not an image or video: the content is {F.describe(head)}",
                            "asset_content")
        else:
            if kind != promised:
                self.sink.warn(where, None, f"holds {F.kind_label(kind)} data under a .{extension} name",
                               "asset_extension")
            self._check_pixels(task, relative, kind, head)

    def _check_pixels(self, task: Task, relative: str, kind: str, head: bytes) -> tuple[int, int] | None:
        if kind not in F.RASTER_KINDS - {"avif", "ico"}:
            return None
        size = F.image_size(task.root / relative, head)
        where = self.where(task, relative)
        if size is None:
            self.sink.error(where, None, f"is not a readable {F.kind_label(kind)} image", "image_corrupt")
        elif size[0] * size[1] > self.limits.image_pixels:
            self.sink.error(where, None, f"has {size[0] * size[1]:,} pixels, over the limit of "
                            f"{self.limits.image_pixels:,}", "too_large")
        return size

    def _check_stitched(self, task: Task, tree: Tree) -> None:
        if "stitched_assets" not in tree.dirs:
            self.sink.warn(self.where(task, "stitched_assets"), None,
                           "no stitched_assets folder (models see the assets through it)", "no_stitched")
            return
        for path, size in sorted(tree.files.items()):
            if not path.startswith("stitched_assets/") or self._too_large(task, path, size, self.limits.stitched_bytes):
                continue
            head = F.read_head(task.root / path)
            kind = F.sniff(head)
            if kind not in ("png", "jpeg", "webp"):
                found = F.content_name(kind, head)
                self.sink.error(self.where(task, path), None, f"is not a PNG, JPEG or WebP image ({found})",
                                "stitched_content")
            else:
                self._check_pixels(task, path, kind, head)

    # -- checkpoints and references ---------------------------------------------------

    def _check_checkpoints(self, task: Task, checkpoints: Checkpoints, numbering: str, settled: bool) -> None:
        where = self.where(task, "checkpoints")
        if not checkpoints.present:
            self.sink.error(where, None, "missing checkpoints folder", "missing_checkpoints")
            return
        for name in checkpoints.others:
            if name.startswith("step_"):
                self.sink.error(self.where(task, f"checkpoints/{name}"), None,
                                "is not named step_<k>.png with k a plain number", "checkpoint_name")
            else:
                self.sink.warn(self.where(task, f"checkpoints/{name}"), None, "is not a checkpoint (ignored)",
                               "checkpoint_other")
        for step in sorted(checkpoints.steps):
            self._check_checkpoint_file(task, step)
        if numbering not in fitting(task, set(checkpoints.steps)):
            self.sink.error(where, None, mismatch(task, set(checkpoints.steps), numbering, settled),
                            "checkpoints_mismatch")

    def _check_checkpoint_file(self, task: Task, step: int) -> None:
        relative = f"checkpoints/step_{step}.png"
        size = F.regular_file_size(task.root / relative)
        if size is None or self._too_large(task, relative, size, self.limits.checkpoint_bytes):
            return  # a link or special file was reported by the folder scan
        self.stats.checkpoints += 1
        head = F.read_head(task.root / relative, 64)
        where = self.where(task, relative)
        if F.sniff(head) != "png":
            self.sink.error(where, None, f"is not a PNG image (found {F.describe(head)})", "checkpoint_format")
            return
        if not F.png_complete(task.root / relative):
            self.sink.error(where, None, "is a damaged PNG (truncated: no end chunk)", "image_corrupt")
            return
        dimensions = self._check_pixels(task, relative, "png", head)
        if dimensions and dimensions != (task.width, task.height):
            self.sink.warn(where, None, f"is {dimensions[0]}x{dimensions[1]} but the task's resolution is "
                           f"{task.resolution}", "checkpoint_size")

    def _check_references(self, task: Task, tree: Tree, steps: set[int]) -> dict[str, object]:
        """Validated reference files by relative path (their content, for asset references)."""
        found = {}
        for path in sorted(p for p in tree.files if p.startswith("reference/")):
            data = check_reference(task, path, steps, self.where(task, path), self.sink, self.limits)
            if data is not None:
                found[path] = data
                self.stats.references += 1
        return found

    def _check_asset_references(self, task: Task, assets: set[str], references: dict[str, object]) -> None:
        record_where = Where(self.data_file, task.line, task.key)
        sources = [(record_where, task.raw)] + [(self.where(task, path), data) for path, data in references.items()]
        for where, data in sources:
            for field_path, name in asset_references(data):
                if name not in assets:
                    self.sink.error(where, field_path or None,
                                    f"asset {name!r} is referenced but not in assets/", "missing_asset")

"""How many pixels changed between two screenshots, at a reduced scale.

The judge compares the page before and after every action, and the reference's two checkpoints
at every step. Both sides repeat pictures: the after-state of step k is the before-state of step
k + 1, and every submission meets the same reference checkpoints. So each PNG is decoded and
scaled down once (a few recent ones are kept, keyed by a digest of their bytes and the scale),
and the fraction of a reference pair is kept by the digests of both pictures and the parameters:
in memory, and in a small JSON file per pair when a folder is given (the one that keeps the
reference OCR between runs; scoring jobs may only read it, so it is filled by the same trusted
step as the OCR, see ``evaluator.judges.reference.keep_pixel_changes``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.memo import BoundedMemo

# Part of every kept fraction's key: a change to how the fraction is computed leaves old files unread.
FORMULA_VERSION = 1


@dataclass(frozen=True)
class Scaled:
    """A decoded screenshot, RGB at the comparison scale, with its size before scaling."""

    size: tuple[int, int]
    image: Any  # PIL.Image.Image

    @property
    def nbytes(self) -> int:
        return self.image.width * self.image.height * 4  # Pillow keeps RGB in 32-bit pixels


class ScaledMemo:
    """The last few scaled screenshots, bounded in count and in bytes (1920x1080 pictures are common)."""

    def __init__(self, max_entries: int = 6, max_bytes: int = 32 * 2**20):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._entries = BoundedMemo(max_entries, max_bytes, size_of=lambda scaled: scaled.nbytes)

    def get(self, png: bytes, scale: float) -> Scaled:
        key = (digest(png), scale)
        hit = self._entries.get(key)
        if hit is not None:
            return hit
        scaled = _decode(png, scale)  # not under a lock: another thread may decode meanwhile
        self._entries.put(key, scaled)
        return scaled

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._entries.total_size()

    def clear(self) -> None:
        self._entries.clear()


SCALED = ScaledMemo()


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def pixel_change_fraction(png_a: bytes | None, png_b: bytes | None, scale: float = 0.5,
                          tolerance: int = 24) -> float | None:
    """Share of pixels where some channel moved more than ``tolerance``, compared at ``scale``."""
    if png_a is None or png_b is None:
        return None
    a, b = SCALED.get(png_a, scale), SCALED.get(png_b, scale)
    if a.size != b.size:
        return 1.0
    return changed_share(a.image, b.image, tolerance)


def _decode(png: bytes, scale: float) -> Scaled:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    size = image.size
    if scale != 1:
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                             Image.Resampling.BOX)
    return Scaled(size, image)


def changed_share(a, b, tolerance: float) -> float:
    """Share of pixels whose largest channel difference exceeds ``tolerance`` (two RGB images, one size).

    Exactly numpy's ``(abs(a - b).max(axis=2) > tolerance).mean()``, a tenth of its cost: the
    count is an integer and both divide it by the pixel count once.
    """
    from PIL import ImageChops

    counts = _largest_channel(ImageChops.difference(a, b)).histogram()
    first = min(256, max(0, math.floor(tolerance) + 1))  # the smallest difference above tolerance
    return sum(counts[first:]) / (a.width * a.height)


def _largest_channel(difference):
    """Each pixel's largest channel of an RGB ``difference`` (mode L)."""
    from PIL import ImageChops

    red, green, blue = difference.split()
    return ImageChops.lighter(ImageChops.lighter(red, green), blue)


# --------------------------------------------------------------------------- reference pairs


class PairFractions:
    """Fractions of reference checkpoint pairs by key: an in-memory LRU, plus a folder when given."""

    def __init__(self, maxsize: int = 4096):
        self._memory = BoundedMemo(maxsize)
        self._read_only: set[Path] = set()  # folders a scoring job may only read: not tried again

    def get(self, key: str, directory: Path | None) -> float | None:
        value = self._memory.get(key)
        if value is not None:
            return value
        value = _read_kept(directory, key) if directory is not None else None
        if value is not None:
            self._memory.put(key, value)
        return value

    def put(self, key: str, value: float, directory: Path | None) -> None:
        self._memory.put(key, value)
        if directory is None or directory in self._read_only:
            return
        try:
            _write_kept(directory, key, value)
        except OSError:  # a read-only folder costs speed, not the score
            self._read_only.add(directory)

    def clear(self) -> None:
        self._memory.clear()
        self._read_only.clear()


PAIRS = PairFractions()


def pair_fraction(path_a: Path, path_b: Path, scale: float = 0.5, tolerance: int = 24,
                  directory: str | Path | None = None) -> float:
    """:func:`pixel_change_fraction` of two picture files, computed once per pair of contents and
    parameters (kept in ``directory`` between runs). Raises OSError when a file cannot be read."""
    data_a, data_b = Path(path_a).read_bytes(), Path(path_b).read_bytes()
    key = pair_key(digest(data_a), digest(data_b), scale, tolerance)
    folder = Path(directory) if directory else None
    value = PAIRS.get(key, folder)
    if value is None:
        value = pixel_change_fraction(data_a, data_b, scale, tolerance)
        PAIRS.put(key, value, folder)
    return value


def pair_key(digest_a: str, digest_b: str, scale: float, tolerance: float) -> str:
    parts = [FORMULA_VERSION, digest_a, digest_b, float(scale), float(tolerance)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def kept_path(directory: Path, key: str) -> Path:
    return directory / f"pixels-{key}.json"


def _read_kept(directory: Path, key: str) -> float | None:
    try:
        value = json.loads(kept_path(directory, key).read_text("utf-8"))["fraction"]
    except (OSError, ValueError, TypeError, KeyError):
        return None  # absent or damaged: computed again and rewritten
    return value if isinstance(value, float) and 0.0 <= value <= 1.0 else None


def _write_kept(directory: Path, key: str, value: float) -> None:
    from evaluator.dataset.store import atomic_write

    # In one step, so parallel workers never read half a file; scoring jobs may read as another user.
    atomic_write(kept_path(directory, key), json.dumps({"fraction": value}).encode("utf-8"))


def region_change_fraction(path_a: Path | bytes | None, path_b: Path | bytes | None, box: list[float],
                           scale: float = 0.5, tolerance: int = 24, pad: float = 4.0) -> float | None:
    """Share of changed pixels inside ``box`` (x, y, w, h in CSS pixels, padded by ``pad``) of two
    screenshots (files or PNG bytes), compared like :func:`pixel_change_fraction`; None when it
    cannot be told."""
    parts = _box_parts(path_a, path_b, box, scale, pad)
    return None if parts is None else changed_share(*parts, tolerance)


def _box_parts(path_a: Path | bytes | None, path_b: Path | bytes | None, box: list[float], scale: float,
               pad: float) -> tuple[Any, Any] | None:
    """``box`` (padded) cut from both screenshots at ``scale``; None when a picture is missing or unreadable,
    the sizes differ or nothing of the box is inside."""
    if path_a is None or path_b is None:
        return None
    try:
        a, b = SCALED.get(_png_bytes(path_a), scale), SCALED.get(_png_bytes(path_b), scale)
    except OSError:
        return None
    if a.size != b.size:
        return None
    crop = _box_crop(a, box, pad)
    return None if crop is None else (a.image.crop(crop), b.image.crop(crop))


def region_content_change_fraction(path_a: Path | bytes | None, path_b: Path | bytes | None, box: list[float],
                                   scale: float = 0.5, tolerance: int = 24, pad: float = 4.0) -> float | None:
    """Share of changed pixels inside ``box`` among the pixels that show something there: that differ from
    their screenshot's commonest colour in the box, in either screenshot, or that changed. A wide box that is
    mostly the same blank background in both does not make what stands in it the same. None when it cannot be
    told, or when the box is one plain colour in both screenshots (nothing there to compare)."""
    parts = _box_parts(path_a, path_b, box, scale, pad)
    if parts is None:
        return None
    from PIL import ImageChops

    part_a, part_b = parts
    changed = _over(ImageChops.difference(part_a, part_b), tolerance)
    shown = ImageChops.lighter(_over(_off_background(part_a), tolerance), _over(_off_background(part_b), tolerance))
    counted = ImageChops.lighter(shown, changed).histogram()[255]
    return changed.histogram()[255] / counted if counted else None


def _off_background(part):
    """Each pixel's difference from ``part``'s commonest colour."""
    from PIL import Image, ImageChops

    colours = part.getcolors(part.width * part.height)
    _count, background = max(colours, key=lambda item: item[0])
    return ImageChops.difference(part, Image.new("RGB", part.size, background))


def _over(difference, tolerance: float):
    """A mask (mode L, 0 or 255) of the pixels whose largest channel of ``difference`` exceeds ``tolerance``."""
    first = min(256, max(0, math.floor(tolerance) + 1))
    return _largest_channel(difference).point([0] * first + [255] * (256 - first))


def _box_crop(scaled: Scaled, box: list[float], pad: float) -> tuple[int, int, int, int] | None:
    """``box`` (x, y, w, h in CSS pixels) padded by ``pad``, in the scaled image's pixels and inside it; None
    when nothing of it is inside."""
    x, y, w, h = box
    fx, fy = scaled.image.width / scaled.size[0], scaled.image.height / scaled.size[1]
    left, top = max(0, math.floor((x - pad) * fx)), max(0, math.floor((y - pad) * fy))
    right = min(scaled.image.width, math.ceil((x + w + pad) * fx))
    bottom = min(scaled.image.height, math.ceil((y + h + pad) * fy))
    return None if right <= left or bottom <= top else (left, top, right, bottom)


def outside_change_fraction(png_a: bytes | None, png_b: bytes | None, box: list[float], scale: float = 0.5,
                            tolerance: int = 24, pad: float = 4.0) -> float | None:
    """Share of changed pixels outside ``box`` (padded like :func:`region_change_fraction`) of two
    screenshots, compared like :func:`pixel_change_fraction`; None when it cannot be told."""
    if png_a is None or png_b is None:
        return None
    a, b = SCALED.get(png_a, scale), SCALED.get(png_b, scale)
    if a.size != b.size:
        return None
    total = a.image.width * a.image.height
    changed = changed_share(a.image, b.image, tolerance) * total
    crop = _box_crop(a, box, pad)
    inside = 0
    if crop is not None:
        inside = (crop[2] - crop[0]) * (crop[3] - crop[1])
        changed -= changed_share(a.image.crop(crop), b.image.crop(crop), tolerance) * inside
    rest = total - inside
    return max(0.0, changed) / rest if rest > 0 else 0.0


def _png_bytes(source: Path | bytes) -> bytes:
    return source if isinstance(source, bytes | bytearray) else Path(source).read_bytes()

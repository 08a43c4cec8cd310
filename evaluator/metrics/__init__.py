"""Visual metrics of the deterministic protocol: OCR text, global image similarity, text blocks.

Every metric takes images as ``PIL.Image``, a path, or PNG bytes and returns scores in [0, 1].
Submodules: :mod:`.ocr`, :mod:`.visual`, :mod:`.blocks`, :mod:`.checkpoint` (all of them for
one reference/generated screenshot pair).
"""

from __future__ import annotations

import hashlib
import io
import weakref
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from evaluator.protocols import VISUAL_LATER_OFF, get_protocol

ImageLike = Image.Image | str | Path | bytes


class MetricError(ValueError):
    """A metric's input cannot be used (unreadable image, malformed blocks, OCR engine missing)."""


def load_image(img: ImageLike) -> Image.Image:
    """The image as RGB; a transparent image is composited on white (what a browser shows)."""
    if isinstance(img, Image.Image):
        return _to_rgb(img)
    source = io.BytesIO(img) if isinstance(img, bytes) else img
    label = "image bytes" if isinstance(img, bytes) else f"image {str(img)!r}"
    if not isinstance(source, str | Path | io.BytesIO):
        raise MetricError(f"expected a PIL image, a path or PNG bytes, got {type(img).__name__}")
    try:
        with Image.open(source) as opened:
            opened.load()
            return _to_rgb(opened)
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise MetricError(f"cannot read {label}: {reason}") from None


def _to_rgb(img: Image.Image) -> Image.Image:
    if img.width == 0 or img.height == 0:
        raise MetricError("image has no pixels")
    if img.mode == "RGB":
        return img
    if "A" in img.getbands() or (img.mode == "P" and "transparency" in img.info):
        background = Image.new("RGB", img.size, (255, 255, 255))
        background.paste(img.convert("RGBA"), mask=img.convert("RGBA").getchannel("A"))
        return background
    return img.convert("RGB")


def image_key(img: Image.Image) -> str:
    """Content hash of the pixels: the same picture gets the same key whatever file it came from.

    Remembered per picture object while it lives: one checkpoint's metrics ask for the key of the
    same two pictures several times (OCR text, text blocks), and hashing a 1920x1080 picture takes
    several milliseconds. The metrics never change a picture in place once it is loaded.
    """
    def compute() -> str:
        digest = hashlib.sha256(f"{img.mode}:{img.width}x{img.height}:".encode())
        digest.update(np.ascontiguousarray(pixel_array(img)).data)
        return digest.hexdigest()[:32]

    return _remembered(img, "key", compute)


def pixel_array(img: Image.Image) -> np.ndarray:
    """The picture's pixels as a read-only array (H, W, bands), made once per picture object while it lives:
    its key and its text blocks both read them, and each copy of a 1920x1080 picture takes a millisecond."""
    return _remembered(img, "pixels", lambda: np.asarray(img))  # a third faster than img.tobytes()


def _remembered(img: Image.Image, name: str, compute):
    known = _REMEMBERED.get(id(img))
    if known is None or known[0]() is not img:
        ident = id(img)
        known = _REMEMBERED[ident] = (weakref.ref(img, lambda _gone: _REMEMBERED.pop(ident, None)), {})
    if name not in known[1]:
        known[1][name] = compute()
    return known[1][name]


_REMEMBERED: dict[int, tuple[weakref.ref, dict[str, Any]]] = {}  # id of a live picture -> (weak reference, values)


def visual_params(params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The visual parameters to use: the default protocol's, or ``params`` read over them.

    ``params`` may be a protocol's whole ``params`` (its ``visual`` section is used) or the
    visual section itself, possibly partial. A setting added after iwr-det-4 (``VISUAL_LATER_OFF``)
    is off unless ``params`` names it, so an earlier version's section scores as that version did
    whichever version is the default.
    """
    merged = get_protocol().section("visual")
    if params:
        merged.update(VISUAL_LATER_OFF)
        merged.update(params.get("visual", params))
    return merged

"""Global image similarity without model weights (stands in for the official DINOv2 score).

The distance of two pictures is the mean of their pixel distance (mean absolute error / 255) and
colour-histogram distance (total-variation distance of joint RGB histograms), on both pictures
padded to a common size and scaled down. In a human study of webpage-screenshot similarity these
two tracked people's ratings better than SSIM, CLIP or LPIPS.

Raw, those distances are dominated by background: two mostly white pages agree on most pixels and
most of the histogram whatever they show, so a blank page scored 0.7-0.93 against real ones. The
similarity is therefore measured against blank pages: each picture's *content* is its distance
from a blank page of its own size and background colour, and

    similarity = 1 - distance(a, b) / (content(a) + content(b))

clipped to [0, 1]. On black-on-white pictures its pixel part is the Dice coefficient of the black
pixels, 2 |A and B| / (|A| + |B|), and its histogram part the same for the black share wherever it
lies. Identical pictures score 1; a blank page scores 0 against any page of its background colour;
a page earns similarity only for the content it shares with the other one, and extra content costs
like missing content. Like the distances it is built on, the score is symmetric.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np
from PIL import Image

from evaluator.metrics import ImageLike, load_image, visual_params

T = TypeVar("T")


@dataclass(frozen=True)
class Canvas:
    """Two pictures on a common canvas: padded (right, bottom) to ``width`` x ``height``, then scaled.

    ``a`` and ``b`` are uint8 arrays of the same shape (H, W, 3); the block metrics reuse them.
    ``sizes`` are the two pictures' own sizes before padding, so each one's blank page can be drawn.
    ``memos`` hold what the metrics derive from each picture alone on this canvas (:meth:`derived`);
    a kept reference brings its memo along (:mod:`evaluator.metrics.reference`).
    """

    a: np.ndarray
    b: np.ndarray
    width: int
    height: int
    sizes: tuple[tuple[int, int], tuple[int, int]] | None = None  # None: neither picture was padded
    pad_rgb: tuple[int, int, int] = (255, 255, 255)
    memos: tuple[dict[str, Any], dict[str, Any]] = field(default_factory=lambda: ({}, {}), compare=False, repr=False)
    tag: str = ""  # prefix of this canvas's names in the memos: a resized copy shares its original's memos

    def derived(self, side: int, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, a value of picture ``side`` (0: ``a``, 1: ``b``) alone, computed once per picture."""
        memo, key = self.memos[side], self.tag + name
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def each(self, name: str, compute: Callable[[np.ndarray], T]) -> tuple[T, T]:
        """``compute(pixels)`` of each picture, computed once per picture (see :meth:`derived`)."""
        return (self.derived(0, name, partial(compute, self.a)), self.derived(1, name, partial(compute, self.b)))

    def resized(self, size: tuple[int, int]) -> Canvas:
        """The same pair at another pixel size (width, height); ``width``/``height`` stay the original's."""
        name = f"resized{size[0]}x{size[1]}"
        a, b = self.each(name, lambda arr: np.asarray(resize(Image.fromarray(arr), size)))
        return Canvas(a, b, self.width, self.height, self.sizes, self.pad_rgb, self.memos, f"{self.tag}{name}/")

    def blanks(self) -> tuple[np.ndarray, np.ndarray]:
        """Each picture's blank page: its own size filled with its background colour, padded and
        scaled like the picture itself (so a picture that is blank equals its blank exactly)."""
        return self.blank(0), self.blank(1)

    def blank(self, side: int) -> np.ndarray:
        """Picture ``side``'s blank page (see :meth:`blanks`)."""
        arr = (self.a, self.b)[side]
        own = (self.sizes or ((self.width, self.height),) * 2)[side]
        colour = background_colour(arr, own, (self.width, self.height))
        if own == (self.width, self.height):  # nothing padded: scaling a plain colour keeps it
            return np.full_like(arr, colour)
        scaled = (arr.shape[1], arr.shape[0])
        return _pad_and_scale(Image.new("RGB", own, colour), self.width, self.height, scaled, self.pad_rgb)


def common_canvas(img_a: Image.Image, img_b: Image.Image, long_side: int,
                  pad_rgb: tuple[int, int, int] | list[int]) -> Canvas:
    """Pad both RGB pictures to their common size and scale it so its long side is ``long_side``."""
    return canvas_of((img_a.size, img_b.size), ({}, {}), (lambda: img_a, lambda: img_b), long_side, pad_rgb)


def canvas_of(sizes: tuple[tuple[int, int], tuple[int, int]], memos: tuple[dict, dict],
              pictures: tuple[Callable[[], Image.Image], Callable[[], Image.Image]], long_side: int,
              pad_rgb: tuple[int, int, int] | list[int]) -> Canvas:
    """:func:`common_canvas` of two pictures of ``sizes`` whose ``memos`` may hold their scaled pixels
    already (a kept reference's, under "pixels"): ``pictures`` give the RGB pictures when they do not."""
    width, height = max(sizes[0][0], sizes[1][0]), max(sizes[0][1], sizes[1][1])
    size = scaled_size(width, height, long_side)
    for memo, picture in zip(memos, pictures, strict=True):
        if "pixels" not in memo:
            memo["pixels"] = _pad_and_scale(picture(), width, height, size, pad_rgb)
    return Canvas(memos[0]["pixels"], memos[1]["pixels"], width, height, sizes, tuple(int(v) for v in pad_rgb), memos)


def background_colour(arr: np.ndarray, own_size: tuple[int, int], canvas_size: tuple[int, int]) -> tuple[int, int, int]:
    """The commonest exact colour of a picture on a scaled canvas of ``canvas_size`` (before scaling),
    padding left out: only the region the picture itself covers, minus the edge row and column that
    scaling blends with the padding."""
    rows = max(1, own_size[1] * arr.shape[0] // canvas_size[1])
    cols = max(1, own_size[0] * arr.shape[1] // canvas_size[0])
    own = arr[:rows, :cols].reshape(-1, 3).astype(np.int32)
    codes = (own[:, 0] << 16) | (own[:, 1] << 8) | own[:, 2]
    values, counts = np.unique(codes, return_counts=True)
    code = int(values[counts.argmax()])
    return code >> 16, (code >> 8) & 255, code & 255


def scaled_size(width: int, height: int, long_side: int) -> tuple[int, int]:
    scale = long_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _pad_and_scale(img: Image.Image, width: int, height: int, size: tuple[int, int], pad_rgb) -> np.ndarray:
    if img.size != (width, height):
        canvas = Image.new("RGB", (width, height), tuple(pad_rgb))
        canvas.paste(img, (0, 0))
        img = canvas
    return np.asarray(resize(img, size))


def resize(img: Image.Image, size: tuple[int, int]) -> Image.Image:
    # BOX averages every source pixel: the same content always scales to the same values.
    return img if img.size == size else img.resize(size, Image.Resampling.BOX)


def pixel_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """1 - mean absolute difference / 255 over all pixels and channels."""
    diff = np.abs(a.astype(np.int16) - b.astype(np.int16))
    return float(1.0 - diff.mean() / 255.0)


def colour_histogram(arr: np.ndarray, bins: int) -> np.ndarray:
    """Normalised joint RGB histogram with ``bins`` bins per channel."""
    q = (arr.reshape(-1, 3).astype(np.int32) * bins) // 256
    codes = (q[:, 0] * bins + q[:, 1]) * bins + q[:, 2]
    counts = np.bincount(codes, minlength=bins ** 3)
    return counts / counts.sum()


def histogram_similarity(a: np.ndarray, b: np.ndarray, bins: int) -> float:
    """1 - total-variation distance (half the L1 distance) of the two colour histograms."""
    return float(1.0 - _total_variation(colour_histogram(a, bins), colour_histogram(b, bins)))


def _total_variation(hist_a: np.ndarray, hist_b: np.ndarray) -> float:
    return float(0.5 * np.abs(hist_a - hist_b).sum())


def _distance(a: np.ndarray, b: np.ndarray, hist_a: np.ndarray, hist_b: np.ndarray) -> float:
    """Mean of pixel distance and colour-histogram distance (histograms given), in [0, 1]."""
    return 0.5 * (1.0 - pixel_similarity(a, b)) + 0.5 * _total_variation(hist_a, hist_b)


def canvas_similarity(canvas: Canvas, bins: int, min_content: float) -> float:
    """Global similarity of a prepared pair, relative to blank pages (see the module docstring).

    ``min_content`` is the least content the two pictures count as having together: between (nearly)
    blank pictures, rendering noise is measured against it instead of against almost nothing.
    """
    hists = canvas.each(f"histogram{bins}", partial(colour_histogram, bins=bins))
    distance = _distance(canvas.a, canvas.b, *hists)
    if distance <= 0.0:
        return 1.0
    content = sum(content_distance(canvas, side, bins) for side in (0, 1))
    return min(1.0, max(0.0, 1.0 - distance / max(content, min_content)))


def content_distance(canvas: Canvas, side: int, bins: int) -> float:
    """How far picture ``side`` lies from its own blank page: its content (see the module docstring)."""
    def compute() -> float:
        arr, blank = (canvas.a, canvas.b)[side], canvas.blank(side)
        hist = canvas.derived(side, f"histogram{bins}", partial(colour_histogram, arr, bins))
        return _distance(arr, blank, hist, colour_histogram(blank, bins))

    return canvas.derived(side, f"content{bins}", compute)


def global_similarity(img_a: ImageLike, img_b: ImageLike, params: dict | None = None) -> float:
    """Weight-free whole-picture similarity in [0, 1]: identical pictures score 1, a blank page 0."""
    settings = visual_params(params)
    canvas = common_canvas(load_image(img_a), load_image(img_b), int(settings["global_long_side"]),
                           settings["pad_rgb"])
    return canvas_similarity(canvas, int(settings["histogram_bins"]), float(settings["global_min_content"]))

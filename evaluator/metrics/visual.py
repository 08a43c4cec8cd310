"""Global image similarity without model weights (stands in for the official DINOv2 score).

Mean of pixel similarity (1 - mean absolute error / 255) and colour-histogram similarity
(1 - total-variation distance of joint RGB histograms), on both pictures padded to a common
size and scaled down. In a human study of webpage-screenshot similarity these two tracked
people's ratings better than SSIM, CLIP or LPIPS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from evaluator.metrics import ImageLike, load_image, visual_params


@dataclass(frozen=True)
class Canvas:
    """Two pictures on a common canvas: padded (right, bottom) to ``width`` x ``height``, then scaled.

    ``a`` and ``b`` are uint8 arrays of the same shape (H, W, 3); the block metrics reuse them.
    """

    a: np.ndarray
    b: np.ndarray
    width: int
    height: int

    def resized(self, size: tuple[int, int]) -> Canvas:
        """The same pair at another pixel size (width, height); ``width``/``height`` stay the original's."""
        a, b = (np.asarray(resize(Image.fromarray(arr), size)) for arr in (self.a, self.b))
        return Canvas(a, b, self.width, self.height)


def common_canvas(img_a: Image.Image, img_b: Image.Image, long_side: int,
                  pad_rgb: tuple[int, int, int] | list[int]) -> Canvas:
    """Pad both RGB pictures to their common size and scale it so its long side is ``long_side``."""
    width, height = max(img_a.width, img_b.width), max(img_a.height, img_b.height)
    size = scaled_size(width, height, long_side)
    return Canvas(_pad_and_scale(img_a, width, height, size, pad_rgb),
                  _pad_and_scale(img_b, width, height, size, pad_rgb), width, height)


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
    distance = 0.5 * np.abs(colour_histogram(a, bins) - colour_histogram(b, bins)).sum()
    return float(1.0 - distance)


def canvas_similarity(canvas: Canvas, bins: int) -> float:
    """Global similarity of a prepared pair: mean of pixel and colour-histogram similarity."""
    score = 0.5 * pixel_similarity(canvas.a, canvas.b) + 0.5 * histogram_similarity(canvas.a, canvas.b, bins)
    return min(1.0, max(0.0, score))


def global_similarity(img_a: ImageLike, img_b: ImageLike, params: dict | None = None) -> float:
    """Weight-free whole-picture similarity in [0, 1]; identical pictures score 1."""
    settings = visual_params(params)
    canvas = common_canvas(load_image(img_a), load_image(img_b), int(settings["global_long_side"]),
                           settings["pad_rgb"])
    return canvas_similarity(canvas, int(settings["histogram_bins"]))

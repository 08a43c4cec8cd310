"""Design2Code-style text-block comparison, weighted like the official MLLM visual rubric.

Sub-scores (all in [0, 1]) and their rubric points:
- layout 10: how near the places where text blocks are, and where any non-background component
  is, lie to the other picture's (a small move costs a little, a region left empty costs all);
- elements 15: share of block area that found a partner (blocks paired by text similarity with
  the Hungarian algorithm, pairs under the match threshold dropped);
- content 40: token F1 of all block text;
- style 15: colour difference of paired blocks (text and background) and of the page palettes;
- overall 20: structural similarity (SSIM) of the grey pictures at a small fixed size, windows
  weighted by how much they hold.

Colours and structure say how the shared content looks, so the sub-scores named by the protocol
setting ``content_gated`` (style and overall) are multiplied by the share of the reference's
content the page reproduces (:func:`shared_content`): without it a blank page kept the palette of
a white page and the SSIM of white background, though it matched no block at all.

Blocks are OCR lines of each picture with colours sampled from the pixels (protocol setting
``block_source`` "ocr"): the score then depends on the two screenshots only, and the same
screenshot always yields the same blocks. With ``block_source`` "dom", blocks given by the caller
for both sides (DOM text blocks: ``{"text", "box": [x, y, w, h], "color": [r, g, b], "bg": [r, g, b]}``)
are used instead; both sides must then come from the same extractor, or identical pages score
below 1. Identical inputs score exactly 1 on every sub-score.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from PIL import Image
from rapidfuzz import fuzz
from rapidfuzz.process import cdist
from scipy.ndimage import distance_transform_edt, uniform_filter
from skimage.color import deltaE_ciede2000, rgb2lab
from skimage.metrics import structural_similarity

from evaluator.metrics import ImageLike, MetricError, load_image, pixel_array, visual_params
from evaluator.metrics.assignment import linear_sum_assignment
from evaluator.metrics.ocr import Line, OcrCache, ocr_lines
from evaluator.metrics.visual import Canvas, common_canvas, resize, scaled_size

RGB = tuple[int, int, int]
BoxF = tuple[float, float, float, float]  # x, y, width, height in pixels
SUB_SCORES = ("layout", "elements", "content", "style", "overall")
TEXT_SUB_SCORES = ("elements", "content")  # compare text blocks only: nothing to compare without text
_FINE = 4  # pixels per layout cell side when finding components: thin strokes still show
_BOXES_AT_ONCE = 256  # boxes whose layout cells are compared in one array (256 x 64 x 36 floats: 4.7 MB)
_DISTINCT_LEVELS = 6  # text differs from its background by more than 6 of 32 levels (48 of 256) in a channel


@dataclass(frozen=True)
class Block:
    """A run of text on the picture: its box in pixels, text colour and background colour.

    ``parts`` are the boxes the text really covers (an OCR line's word boxes; empty means the whole
    box): a line Tesseract strings across two columns covers its words, not the gap between them.
    """

    text: str
    box: BoxF
    color: RGB
    bg: RGB
    parts: tuple[BoxF, ...] = ()

    @property
    def boxes(self) -> tuple[BoxF, ...]:
        return self.parts or (self.box,)

    @property
    def area(self) -> float:
        return sum(w * h for _, _, w, h in self.boxes)


# --- obtaining blocks -------------------------------------------------------------------------

def parse_blocks(items: list[dict[str, Any]], size: tuple[int, int], side: str = "blocks") -> list[Block]:
    """Caller-given blocks, clipped to the picture; blank or fully off-picture ones are dropped."""
    if not isinstance(items, list):
        raise MetricError(f"{side}: expected a list of blocks, got {type(items).__name__}")
    blocks = []
    for i, item in enumerate(items):
        block = _parse_block(item, f"{side}[{i}]")
        clipped = _clip(block.box, size)
        if block.text.strip() and clipped[2] > 0 and clipped[3] > 0:
            blocks.append(Block(block.text, clipped, block.color, block.bg))
    return blocks


def _parse_block(item: Any, where: str) -> Block:
    if not isinstance(item, dict):
        raise MetricError(f"{where}: expected an object with text, box, color, bg")
    text = item.get("text")
    if not isinstance(text, str):
        raise MetricError(f"{where}: 'text' must be a string")
    box = _numbers(item.get("box"), 4, f"{where}: 'box' must be [x, y, w, h]")
    color = _numbers(item.get("color", [0, 0, 0]), 3, f"{where}: 'color' must be [r, g, b]")
    bg = _numbers(item.get("bg", [255, 255, 255]), 3, f"{where}: 'bg' must be [r, g, b]")
    return Block(text, tuple(box), _rgb(color), _rgb(bg))


def _numbers(value: Any, count: int, message: str) -> list[float]:
    ok = isinstance(value, list | tuple) and len(value) == count
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    if not ok:
        raise MetricError(message)
    return [float(v) for v in value]


def _rgb(values: list[float]) -> RGB:
    return tuple(int(min(255, max(0, round(v)))) for v in values)


def _clip(box: tuple[float, ...], size: tuple[int, int]) -> tuple[float, float, float, float]:
    x0, y0 = max(0.0, box[0]), max(0.0, box[1])
    x1, y1 = min(float(size[0]), box[0] + box[2]), min(float(size[1]), box[1] + box[3])
    return (x0, y0, max(0.0, x1 - x0), max(0.0, y1 - y0))


def blocks_from_image(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> list[Block]:
    """One block per OCR line of the picture, with colours sampled inside its box."""
    image = load_image(img)
    return blocks_from_lines(pixel_array(image), ocr_lines(image, params, cache))


def blocks_from_lines(pixels: np.ndarray, lines: list[Line]) -> list[Block]:
    """Blocks for OCR lines; ``pixels`` is the picture as an (H, W, 3) array."""
    blocks = []
    for line in lines:
        x, y, w, h = line.box
        # Each box quantized on its own: the same values as the whole picture's, for the small
        # share of it that text covers.
        color, bg = sample_colours(*_quantize(pixels[y:y + h, x:x + w]))
        parts = tuple(tuple(float(v) for v in word.box) for word in line.words)
        blocks.append(Block(line.text, (float(x), float(y), float(w), float(h)), color, bg, parts))
    return blocks


def sample_colours(levels: np.ndarray, codes: np.ndarray) -> tuple[RGB, RGB]:
    """(text colour, background colour) of a quantized text box (see :func:`_quantize`): the commonest
    colour is the background, the commonest colour clearly different from it is the text."""
    if codes.size == 0:
        return (0, 0, 0), (255, 255, 255)
    bg_code = _mode_code(codes)
    bg_levels = np.array(_code_levels(bg_code), dtype=np.int16)
    distinct = np.abs(levels - bg_levels).max(axis=-1) > _DISTINCT_LEVELS
    text_code = _mode_code(codes[distinct]) if distinct.any() else bg_code
    return _code_rgb(text_code), _code_rgb(bg_code)


def _quantize(pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel levels (5 bits) and one colour code per pixel; fine enough for style, coarse
    enough that anti-aliasing shades of one colour share a code."""
    levels = (pixels >> 3).astype(np.int16)
    codes = (levels[..., 0] << 10) | (levels[..., 1] << 5) | levels[..., 2]
    return levels, codes


def _mode_code(codes: np.ndarray) -> int:
    return int(np.bincount(codes.ravel()).argmax())


def _code_levels(code: int) -> tuple[int, int, int]:
    return code >> 10, (code >> 5) & 31, code & 31


def _code_rgb(code: int) -> RGB:
    return tuple(level * 8 + 4 for level in _code_levels(code))  # the centre of the colour bin


# --- sub-scores -------------------------------------------------------------------------------

def match_blocks(ref: list[Block], gen: list[Block], threshold: float) -> list[tuple[int, int, float]]:
    """Pairs (ref index, gen index, text similarity) maximising total similarity; weak pairs dropped."""
    if not ref or not gen:
        return []
    sim = cdist([b.text.lower() for b in ref], [b.text.lower() for b in gen], scorer=fuzz.ratio) / 100.0
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return [(int(r), int(c), float(sim[r, c])) for r, c in zip(rows, cols, strict=True) if sim[r, c] >= threshold]


def elements_score(ref: list[Block], gen: list[Block], matches: list[tuple[int, int, float]],
                   ref_size: tuple[int, int], gen_size: tuple[int, int]) -> float:
    """Share of all block area (each side relative to its picture) belonging to matched blocks."""
    if not ref and not gen:
        return 1.0
    ref_area = np.array([b.area for b in ref], dtype=float) / (ref_size[0] * ref_size[1])
    gen_area = np.array([b.area for b in gen], dtype=float) / (gen_size[0] * gen_size[1])
    ref_left = np.ones(len(ref), dtype=bool)
    gen_left = np.ones(len(gen), dtype=bool)
    ref_left[[r for r, _, _ in matches]] = False
    gen_left[[g for _, g, _ in matches]] = False
    total = ref_area.sum() + gen_area.sum()
    if total <= 0:
        return 0.0 if ref_left.any() or gen_left.any() else 1.0
    # 1 - unmatched share (not matched / total): every block matched gives exactly 1, whatever the
    # rounding of the sums.
    return float(1.0 - (ref_area[ref_left].sum() + gen_area[gen_left].sum()) / total)


def content_score(ref: list[Block], gen: list[Block]) -> float:
    """Token F1 of all text (multiset of lower-cased words)."""
    ref_tokens = Counter(_tokens(" ".join(b.text for b in ref)))
    gen_tokens = Counter(_tokens(" ".join(b.text for b in gen)))
    if not ref_tokens and not gen_tokens:
        return 1.0
    common = sum((ref_tokens & gen_tokens).values())
    if common == 0:
        return 0.0
    precision = common / sum(gen_tokens.values())
    recall = common / sum(ref_tokens.values())
    return 2 * precision * recall / (precision + recall)


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def layout_grid(canvas: Canvas, settings: dict) -> tuple[int, int]:
    """Layout cells across and down: ``layout_grid`` along the long side, square-ish cells."""
    return scaled_size(canvas.width, canvas.height, int(settings["layout_grid"]))


def layout_score(canvas: Canvas, small: Canvas, ref: list[Block], gen: list[Block], settings: dict) -> float:
    """Mean of two tolerant overlaps on a coarse grid (:func:`near_overlap`): where text-block boxes
    are, and where non-background components are.

    ``small`` is the canvas resized to ``_FINE`` pixels per layout cell.
    """
    text, components = layout_overlaps(canvas, small, ref, gen, settings)
    return 0.5 * text + 0.5 * components


def layout_overlaps(canvas: Canvas, small: Canvas, ref: list[Block], gen: list[Block],
                    settings: dict) -> tuple[float, float]:
    """(text-block overlap, component overlap) of :func:`layout_score`."""
    grid_w, grid_h = layout_grid(canvas, settings)
    cell = (canvas.width / grid_w, canvas.height / grid_h)
    reach = float(settings["layout_reach"]) * max(grid_w, grid_h)
    text = near_overlap(_box_coverage(ref, cell, (grid_h, grid_w)), _box_coverage(gen, cell, (grid_h, grid_w)),
                        reach)
    delta = int(settings["component_delta"])
    coverage = small.each(f"components{grid_w}x{grid_h}>{delta}",
                          lambda pixels: _component_coverage(pixels, grid_w, grid_h, delta))
    return text, near_overlap(*coverage, reach)


def near_overlap(a: np.ndarray, b: np.ndarray, reach: float) -> float:
    """How well two coverage grids (each cell's covered share, 0-1) cover the same places,
    forgiving small moves.

    Each covered cell of either grid scores 1 - (distance in cells to the nearest covered cell of
    the other grid) / ``reach``, at least 0; the coverage-weighted mean of those is scaled by the
    ratio of the smaller covered area to the larger, so a page that merely covers everything does
    not pass for one that covers the right places. Identical grids score exactly 1.
    """
    covered_a, covered_b = a > 0, b > 0
    if not covered_a.any() or not covered_b.any():
        return 1.0 if covered_a.any() == covered_b.any() else 0.0
    share_a, share_b = a[covered_a], b[covered_b]
    near_a = np.clip(1.0 - distance_transform_edt(~covered_b)[covered_a] / reach, 0.0, 1.0)
    near_b = np.clip(1.0 - distance_transform_edt(~covered_a)[covered_b] / reach, 0.0, 1.0)
    # Sums of the same shape taken the same way: all-near grids give exactly 1, not 1 - 1e-16.
    area_a, area_b = float(share_a.sum()), float(share_b.sum())
    nearness = (float((share_a * near_a).sum()) + float((share_b * near_b).sum())) / (area_a + area_b)
    return min(1.0, nearness) * min(area_a, area_b) / max(area_a, area_b)


def _box_coverage(blocks: list[Block], cell: tuple[float, float], grid: tuple[int, int]) -> np.ndarray:
    """Share of each layout cell covered by block boxes (overlapping boxes count once per cell).

    Fractional, so a box moved by a few pixels changes its cells a little instead of gaining a
    whole row of cells. A cell's value is the largest of row share x column share over the boxes."""
    boxes = np.array([box for b in blocks for box in b.boxes], dtype=float).reshape(-1, 4)
    x0, y0 = boxes[:, 0] / cell[0], boxes[:, 1] / cell[1]
    x1, y1 = x0 + boxes[:, 2] / cell[0], y0 + boxes[:, 3] / cell[1]
    rows, cols = _shares(y0, y1, grid[0]), _shares(x0, x1, grid[1])
    coverage = np.zeros(grid)
    for first in range(0, len(boxes), _BOXES_AT_ONCE):
        part = slice(first, first + _BOXES_AT_ONCE)
        np.maximum(coverage, (rows[part, :, None] * cols[part, None, :]).max(axis=0), out=coverage)
    return coverage


def _shares(start: np.ndarray, end: np.ndarray, cells: int) -> np.ndarray:
    """Covered share of each cell (columns) by each interval [start, end) in cell units (rows); 0 outside it."""
    edges = np.arange(cells, dtype=float)
    return np.clip(np.minimum(edges + 1.0, end[:, None]) - np.maximum(edges, start[:, None]), 0.0, 1.0)


def _component_coverage(pixels: np.ndarray, grid_w: int, grid_h: int, delta: int) -> np.ndarray:
    """Share of each cell's pixels that differ clearly from the picture's dominant (background) colour."""
    fine = pixels.astype(np.int16)
    background = np.array(_code_rgb(_mode_code(_quantize(pixels)[1])), dtype=np.int16)
    differs = np.abs(fine - background).max(axis=2) > delta
    return differs.reshape(grid_h, _FINE, grid_w, _FINE).mean(axis=(1, 3))


def shared_content(ref: list[Block], matches: list[tuple[int, int, float]], components: float) -> float:
    """Share of the reference's content the generated page reproduces, in [0, 1].

    The share of the reference's text-block area whose block found a partner (exactly 1 when all
    did); a reference without text is judged by ``components``, the overlap of where the two
    pictures draw anything (:func:`layout_overlaps`).
    """
    area = np.array([b.area for b in ref], dtype=float)
    total = float(area.sum())
    if total <= 0:
        return components
    unmatched = np.ones(len(ref), dtype=bool)
    unmatched[[r for r, _, _ in matches]] = False
    return float(1.0 - area[unmatched].sum() / total)


def style_score(small: Canvas, ref: list[Block], gen: list[Block], matches: list[tuple[int, int, float]],
                settings: dict, textless: bool = False) -> float:
    """Mean of paired-block colour similarity (text and background) and palette similarity
    (palettes taken from ``small``, the canvas at layout resolution); the palette similarity alone
    where ``textless`` (no block on either side to pair)."""
    scale = float(settings["colour_scale"])
    size = int(settings["palette_size"])
    palette_part = palette_similarity(*small.each(f"palette{size}", lambda pixels: palette(pixels, size)), scale)
    if textless:
        return palette_part
    if matches:
        ref_cols = [c for r, _, _ in matches for c in (ref[r].color, ref[r].bg)]
        gen_cols = [c for _, g, _ in matches for c in (gen[g].color, gen[g].bg)]
        block_part = float(np.mean(colour_similarity(ref_cols, gen_cols, scale)))
    else:
        block_part = 1.0 if not ref and not gen else 0.0
    return 0.5 * block_part + 0.5 * palette_part


def _lab(colours: list[RGB] | np.ndarray) -> np.ndarray:
    rgb = np.asarray(colours, dtype=float).reshape(-1, 1, 3) / 255.0
    return rgb2lab(rgb)[:, 0, :]


def colour_similarity(a: list[RGB], b: list[RGB], scale: float) -> np.ndarray:
    """Element-wise 1 - CIEDE2000 / scale, clipped to [0, 1]."""
    return np.clip(1.0 - deltaE_ciede2000(_lab(a), _lab(b)) / scale, 0.0, 1.0)


def palette(pixels: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` most frequent colours (4 bits per channel) of an (H, W, 3) array, and their weights."""
    flat = pixels.reshape(-1, 3).astype(np.int64)
    q = flat >> 4
    codes = (q[:, 0] << 8) | (q[:, 1] << 4) | q[:, 2]
    counts = np.bincount(codes, minlength=4096)
    top = np.argsort(-counts, kind="stable")[:size]
    top = top[counts[top] > 0]
    sums = np.stack([np.bincount(codes, weights=flat[:, ch], minlength=4096)[top] for ch in range(3)], axis=1)
    colours = sums / counts[top, None]
    return colours, counts[top] / counts[top].sum()


def palette_similarity(pal_a: tuple[np.ndarray, np.ndarray], pal_b: tuple[np.ndarray, np.ndarray],
                       scale: float) -> float:
    """1 - the weighted nearest-colour CIEDE2000 distance between palettes (both directions) / scale."""
    (cols_a, w_a), (cols_b, w_b) = pal_a, pal_b
    distance = deltaE_ciede2000(_lab(cols_a)[:, None, :], _lab(cols_b)[None, :, :])
    mean_distance = 0.5 * (w_a @ distance.min(axis=1) + w_b @ distance.min(axis=0))
    return float(np.clip(1.0 - mean_distance / scale, 0.0, 1.0))


def overall_score(canvas: Canvas, settings: dict) -> float:
    """Structural similarity of the grey pictures scaled to a small fixed long side, in [0, 1].

    At that size a small shift moves content by a fraction of a pixel, so arrangement counts and
    exact positions do not. Each window's SSIM is weighted by how much the two pictures vary in it
    (their local variances plus SSIM's own constant): empty background, where any two pages agree,
    no longer lets a blank page pass as half similar to a full one.
    """
    size = scaled_size(canvas.width, canvas.height, int(settings["ssim_long_side"]))
    name = f"grey{size[0]}x{size[1]}"
    a, b = canvas.each(name, lambda arr: np.asarray(resize(Image.fromarray(arr).convert("L"), size), dtype=float))
    if np.array_equal(a, b):
        return 1.0
    side = min(a.shape)
    if side < 3:
        return float(1.0 - np.abs(a - b).mean() / 255.0)
    window = min(7, side if side % 2 else side - 1)
    _, ssim_map = structural_similarity(a, b, data_range=255, win_size=window, full=True)
    var_a, var_b = (canvas.derived(side, f"{name}variance{window}", partial(_local_variance, grey, window))
                    for side, grey in ((0, a), (1, b)))
    weights = var_a + var_b + (0.03 * 255) ** 2  # SSIM's C2
    inner = (slice(window // 2, -(window // 2) or None),) * 2  # windows wholly inside the picture
    score = (ssim_map[inner] * weights[inner]).sum() / weights[inner].sum()
    return float(np.clip(score, 0.0, 1.0))


def _local_variance(pixels: np.ndarray, window: int) -> np.ndarray:
    mean = uniform_filter(pixels, window)
    return np.maximum(uniform_filter(pixels * pixels, window) - mean * mean, 0.0)


# --- combination ------------------------------------------------------------------------------

def _gated(settings: dict) -> list[str]:
    gated = list(settings["content_gated"])
    unknown = sorted(set(gated) - set(SUB_SCORES))
    if unknown:
        raise MetricError(f"content_gated names unknown sub-scores {unknown}; known: {', '.join(SUB_SCORES)}")
    return gated


def block_score(ref_img: ImageLike, gen_img: ImageLike, ref_blocks: list[dict] | None = None,
                gen_blocks: list[dict] | None = None, params: dict | None = None,
                cache: OcrCache | None = None) -> dict[str, float]:
    """Sub-scores layout, elements, content, style, overall and their rubric-weighted ``total``."""
    settings = visual_params(params)
    ref, gen = load_image(ref_img), load_image(gen_img)
    ref_b, gen_b = pair_blocks(ref, gen, ref_blocks, gen_blocks, settings, cache)
    canvas = common_canvas(ref, gen, int(settings["global_long_side"]), settings["pad_rgb"])
    return compare_blocks(canvas, ref_b, gen_b, (ref.size, gen.size), settings)


def pair_blocks(ref, gen: Image.Image, ref_blocks: list[dict] | None, gen_blocks: list[dict] | None,
                settings: dict, cache: OcrCache | None, ref_lines=None) -> tuple[list[Block], list[Block]]:
    """Both sides' blocks from one source: OCR lines of each picture, or with ``block_source`` "dom"
    the caller's blocks when given for both sides. ``ref`` is a picture, or anything with a ``size`` whose OCR
    blocks ``ref_lines()`` gives (a kept reference, :mod:`evaluator.metrics.reference`)."""
    source = settings["block_source"]
    if source not in ("ocr", "dom"):
        raise MetricError(f"block_source must be 'ocr' or 'dom', got {source!r}")
    if source == "dom" and ref_blocks is not None and gen_blocks is not None:
        return parse_blocks(ref_blocks, ref.size, "ref_blocks"), parse_blocks(gen_blocks, gen.size, "gen_blocks")
    ref_side = ref_lines() if ref_lines is not None else blocks_from_image(ref, settings, cache)
    return ref_side, blocks_from_image(gen, settings, cache)


def compare_blocks(canvas: Canvas, ref: list[Block], gen: list[Block],
                   sizes: tuple[tuple[int, int], tuple[int, int]], settings: dict) -> dict[str, float]:
    """:func:`block_score` on prepared inputs (``sizes`` = the two pictures' pixel sizes)."""
    matches = match_blocks(ref, gen, float(settings["block_match_threshold"]))
    grid_w, grid_h = layout_grid(canvas, settings)
    small = canvas.resized((grid_w * _FINE, grid_h * _FINE))
    text_overlap, component_overlap = layout_overlaps(canvas, small, ref, gen, settings)
    # textless_terms: with no text block on either side, the text terms compare nothing; they drop out.
    textless = bool(settings.get("textless_terms", False)) and not ref and not gen
    scores = {
        "layout": component_overlap if textless else 0.5 * text_overlap + 0.5 * component_overlap,
        "elements": elements_score(ref, gen, matches, *sizes),
        "content": content_score(ref, gen),
        "style": style_score(small, ref, gen, matches, settings, textless),
        "overall": overall_score(canvas, settings),
    }
    shared = shared_content(ref, matches, component_overlap)
    for key in _gated(settings):
        scores[key] *= shared
    weights = settings["block_weights"]
    counted = [k for k in SUB_SCORES if not (textless and k in TEXT_SUB_SCORES)]
    scores["total"] = sum(weights[k] * scores[k] for k in counted) / sum(weights[k] for k in counted)
    return {k: min(1.0, max(0.0, float(v))) for k, v in scores.items()}

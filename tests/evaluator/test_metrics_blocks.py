"""Block comparison (layout, elements, content, style, overall) weighted like the official rubric."""

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from evaluator.metrics import MetricError
from evaluator.metrics.blocks import (
    SUB_SCORES,
    Block,
    block_score,
    content_score,
    elements_score,
    match_blocks,
    near_overlap,
    parse_blocks,
    sample_colours,
)
from evaluator.protocols import get_protocol
from tests.evaluator.conftest import FONT, PAGE_LINES, SHARED, render_page

DOM = {"block_source": "dom"}

SIZE = (1280, 720)
TEXTS = ["Products", "Pricing", "Sign in", "Create your account", "Monthly plan $12", "Yearly plan $99",
         "Contact sales", "Privacy policy"]


def layout(texts=TEXTS, dx=0, color=(33, 37, 41), bg=(255, 255, 255)):
    """DOM-style blocks, one per text, on a two-column grid (shifted right by ``dx``)."""
    return [{"text": t, "box": [80 + dx + 560 * (i % 2), 100 + 80 * (i // 2), 22 * len(t) // 2 + 20, 40],
             "color": list(color), "bg": list(bg)} for i, t in enumerate(texts)]


def draw(blocks):
    """The picture those blocks describe: each block's background box with its text in its colour."""
    img = Image.new("RGB", SIZE, "white")
    pen = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, 20)
    for b in blocks:
        x, y, w, h = b["box"]
        pen.rectangle([x, y, x + w, y + h], fill=tuple(b["bg"]))
        pen.text((x + 6, y + 8), b["text"], font=font, fill=tuple(b["color"]))
    return img


def score(ref_blocks, gen_blocks):
    """Block scores of the drawn pictures, with the given blocks as DOM blocks."""
    return block_score(draw(ref_blocks), draw(gen_blocks), ref_blocks, gen_blocks, params=DOM)


def test_it_scores_identical_blocks_one_everywhere():
    """The same blocks on the same picture score exactly 1 on every sub-score and in total."""
    result = score(layout(), layout())
    assert set(result) == {*SUB_SCORES, "total"}
    assert all(v == 1.0 for v in result.values()), result


def test_it_gives_exactly_one_when_every_block_is_matched():
    """Elements is 1 minus the unmatched share, so many blocks all matched is 1.0, not 0.9999999."""
    blocks = parse_blocks(layout(TEXTS * 7), SIZE)
    matches = match_blocks(blocks, blocks, 0.5)
    assert elements_score(blocks, blocks, matches, SIZE, SIZE) == 1.0
    assert elements_score(blocks, blocks, matches[1:], SIZE, SIZE) < 1.0


def test_it_weights_the_total_like_the_official_rubric():
    """total = (10 layout + 15 elements + 40 content + 15 style + 20 overall) / 100."""
    result = score(layout(), layout(TEXTS[:5], dx=40, color=(200, 30, 30)))
    weights = get_protocol().params["visual"]["block_weights"]
    assert weights == {"layout": 10, "elements": 15, "content": 40, "style": 15, "overall": 20}
    assert result["total"] == pytest.approx(sum(weights[k] * result[k] for k in SUB_SCORES) / 100)


def test_it_scores_unrelated_pages_low():
    """Entirely different text in other places scores near nothing on text and elements."""
    other = layout(["Lorem ipsum", "Dolor", "Quux bazz", "Vehicula"], dx=300)
    result = score(layout(), other)
    assert result["elements"] == 0.0 and result["content"] == 0.0
    assert result["total"] < 0.45


def test_it_drops_as_more_blocks_go_missing():
    """Each block removed from the generated page lowers elements, content and the total."""
    results = [score(layout(), layout(TEXTS[:n])) for n in (8, 6, 4, 2)]
    for key in ("elements", "content", "total"):
        values = [r[key] for r in results]
        assert all(a > b for a, b in zip(values, values[1:], strict=False)), key


def test_it_drops_as_blocks_move_further():
    """Shifting all blocks further right lowers the layout score, gently at first."""
    values = [score(layout(), layout(dx=dx))["layout"] for dx in (0, 15, 60, 120, 300)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False)), values
    assert values[1] > 0.9


def test_it_keeps_the_overall_score_for_a_small_shift_but_not_for_a_blank_page():
    """SSIM at a small size, weighted by content: a 15 px shift keeps most of it, larger shifts
    lose more, and a blank page keeps little."""
    values = [block_score(render_page(), render_page(dx=d, dy=d // 3), cache=SHARED)["overall"]
              for d in (0, 5, 15, 60, 200)]
    assert all(a > b for a, b in zip(values, values[1:], strict=False)), values
    assert values[2] > 0.85
    blank = block_score(render_page(), Image.new("RGB", (1280, 720), "white"), cache=SHARED)["overall"]
    assert blank < 0.3


def test_it_gives_a_blank_page_nothing_at_all():
    """A blank page matches no block: style and overall (white palette, SSIM of white background) fall
    to 0 with layout, elements and content, instead of the 0.47 and 0.1-0.5 they kept."""
    result = block_score(render_page(), Image.new("RGB", (1280, 720), "white"), cache=SHARED)
    assert result == dict.fromkeys([*SUB_SCORES, "total"], 0.0)


def test_it_scales_style_and_overall_by_the_share_of_reference_content_matched():
    """With half the reference's blocks, style and overall are their ungated values times the matched
    share of the reference's block area; the other sub-scores are untouched."""
    ref, gen = layout(), layout(TEXTS[:4])
    share = sum(b["box"][2] * b["box"][3] for b in ref[:4]) / sum(b["box"][2] * b["box"][3] for b in ref)
    gated = score(ref, gen)
    ungated = block_score(draw(ref), draw(gen), ref, gen, params={**DOM, "content_gated": []})
    assert 0.3 < share < 0.7
    assert gated["style"] == pytest.approx(ungated["style"] * share)
    assert gated["overall"] == pytest.approx(ungated["overall"] * share)
    assert {k: gated[k] for k in ("layout", "elements", "content")} == {
        k: ungated[k] for k in ("layout", "elements", "content")}


def test_it_judges_a_reference_without_text_by_its_drawn_components():
    """Without reference text the matched share is the overlap of drawn components: the same shapes
    keep style and overall, a blank page gets neither."""
    shapes = Image.new("RGB", SIZE, "white")
    ImageDraw.Draw(shapes).rectangle([100, 100, 600, 400], fill=(78, 115, 223))
    ImageDraw.Draw(shapes).ellipse([800, 200, 1000, 400], fill=(230, 80, 60))
    same = block_score(shapes, shapes.copy(), [], [], params=DOM)
    blank = block_score(shapes, Image.new("RGB", SIZE, "white"), [], [], params=DOM)
    assert same["style"] == 1.0 and same["overall"] == 1.0
    assert blank["style"] == 0.0 and blank["overall"] == 0.0


def test_it_rejects_an_unknown_gated_sub_score():
    """content_gated may only name block sub-scores."""
    with pytest.raises(MetricError, match="'colour'"):
        block_score(draw(layout()), draw(layout()), layout(), layout(), params={**DOM, "content_gated": ["colour"]})


def test_it_forgives_near_misses_in_layout_but_not_empty_or_full_pages():
    """Tolerant overlap: identical 1, one cell off still high, far off 0, covering everything
    scaled down by its excess area, nothing against something 0."""
    a = np.zeros((36, 64))
    a[10:12, 5:30] = 1.0
    moved = np.roll(a, 1, axis=0)
    far = np.roll(a, 20, axis=0)
    assert near_overlap(a, a.copy(), 4.0) == 1.0
    assert near_overlap(a, moved, 4.0) == pytest.approx(0.875)  # half the cells still covered, half 1 cell off
    assert near_overlap(a, far, 4.0) == 0.0
    assert near_overlap(a, np.ones_like(a), 4.0) < a.sum() / a.size + 1e-9
    assert near_overlap(a, np.zeros_like(a), 4.0) == 0.0
    assert near_overlap(np.zeros_like(a), np.zeros_like(a), 4.0) == 1.0


def test_it_drops_as_text_colour_drifts():
    """Text colour further from the reference lowers the style score."""
    values = [score(layout(), layout(color=c))["style"] for c in ((33, 37, 41), (90, 60, 60), (220, 30, 30))]
    assert all(a > b for a, b in zip(values, values[1:], strict=False))


def test_it_pairs_blocks_by_text_with_the_hungarian_algorithm():
    """Pairs maximise total similarity in any order, and pairs under the threshold are dropped."""
    block = lambda t: Block(t, (0, 0, 10, 10), (0, 0, 0), (255, 255, 255))  # noqa: E731
    ref = [block("Sign in"), block("Sign up"), block("Checkout")]
    gen = [block("Sign up"), block("Basket total"), block("Sign in")]
    pairs = {(r, g) for r, g, _ in match_blocks(ref, gen, 0.5)}
    assert pairs == {(0, 2), (1, 0)}


def test_it_computes_token_f1():
    """Token F1 over all block text, counted as multisets (hand-computed: P=2/3, R=2/4)."""
    ref = [Block("the red apple", (0, 0, 1, 1), (0, 0, 0), (0, 0, 0)), Block("pie", (0, 0, 1, 1), (0, 0, 0), (0, 0, 0))]
    gen = [Block("The apple tart", (0, 0, 1, 1), (0, 0, 0), (0, 0, 0))]
    p, r = 2 / 3, 2 / 4
    assert content_score(ref, gen) == pytest.approx(2 * p * r / (p + r))
    assert content_score([], []) == 1.0
    assert content_score(ref, []) == 0.0


def test_it_samples_text_and_background_colours():
    """In a text box the commonest colour is the background, the commonest distinct one the text."""
    region = np.full((20, 60, 3), (250, 250, 250), dtype=np.uint8)
    region[5:15, 5:40] = (200, 20, 20)
    levels = (region >> 3).astype(np.int16)
    codes = (levels[..., 0] << 10) | (levels[..., 1] << 5) | levels[..., 2]
    text, bg = sample_colours(levels, codes)
    assert np.abs(np.array(bg) - 250).max() <= 4
    assert np.abs(np.array(text) - (200, 20, 20)).max() <= 4


def test_it_reads_blocks_by_ocr_by_default():
    """By default OCR lines are the blocks: fewer lines on the generated page, lower content."""
    same = block_score(render_page(), render_page(), cache=SHARED)
    fewer = block_score(render_page(), render_page(PAGE_LINES[:3]), cache=SHARED)
    assert same["content"] == 1.0 and same["total"] == 1.0
    assert fewer["content"] < 0.8 and fewer["total"] < same["total"]


def test_it_clips_and_drops_blocks_off_the_picture():
    """Boxes are clipped to the picture; blank or fully outside blocks are dropped."""
    items = [{"text": "ok", "box": [-10, 700, 100, 50]}, {"text": "gone", "box": [2000, 10, 50, 50]},
             {"text": "  ", "box": [0, 0, 10, 10]}]
    blocks = parse_blocks(items, SIZE)
    assert [(b.text, b.box) for b in blocks] == [("ok", (0.0, 700.0, 90.0, 20.0))]


@pytest.mark.parametrize(("item", "message"), [
    ({"box": [0, 0, 1, 1]}, r"gen_blocks\[0\]: 'text' must be a string"),
    ({"text": "a", "box": [0, 0, 1]}, r"'box' must be \[x, y, w, h\]"),
    ({"text": "a", "box": [0, 0, 1, 1], "color": "red"}, r"'color' must be \[r, g, b\]"),
    ("text", "expected an object"),
])
def test_it_rejects_malformed_blocks_with_a_clear_message(item, message):
    """A malformed block names its position and what is wrong."""
    with pytest.raises(MetricError, match=message):
        parse_blocks([item], SIZE, "gen_blocks")


def test_it_rejects_an_unknown_block_source():
    """A block_source other than ocr or dom is a MetricError naming the value."""
    with pytest.raises(MetricError, match="'html'"):
        block_score(draw(layout()), draw(layout()), params={"block_source": "html"})


def test_block_matching_uses_scipys_own_assignment_without_importing_scipy_optimize():
    """The Hungarian step is SciPy's compiled function itself (same pairs, ties included), loaded
    without the quarter second of importing all of scipy.optimize in every scoring worker."""
    import subprocess
    import sys

    probe = ("import sys; import evaluator.metrics.blocks as b; "
             "print(b.linear_sum_assignment.__module__, 'scipy.optimize' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["scipy.optimize._lsap", "False"]

    import scipy.optimize

    from evaluator.metrics.assignment import linear_sum_assignment

    assert linear_sum_assignment is scipy.optimize.linear_sum_assignment
    rng = np.random.default_rng(7)
    for shape in ((6, 6), (4, 9), (9, 4)):
        tied = rng.integers(0, 3, size=shape).astype(float)  # many equal optima: tie-breaking shows
        for maximize in (True, False):
            ours = linear_sum_assignment(tied, maximize=maximize)
            theirs = scipy.optimize.linear_sum_assignment(tied, maximize=maximize)
            assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))

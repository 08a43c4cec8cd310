"""Global image similarity: pixel error and colour histogram on a common canvas, relative to blank pages."""

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw

from evaluator.metrics import MetricError
from evaluator.metrics.visual import global_similarity, histogram_similarity, pixel_similarity


def page(size=(1280, 720), boxes=()):
    """A white page with a blue header bar and optional extra filled rectangles ``(box, colour)``."""
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, size[0], 60], fill=(78, 115, 223))
    draw.rectangle([80, 120, 600, 400], fill=(240, 240, 240))
    for box, colour in boxes:
        draw.rectangle(box, fill=colour)
    return img


def test_it_scores_identical_pictures_one():
    """A picture against itself scores exactly 1."""
    assert global_similarity(page(), page()) == 1.0


def test_it_scores_unrelated_pictures_low():
    """A white page against random noise scores low."""
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8))
    assert global_similarity(page(), noise) < 0.45


def test_it_drops_as_more_pixels_change():
    """Painting ever larger dark areas lowers the similarity every time."""
    scores = [global_similarity(page(), page(boxes=[([700, 100, 700 + w, 100 + w // 2], (20, 20, 20))]))
              for w in (20, 100, 250, 450)]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert scores[0] > 0.99 and scores[-1] < 0.9


def test_it_is_symmetric():
    """Swapping the pictures does not change the score."""
    a, b = page(), page(boxes=[([300, 300, 900, 500], (200, 30, 30))])
    assert global_similarity(a, b) == pytest.approx(global_similarity(b, a))


def test_it_pads_pictures_of_different_sizes_with_white():
    """A shorter copy is padded with white: a white page loses nothing, a dark page loses more the more
    of it is missing (the white gap differs from the reference like content)."""
    assert global_similarity(page((1280, 720)), page((1280, 600))) == 1.0
    dark = [([0, 61, 1280, 720], (30, 30, 30))]
    scores = [global_similarity(page((1280, 720), dark), page((1280, h), dark)) for h in (720, 710, 690, 600)]
    assert scores[0] == 1.0 and all(a > b for a, b in zip(scores, scores[1:], strict=False)), scores
    assert scores[1] > 0.8


def test_it_scores_a_blank_page_zero_whatever_the_background():
    """Shared background earns nothing: a blank page of the page's background colour scores 0, and so
    does a white one against a page on a tinted background (before, mostly white pages scored 0.7-0.93)."""
    assert global_similarity(page(), Image.new("RGB", (1280, 720), "white")) == pytest.approx(0.0, abs=1e-9)
    tinted = Image.new("RGB", (1280, 720), (248, 249, 252))
    tinted.paste(page().crop((0, 0, 1280, 400)), (0, 0))
    ImageDraw.Draw(tinted).rectangle([0, 400, 1280, 720], fill=(248, 249, 252))
    assert global_similarity(tinted, Image.new("RGB", (1280, 720), (248, 249, 252))) == pytest.approx(0.0, abs=1e-9)
    assert global_similarity(tinted, Image.new("RGB", (1280, 720), "white")) < 0.02


def test_it_counts_shared_content_like_the_dice_coefficient():
    """Black boxes on white: half the content scores 2 x 1 / (2 + 1), one extra box 2 x 2 / (2 + 3)."""
    def boxes(n):
        img = Image.new("RGB", (1280, 720), "white")
        for i in range(n):  # edges on multiples of 5 px stay sharp at the 0.4 scale
            ImageDraw.Draw(img).rectangle([100 + 300 * i, 200, 100 + 300 * i + 199, 399], fill="black")
        return img

    assert global_similarity(boxes(2), boxes(1)) == pytest.approx(2 / 3)
    assert global_similarity(boxes(2), boxes(3)) == pytest.approx(4 / 5)
    assert global_similarity(boxes(2), Image.new("RGB", (1280, 720), "white")) == pytest.approx(0.0, abs=1e-9)


def test_it_sees_colour_proportions_not_only_positions():
    """Shuffled pixels keep the colour histogram (similarity 1) but lose pixel agreement."""
    arr = np.asarray(page())
    shuffled = np.random.default_rng(1).permutation(arr.reshape(-1, 3)).reshape(arr.shape)
    assert histogram_similarity(arr, shuffled, 8) == pytest.approx(1.0)
    assert pixel_similarity(arr, shuffled) < 0.95


def test_it_accepts_paths_bytes_and_images(tmp_path):
    """Paths, PNG bytes and PIL images of the same picture give the same score."""
    a, b = page(), page(boxes=[([300, 300, 900, 500], (200, 30, 30))])
    b.save(tmp_path / "b.png")
    buffer = io.BytesIO()
    a.save(buffer, format="PNG")
    assert global_similarity(buffer.getvalue(), tmp_path / "b.png") == pytest.approx(global_similarity(a, b))


def test_it_shows_transparent_pixels_on_white():
    """A fully transparent picture is a white page."""
    clear = Image.new("RGBA", (400, 300), (0, 0, 0, 0))
    assert global_similarity(clear, Image.new("RGB", (400, 300), "white")) == 1.0


def test_it_rejects_what_is_not_an_image():
    """Something that is not a picture is a MetricError with a plain message."""
    with pytest.raises(MetricError, match="expected a PIL image"):
        global_similarity(42, page())

"""All visual scores of one reference/generated screenshot pair."""

import pytest
from PIL import Image

from evaluator.metrics import ocr
from evaluator.metrics.checkpoint import score_checkpoint
from evaluator.metrics.ocr import OcrCache
from tests.evaluator.test_metrics_ocr import PAGE_LINES, SHARED, count_tesseract_runs, render_page

KEYS = {"ocr", "global", "low_level", "high_level", "layout", "elements", "content", "style", "overall"}


def test_it_scores_a_screenshot_against_itself_one(tmp_path):
    """The same screenshot (given as paths) scores 1 on every key."""
    render_page().save(tmp_path / "ref.png")
    render_page().save(tmp_path / "gen.png")
    result = score_checkpoint(tmp_path / "ref.png", tmp_path / "gen.png", cache=SHARED)
    assert set(result) == KEYS
    assert all(v == pytest.approx(1.0) for v in result.values())


def test_it_combines_like_the_official_low_level_score():
    """low_level is the mean of OCR and global similarity; high_level is the block total in [0, 1]."""
    result = score_checkpoint(render_page(), render_page(PAGE_LINES[:4], header=(200, 60, 60)), cache=SHARED)
    assert result["low_level"] == pytest.approx((result["ocr"] + result["global"]) / 2)
    assert all(0.0 <= v <= 1.0 for v in result.values())


def test_it_drops_as_the_generated_page_loses_more_text():
    """Removing ever more lines lowers both the low-level and the high-level score."""
    results = [score_checkpoint(render_page(), render_page(PAGE_LINES[:n]), cache=SHARED) for n in (6, 4, 2, 0)]
    for key in ("ocr", "low_level", "high_level"):
        values = [r[key] for r in results]
        assert all(a > b for a, b in zip(values, values[1:], strict=False)), (key, values)


def test_it_scores_a_blank_page_low_against_a_real_one():
    """A blank page shares no text with the reference: OCR 0 and a low high-level score."""
    result = score_checkpoint(render_page(), Image.new("RGB", (1280, 720), "white"), cache=SHARED)
    assert result["ocr"] == 0.0
    assert result["high_level"] < 0.5


def test_it_reads_the_reference_once(monkeypatch):
    """With a shared cache the reference is read once; each new generated screenshot once."""
    tesseract_runs = count_tesseract_runs(monkeypatch)
    cache = OcrCache()
    score_checkpoint(render_page(), render_page(PAGE_LINES[:5]), cache=cache)
    assert len(tesseract_runs) == 2
    score_checkpoint(render_page(), render_page(PAGE_LINES[:3]), cache=cache)
    assert len(tesseract_runs) == 3


def test_it_skips_ocr_when_text_and_blocks_are_given(monkeypatch):
    """OCR text and DOM blocks supplied for both sides mean no Tesseract run at all."""
    monkeypatch.setattr(ocr, "_run_tesseract", lambda *a: pytest.fail("tesseract ran"))
    blocks = [{"text": line, "box": [80, 110 + 70 * i, 400, 30], "color": [33, 37, 41], "bg": [255, 255, 255]}
              for i, line in enumerate(PAGE_LINES)]
    result = score_checkpoint(render_page(), render_page(), ref_blocks=blocks, gen_blocks=blocks[:3],
                              ref_text=" ".join(PAGE_LINES), gen_text=" ".join(PAGE_LINES[:3]))
    assert result["ocr"] < 1.0 and result["elements"] < 1.0
    assert result["global"] == 1.0

"""All visual scores of one reference/generated screenshot pair."""

import json
from collections import defaultdict

import pytest
from PIL import Image

from evaluator.metrics import ocr
from evaluator.metrics.checkpoint import score_checkpoint
from evaluator.metrics.ocr import OcrCache
from tests.evaluator.conftest import BENCHMARK, PAGE_LINES, SHARED, render_page, sample_checkpoints

KEYS = {"ocr", "global", "low_level", "high_level", "layout", "elements", "content", "style", "overall"}
DOM = {"block_source": "dom"}


def _checkpoints_by_task() -> dict[str, list]:
    tasks = defaultdict(list)
    for path in sample_checkpoints():
        tasks[f"{path.parents[3].name}/{path.parents[1].name}"].append(path)
    return dict(tasks)


SAMPLE_TASKS = _checkpoints_by_task()
SAMPLE_CACHE = OcrCache(maxsize=512)


def test_it_scores_a_screenshot_against_itself_one(tmp_path):
    """The same screenshot (given as paths) scores 1 on every key."""
    render_page().save(tmp_path / "ref.png")
    render_page().save(tmp_path / "gen.png")
    result = score_checkpoint(tmp_path / "ref.png", tmp_path / "gen.png", cache=SHARED)
    assert set(result) == KEYS
    assert all(v == 1.0 for v in result.values()), result


@pytest.mark.skipif(not SAMPLE_TASKS, reason=f"sample benchmark not built at {BENCHMARK} (scripts/setup.sh builds it)")
@pytest.mark.parametrize("task", sorted(SAMPLE_TASKS) or ["none"])
def test_every_sample_checkpoint_scores_exactly_one_against_itself(task):
    """Each checkpoint of the sample benchmark scores exactly 1 on every key against itself, with OCR
    blocks and with its reference DOM blocks on both sides."""
    for path in SAMPLE_TASKS[task]:
        reference = json.loads((path.parents[1] / "reference" / f"{path.stem}.json").read_text("utf-8"))
        by_ocr = score_checkpoint(path, path, cache=SAMPLE_CACHE)
        by_dom = score_checkpoint(path, path, DOM, ref_blocks=reference["blocks"], gen_blocks=reference["blocks"],
                                  cache=SAMPLE_CACHE)
        assert set(by_ocr) == KEYS
        assert {k: v for k, v in by_ocr.items() if v != 1.0} == {}, path
        assert {k: v for k, v in by_dom.items() if v != 1.0} == {}, path


def test_it_scores_identical_screenshots_one_whatever_blocks_the_caller_has():
    """By default blocks are read from the screenshots, so DOM blocks from two different extractors
    (one per text node against one per element) cannot pull identical screenshots below 1."""
    per_node = [{"text": word, "box": [80 + 60 * i, 110, 50, 30]} for i, word in enumerate(PAGE_LINES[0].split())]
    per_element = [{"text": PAGE_LINES[0], "box": [80, 110, 400, 30]}]
    result = score_checkpoint(render_page(), render_page(), ref_blocks=per_node, gen_blocks=per_element, cache=SHARED)
    assert all(v == 1.0 for v in result.values()), result
    with_dom = score_checkpoint(render_page(), render_page(), DOM, ref_blocks=per_node, gen_blocks=per_element,
                                cache=SHARED)
    assert with_dom["elements"] < 1.0


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


def test_it_scores_a_blank_page_zero_against_a_real_one():
    """A blank page shares nothing with the reference but its background: every score is 0, so its
    VFS is 0 (shared white background used to give it a VFS of 0.22-0.36)."""
    result = score_checkpoint(render_page(), Image.new("RGB", (1280, 720), "white"), cache=SHARED)
    assert result == pytest.approx(dict.fromkeys(KEYS, 0.0), abs=1e-9)


def test_it_reads_the_reference_once(tesseract_runs):
    """With a shared cache the reference is read once; each new generated screenshot once."""
    cache = OcrCache()
    score_checkpoint(render_page(), render_page(PAGE_LINES[:5]), cache=cache)
    assert len(tesseract_runs) == 2
    score_checkpoint(render_page(), render_page(PAGE_LINES[:3]), cache=cache)
    assert len(tesseract_runs) == 3


def test_it_skips_ocr_when_text_and_dom_blocks_are_given(monkeypatch):
    """With block_source "dom", OCR text and DOM blocks supplied for both sides mean no Tesseract run."""
    monkeypatch.setattr(ocr, "_run_tesseract", lambda *a: pytest.fail("tesseract ran"))
    blocks = [{"text": line, "box": [80, 110 + 70 * i, 400, 30], "color": [33, 37, 41], "bg": [255, 255, 255]}
              for i, line in enumerate(PAGE_LINES)]
    result = score_checkpoint(render_page(), render_page(), DOM, ref_blocks=blocks, gen_blocks=blocks[:3],
                              ref_text=" ".join(PAGE_LINES), gen_text=" ".join(PAGE_LINES[:3]))
    assert result["ocr"] < 1.0 and result["elements"] < 1.0
    assert result["global"] == 1.0


def test_it_degrades_gracefully_as_the_page_shifts():
    """Moving the whole page further lowers the high-level score step by step, and a 15 px move costs
    little next to a different page."""
    results = [score_checkpoint(render_page(), render_page(dx=d, dy=d // 3), cache=SHARED) for d in (0, 15, 60, 200)]
    for key in ("high_level", "layout", "overall"):
        values = [r[key] for r in results]
        assert all(a > b for a, b in zip(values, values[1:], strict=False)), (key, values)
    assert results[1]["layout"] > 0.9 and results[1]["overall"] > 0.85 and results[1]["high_level"] > 0.9
    other = score_checkpoint(render_page(), render_page(["Quarterly revenue", "Open tickets"], header=(30, 30, 30)),
                             cache=SHARED)
    assert other["high_level"] < results[1]["high_level"] - 0.3


def _cards(shift: int = 0, colours=((94, 205, 222), (143, 227, 200), (215, 150, 170))) -> Image.Image:
    """A page without a word: a dark toolbar with coloured marks and cards with coloured edges."""
    from PIL import ImageDraw

    img = Image.new("RGB", (1280, 720), (242, 242, 242))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, 1280, 75], fill=(51, 51, 51))
    for i, colour in enumerate(colours):
        draw.rectangle([30 + 45 * i, 30, 44 + 45 * i, 44], fill=colour)
        x = 16 + 316 * i + shift
        draw.rectangle([x, 91, x + 300, 276], fill=(255, 255, 255))
        draw.rectangle([x, 91, x + 300, 99], fill=colour)
    return img


def test_textless_terms_drop_out_where_neither_screenshot_has_text():
    """Where neither screenshot shows text, iwr-det-5 judges by the look alone: a blank page scores 0 on
    both levels, where iwr-det-4 gave it 0.5 and 0.6 for text terms that compared nothing; the page itself
    still scores 1, and a slightly moved copy keeps most of it."""
    from evaluator.protocols import get_protocol

    det4, det5 = (get_protocol(name).params["visual"] for name in ("iwr-det-4", "iwr-det-5"))
    ref, blank = _cards(), Image.new("RGB", (1280, 720), (255, 255, 255))
    old = score_checkpoint(ref, blank, det4, cache=SHARED)
    assert (old["ocr"], old["content"], old["elements"]) == (1.0, 1.0, 1.0)  # vacuous: nothing to read on either
    assert (old["low_level"], old["high_level"]) == (0.5, pytest.approx(0.6))
    new = score_checkpoint(ref, blank, det5, cache=SHARED)
    assert (new["low_level"], new["high_level"]) == (0.0, 0.0), new
    assert all(v == 1.0 for v in score_checkpoint(ref, _cards(), det5, cache=SHARED).values())
    moved = score_checkpoint(ref, _cards(shift=8), det5, cache=SHARED)
    recoloured = score_checkpoint(ref, _cards(colours=((200, 60, 60),) * 3), det5, cache=SHARED)
    assert 0.6 < moved["high_level"] < 1.0 and recoloured["high_level"] < moved["high_level"], (moved, recoloured)


def test_textless_terms_leave_a_checkpoint_with_text_alone():
    """With text on either side nothing changes: a worded page scores as under iwr-det-4, and so does a
    worded page against a textless reference (its words are extra)."""
    from evaluator.protocols import get_protocol

    det4, det5 = (get_protocol(name).params["visual"] for name in ("iwr-det-4", "iwr-det-5"))
    for ref, gen in ((render_page(), render_page(dx=12)), (render_page(), Image.new("RGB", (1280, 720), "white")),
                     (_cards(), render_page())):
        assert score_checkpoint(ref, gen, det5, cache=SHARED) == score_checkpoint(ref, gen, det4, cache=SHARED)

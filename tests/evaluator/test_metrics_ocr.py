"""OCR text, word boxes, the official OCR similarity and the OCR cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from evaluator.metrics import MetricError, ocr
from evaluator.metrics.ocr import OcrCache, ocr_lines, ocr_page, ocr_similarity, ocr_text, ocr_words

ROOT = Path(__file__).resolve().parents[2]
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

PAGE_LINES = [
    "Welcome to the Dashboard",
    "Monthly earnings report",
    "Pending requests and tasks",
    "Settings and user profile",
    "Download the latest invoice",
    "Contact support for help",
]


def render_page(lines=PAGE_LINES, size=(1280, 720), font_size=24, color=(33, 37, 41), bg=(255, 255, 255),
                header=(78, 115, 223)):
    """A page-like picture: a coloured header bar and lines of DejaVu text on a plain background."""
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(FONT, font_size)
    if header:
        draw.rectangle([0, 0, size[0], 60], fill=header)
    for i, line in enumerate(lines):
        draw.text((80, 110 + i * 70), line, font=font, fill=color)
    return img


SHARED = OcrCache()  # pictures recur across tests; tests that count Tesseract runs use their own cache


def count_tesseract_runs(monkeypatch):
    """A list that grows by one entry per Tesseract run (the real engine still runs)."""
    calls = []
    real = ocr._run_tesseract

    def run(*args):
        calls.append(args[1:])
        return real(*args)

    monkeypatch.setattr(ocr, "_run_tesseract", run)
    return calls


def test_it_scores_identical_text_one():
    """Identical text is fully similar."""
    assert ocr_similarity("Sign in to continue", "Sign in to continue") == 1.0


def test_it_follows_the_official_formula():
    """1 - Levenshtein / max length: kitten -> sitting is 3 edits over 7 characters."""
    assert ocr_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 7)


def test_it_ignores_case():
    """Text is lower-cased before comparing, as the official code does."""
    assert ocr_similarity("SUBMIT Order", "submit order") == 1.0


def test_it_treats_empty_text_as_the_official_code_does():
    """Both empty -> 1; exactly one empty -> 0."""
    assert ocr_similarity("", "") == 1.0
    assert ocr_similarity("", "text") == 0.0
    assert ocr_similarity("text", "") == 0.0


def test_it_drops_as_more_text_is_removed():
    """Removing progressively more words lowers the similarity every time."""
    words = " ".join(PAGE_LINES).split()
    full = " ".join(words)
    scores = [ocr_similarity(full, " ".join(words[: len(words) - k])) for k in range(0, len(words), 3)]
    assert all(a > b for a, b in zip(scores, scores[1:], strict=False))
    assert scores[0] == 1.0


def test_it_reads_rendered_dejavu_text():
    """Tesseract reads every line of a rendered page almost exactly."""
    text = ocr_text(render_page(), cache=SHARED)
    assert ocr_similarity(text, " ".join(PAGE_LINES)) > 0.95


def test_it_gives_word_boxes_grouped_in_lines():
    """Words carry boxes where they were drawn, and lines group them in reading order."""
    cache = SHARED
    img = render_page()
    words = ocr_words(img, cache=cache)
    welcome = next(w for w in words if w.text == "Welcome")
    assert 70 <= welcome.box[0] <= 90 and 100 <= welcome.box[1] <= 125
    lines = ocr_lines(img, cache=cache)
    assert [line.text for line in lines][:2] == PAGE_LINES[:2]
    assert lines[0].box[1] < lines[1].box[1]


def test_it_finds_no_text_on_a_blank_picture():
    """A blank picture has no words, and two blank pictures are fully similar."""
    text = ocr_text(Image.new("RGB", (640, 360), "white"), cache=OcrCache())
    assert text == ""
    assert ocr_similarity(text, "") == 1.0


def test_it_reads_a_picture_once_per_cache(monkeypatch):
    """The same pixels (even from a new object) come from the cache; other settings read again."""
    counting = count_tesseract_runs(monkeypatch)
    cache = OcrCache()
    small = {"lines": PAGE_LINES[:2], "size": (640, 280)}
    first = ocr_page(render_page(**small), cache=cache)
    second = ocr_page(render_page(**small), cache=cache)
    assert second == first and first.text
    assert len(counting) == 1
    ocr_page(render_page(**small), params={"ocr_psm": 11}, cache=cache)
    assert len(counting) == 2


def test_it_keeps_results_on_disk_across_caches(tmp_path, monkeypatch):
    """A new cache on the same directory answers without running Tesseract; a damaged file is redone."""
    counting = count_tesseract_runs(monkeypatch)
    img = render_page(PAGE_LINES[:2], size=(640, 280))
    first = ocr_page(img, cache=OcrCache(directory=tmp_path))
    assert first.text
    assert ocr_page(img, cache=OcrCache(directory=tmp_path)) == first
    assert len(counting) == 1
    for path in tmp_path.glob("*.json"):
        path.write_text("{not json")
    assert ocr_page(img, cache=OcrCache(directory=tmp_path)) == first
    assert len(counting) == 2


def test_it_evicts_the_least_recently_used_result():
    """The in-memory cache holds at most ``maxsize`` results, dropping the oldest."""
    cache = OcrCache(maxsize=2)
    results = [ocr.OcrResult((ocr.Word(str(i), (0, 0, 1, 1), 90.0),)) for i in range(3)]
    cache.put("a", results[0])
    cache.put("b", results[1])
    cache.get("a")
    cache.put("c", results[2])
    assert cache.get("b") is None
    assert cache.get("a") == results[0] and cache.get("c") == results[2]


def test_it_limits_tesseract_threads_at_call_time_not_import_time():
    """Importing the metrics leaves the environment alone; OCR sets OMP_THREAD_LIMIT=1 when it runs."""
    code = (
        "import os\n"
        "import evaluator.metrics.ocr, evaluator.scoring\n"
        "print(os.environ.get('OMP_THREAD_LIMIT'))\n"
        "from PIL import Image\n"
        "from evaluator.metrics.ocr import ocr_text\n"
        "ocr_text(Image.new('RGB', (64, 32), 'white'))\n"
        "print(os.environ.get('OMP_THREAD_LIMIT'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "1"]


def test_it_says_which_image_it_cannot_read(tmp_path):
    """An unreadable screenshot is a MetricError naming the file, not a traceback."""
    bad = tmp_path / "step_1.png"
    bad.write_bytes(b"not a png")
    with pytest.raises(MetricError, match="step_1.png"):
        ocr_text(bad)
    with pytest.raises(MetricError, match="No such file"):
        ocr_text(tmp_path / "missing.png")

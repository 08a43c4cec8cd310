"""OCR text, word boxes, the official OCR similarity and the OCR cache."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PIL import Image

from evaluator.metrics import MetricError, ocr
from evaluator.metrics.ocr import (
    OcrCache,
    ocr_engine,
    ocr_lines,
    ocr_page,
    ocr_similarity,
    ocr_text,
    ocr_words,
    tessdata_dir,
)
from tests.evaluator.conftest import PAGE_LINES, ROOT, SHARED, render_page, sample_checkpoints


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


def test_it_reads_a_picture_once_per_cache(tesseract_runs):
    """The same pixels (even from a new object) come from the cache; other settings read again."""
    counting = tesseract_runs
    cache = OcrCache()
    small = {"lines": PAGE_LINES[:2], "size": (640, 280)}
    first = ocr_page(render_page(**small), cache=cache)
    second = ocr_page(render_page(**small), cache=cache)
    assert second == first and first.text
    assert len(counting) == 1
    ocr_page(render_page(**small), params={"ocr_psm": 11}, cache=cache)
    assert len(counting) == 2


def test_it_keeps_results_on_disk_across_caches(tmp_path, tesseract_runs):
    """A new cache on the same directory answers without running Tesseract; a damaged file is redone."""
    counting = tesseract_runs
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


# --- the engine ------------------------------------------------------------------------------------

SMALL = {"lines": PAGE_LINES[:2], "size": (640, 280)}


@pytest.fixture
def fresh_engines(monkeypatch):
    """An empty engine pool whose loads are counted (the list of languages loaded)."""
    pool = ocr._EnginePool()
    loads = []
    real_load = pool._load

    def load(lang):
        loads.append(lang)
        return real_load(lang)

    monkeypatch.setattr(pool, "_load", load)
    monkeypatch.setattr(ocr, "_ENGINES", pool)
    return loads


@pytest.fixture
def without_tesserocr(monkeypatch):
    """As if tesserocr could not be imported: the tesseract program is used."""
    monkeypatch.setattr(ocr, "_tesserocr", lambda: None)
    ocr.ocr_engine.cache_clear()
    yield
    ocr.ocr_engine.cache_clear()


def test_it_reads_in_process_with_tesserocr(monkeypatch):
    """The pinned tesserocr wheel reads the text; the tesseract program is never started."""
    monkeypatch.setattr(ocr.pytesseract, "image_to_data", lambda *a, **k: pytest.fail("tesseract program ran"))
    assert ocr_engine().startswith("tesserocr ")
    assert ocr_similarity(ocr_text(render_page(), cache=OcrCache()), " ".join(PAGE_LINES)) > 0.95


def test_it_loads_the_model_once_for_many_pictures_and_threads(fresh_engines):
    """One engine serves every picture of a thread, and a later thread reuses it instead of loading again."""
    for n in (2, 3, 4):
        ocr_page(render_page(PAGE_LINES[:n], size=(640, 360)), cache=OcrCache())
    worker = threading.Thread(target=ocr_page, args=(render_page(PAGE_LINES[:5]),), kwargs={"cache": OcrCache()})
    worker.start()
    worker.join()
    assert fresh_engines == ["eng"]


def test_it_reads_the_same_words_from_concurrent_threads(fresh_engines):
    """Threads reading at once each get their own engine and the words a lone read gives."""
    pictures = [render_page(PAGE_LINES[i:i + 3], size=(640, 360)) for i in range(4)]
    alone = [ocr_page(p, cache=OcrCache()) for p in pictures]
    together = [None] * len(pictures)

    def read(i):
        together[i] = ocr_page(pictures[i], cache=OcrCache())

    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(pictures))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert together == alone
    assert 1 <= len(fresh_engines) <= len(pictures)


def test_it_reads_identical_words_in_another_process(tmp_path):
    """A fresh process reads exactly the same words and boxes from a screenshot (no hidden state)."""
    # A page full of words (the middle checkpoint of the whole sample may be a carousel's photos, with none)
    shots = [shot for shot in sample_checkpoints() if shot.parent.parent.name.startswith("sb-admin-")]
    picture = shots[len(shots) // 2] if shots else tmp_path / "page.png"
    if not shots:
        render_page().save(picture)
    code = ("import json, sys\nfrom evaluator.metrics.ocr import OcrCache, ocr_page\n"
            "print(json.dumps(ocr_page(sys.argv[1], cache=OcrCache()).to_json()))\n")
    out = subprocess.run([sys.executable, "-c", code, str(picture)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    here = ocr_page(picture, cache=OcrCache())
    assert here.words
    assert ocr.OcrResult.from_json(json.loads(out.stdout)) == here


def test_it_falls_back_to_the_tesseract_program(without_tesserocr, tesseract_runs):
    """Without tesserocr the tesseract program reads the text, under its own cache key."""
    assert ocr_engine().startswith("tesseract ")
    cache = OcrCache()
    text = ocr_text(render_page(), cache=cache)
    assert ocr_similarity(text, " ".join(PAGE_LINES)) > 0.95
    assert len(tesseract_runs) == 1


def test_it_keys_the_cache_by_engine(monkeypatch, tesseract_runs):
    """A result read by one engine is not served to another: the engine is part of the key."""
    cache = OcrCache()
    img = render_page(**SMALL)
    ocr_page(img, cache=cache)
    monkeypatch.setattr(ocr, "ocr_engine", lambda: "tesseract 0.0-other")
    ocr_page(img, cache=cache)
    ocr_page(img, params={"ocr_dpi": 70}, cache=cache)
    assert len(tesseract_runs) == 3


def test_it_finds_language_data_and_names_what_is_missing(tmp_path, monkeypatch):
    """TESSDATA_PREFIX is searched first; a language without data is a MetricError naming it."""
    (tmp_path / "eng.traineddata").symlink_to(Path(tessdata_dir("eng")) / "eng.traineddata")
    monkeypatch.setenv("TESSDATA_PREFIX", str(tmp_path))
    assert tessdata_dir("eng") == f"{tmp_path}/"
    with pytest.raises(MetricError, match="'xyz'"):
        tessdata_dir("xyz")


def test_a_pictures_key_is_hashed_once_while_it_lives_and_forgotten_after(monkeypatch):
    """The OCR cache key of one picture object is computed once; equal pixels in another object get the
    same key, other pixels another; the memo does not keep pictures alive."""
    import gc

    import evaluator.metrics as metrics

    picture = Image.new("RGB", (64, 32), "white")
    first = metrics.image_key(picture)
    monkeypatch.setattr(metrics.np, "asarray", lambda *_: pytest.fail("a known picture was hashed again"))
    assert metrics.image_key(picture) == first
    monkeypatch.undo()
    assert metrics.image_key(picture.copy()) == first
    changed = picture.copy()
    changed.putpixel((3, 3), (0, 0, 0))
    assert metrics.image_key(changed) != first
    known = len(metrics._REMEMBERED)
    del picture, changed
    gc.collect()
    assert len(metrics._REMEMBERED) <= known - 2

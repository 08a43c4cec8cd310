"""Screenshot text by Tesseract, and the official OCR similarity.

One Tesseract run per picture gives both the text and the word boxes (``image_to_data``).
Results are cached by a hash of the pixels, in memory and optionally on disk, so a task's
reference screenshots are read once however many submissions are scored against them.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytesseract
from PIL import Image
from rapidfuzz.distance import Levenshtein

from evaluator.metrics import ImageLike, MetricError, image_key, load_image, visual_params

Box = tuple[int, int, int, int]  # x, y, width, height in pixels
# A screenshot takes well under a second; far longer means Tesseract is stuck on a pathological picture.
TESSERACT_TIMEOUT_S = 60


@dataclass(frozen=True)
class Word:
    """A recognised word with its box, Tesseract's confidence (0-100) and the id of its line."""

    text: str
    box: Box
    conf: float
    line: tuple[int, int, int] = (0, 0, 0)  # Tesseract's (block, paragraph, line) numbers


@dataclass(frozen=True)
class Line:
    """Words Tesseract put on one line, in reading order."""

    text: str
    box: Box
    words: tuple[Word, ...]


@dataclass(frozen=True)
class OcrResult:
    """Everything one Tesseract run found on a picture."""

    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        """The words in reading order separated by single spaces."""
        return " ".join(word.text for word in self.words)

    def lines(self) -> list[Line]:
        grouped: dict[tuple[int, int, int], list[Word]] = {}
        for word in self.words:
            grouped.setdefault(word.line, []).append(word)
        return [Line(" ".join(w.text for w in ws), union_box([w.box for w in ws]), tuple(ws))
                for ws in grouped.values()]

    def to_json(self) -> list[list[Any]]:
        return [[w.text, list(w.box), w.conf, list(w.line)] for w in self.words]

    @classmethod
    def from_json(cls, rows: list[list[Any]]) -> OcrResult:
        return cls(tuple(Word(text, tuple(box), conf, tuple(line)) for text, box, conf, line in rows))


def union_box(boxes: list[Box]) -> Box:
    x0 = min(b[0] for b in boxes)
    y0 = min(b[1] for b in boxes)
    x1 = max(b[0] + b[2] for b in boxes)
    y1 = max(b[1] + b[3] for b in boxes)
    return (x0, y0, x1 - x0, y1 - y0)


class OcrCache:
    """OCR results keyed by pixel hash and OCR settings: an in-memory LRU, plus a directory if given."""

    def __init__(self, maxsize: int = 256, directory: str | Path | None = None):
        self.maxsize = maxsize
        self.directory = Path(directory) if directory else None
        self._memory: OrderedDict[str, OcrResult] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> OcrResult | None:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
        result = self._read_disk(key)
        if result is not None:
            self._remember(key, result)
        return result

    def put(self, key: str, result: OcrResult) -> None:
        self._remember(key, result)
        self._write_disk(key, result)

    def _remember(self, key: str, result: OcrResult) -> None:
        with self._lock:
            self._memory[key] = result
            self._memory.move_to_end(key)
            while len(self._memory) > self.maxsize:
                self._memory.popitem(last=False)

    def _read_disk(self, key: str) -> OcrResult | None:
        if self.directory is None:
            return None
        try:
            return OcrResult.from_json(json.loads((self.directory / f"{key}.json").read_text("utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # absent or damaged: OCR runs again and rewrites it

    def _write_disk(self, key: str, result: OcrResult) -> None:
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        # Write then rename, so parallel workers never read half a file.
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(result.to_json(), handle)
            os.replace(tmp, self.directory / f"{key}.json")
        finally:
            Path(tmp).unlink(missing_ok=True)


DEFAULT_CACHE = OcrCache()


@functools.lru_cache(maxsize=1)
def tesseract_version() -> str:
    """Installed Tesseract's version (part of cache keys: another engine may read differently)."""
    try:
        return str(pytesseract.get_tesseract_version())
    except pytesseract.TesseractNotFoundError:
        raise MetricError("tesseract is not installed (apt-get install tesseract-ocr)") from None


def ocr_page(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> OcrResult:
    """Words on the picture, from the cache when this picture was read before with the same settings."""
    image = load_image(img)
    settings = visual_params(params)
    config = (settings["ocr_lang"], int(settings["ocr_psm"]), float(settings["ocr_min_conf"]))
    cache = DEFAULT_CACHE if cache is None else cache
    key = f"{image_key(image)}-{tesseract_version()}-{config[0]}-{config[1]}-{config[2]:g}"
    result = cache.get(key)
    if result is None:
        result = _run_tesseract(image, *config)
        cache.put(key, result)
    return result


def ocr_text(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> str:
    """The picture's text in reading order, words separated by single spaces."""
    return ocr_page(img, params, cache).text


def ocr_words(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> list[Word]:
    """The picture's words with their boxes; ``Word.line`` groups them into lines."""
    return list(ocr_page(img, params, cache).words)


def ocr_lines(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> list[Line]:
    """The picture's text lines with their boxes."""
    return ocr_page(img, params, cache).lines()


def ocr_similarity(a: str, b: str) -> float:
    """Official OCR similarity: 1 - Levenshtein(a, b) / max(len) on lower-cased text.

    Both empty -> 1.0; exactly one empty -> 0.0 (the formula gives that too).
    """
    a, b = a.lower(), b.lower()
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - Levenshtein.distance(a, b) / longest


def _run_tesseract(image: Image.Image, lang: str, psm: int, min_conf: float) -> OcrResult:
    # Tesseract's OpenMP threads make it 4-6x slower on two cores; set at call time so
    # importing this module changes nothing.
    os.environ["OMP_THREAD_LIMIT"] = "1"
    gray = image.convert("L")
    gray.format = "BMP"  # pytesseract writes the temporary file in this format: no PNG compression cost
    try:
        data = pytesseract.image_to_data(gray, lang=lang, config=f"--psm {psm}", timeout=TESSERACT_TIMEOUT_S,
                                         output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractNotFoundError:
        raise MetricError("tesseract is not installed (apt-get install tesseract-ocr)") from None
    except pytesseract.TesseractError as exc:
        raise MetricError(f"tesseract failed: {exc.message.strip() or exc.status}") from None
    except RuntimeError as exc:  # pytesseract's way of saying the timeout expired
        raise MetricError(f"tesseract did not finish within {TESSERACT_TIMEOUT_S} s ({exc})") from None
    return OcrResult(tuple(_words_from_data(data, min_conf)))


def _words_from_data(data: dict[str, list], min_conf: float) -> list[Word]:
    words = []
    for i, raw in enumerate(data["text"]):
        text = str(raw).strip()
        conf = float(data["conf"][i])
        if not text or conf < min_conf:
            continue
        box = (int(data["left"][i]), int(data["top"][i]), int(data["width"][i]), int(data["height"][i]))
        line = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
        words.append(Word(text, box, conf, line))
    return words

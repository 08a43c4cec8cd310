"""Screenshot text by Tesseract, and the official OCR similarity.

One Tesseract run per picture gives both the text and the word boxes (its TSV output).
Tesseract runs in-process through ``tesserocr`` (the pinned wheel carries its own libtesseract,
so every machine with that wheel and Debian's ``eng.traineddata`` reads the same text); each
thread borrows a loaded engine from a per-process pool, so the model loads once per thread
that reads, not once per picture. Without ``tesserocr`` the ``tesseract`` program is run
through ``pytesseract``: slower, and its text may differ slightly, so the engine is part
of every cache key (see :func:`ocr_engine`).
Results are cached by a hash of the pixels, in memory and optionally on disk, so a task's
reference screenshots are read once however many submissions are scored against them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytesseract
from PIL import Image
from rapidfuzz.distance import Levenshtein

from evaluator.memo import BoundedMemo
from evaluator.metrics import ImageLike, MetricError, image_key, load_image, visual_params

Box = tuple[int, int, int, int]  # x, y, width, height in pixels
# A screenshot takes well under a second; far longer means Tesseract is stuck on a pathological picture.
TESSERACT_TIMEOUT_S = 60
# Where Debian (and most distributions) put Tesseract's language data; TESSDATA_PREFIX comes first.
TESSDATA_DIRS = ("/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                 "/usr/share/tessdata", "/usr/local/share/tessdata")


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
    """OCR results keyed by pixel hash and OCR settings: an in-memory LRU, plus a directory if given.

    A directory shared by scoring jobs holds the readings of reference checkpoints, which every job
    trusts, while the jobs run untrusted pages. A stored reading cannot be checked against its key
    without running Tesseract again, the very cost the cache saves; so the jobs get the directory
    read-only and a trusted step fills it (:meth:`fill`, which reads nothing but the task set's own
    checkpoints). Where the directory cannot be written, new results simply stay in memory.
    """

    def __init__(self, maxsize: int = 256, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else None
        self._memory = BoundedMemo(maxsize)
        self._disk_writable = True

    def get(self, key: str) -> OcrResult | None:
        result = self._memory.get(key)
        if result is not None:
            return result
        result = self._read_disk(key)
        if result is not None:
            self._memory.put(key, result)
        return result

    def put(self, key: str, result: OcrResult) -> None:
        self._memory.put(key, result)
        self._write_disk(key, result)

    def fill(self, images: Iterable[str | Path], params: dict | None = None, workers: int = 1,
             deadline: float | None = None) -> int:
        """Read each picture file of ``images`` into the directory unless it is there already; returns how
        many Tesseract read now. No new picture is started after ``deadline`` (``time.monotonic()``).

        A marker per file (its bytes' digest and the settings) lets a later fill skip the picture
        without decoding it: about a millisecond each instead of tens.
        """
        if self.directory is None:
            raise ValueError("an OcrCache without a directory has nothing to fill")
        settings = _fill_settings(params)
        todo = [Path(path) for path in dict.fromkeys(images) if not self._filled(Path(path), settings)]
        with ThreadPoolExecutor(max(1, workers), thread_name_prefix="iwr-ocr-fill") as pool:
            return sum(pool.map(lambda path: self._fill_one(path, params, settings, deadline), todo))

    def _fill_one(self, path: Path, params: dict | None, settings: str, deadline: float | None) -> bool:
        if deadline is not None and time.monotonic() > deadline:
            return False
        recorder = _KeyRecorder(self)
        try:
            ocr_page(path, params, recorder)
        except Exception:  # an unreadable picture costs speed only: the job reads it itself and says why
            return False
        self._store(self._marker(path, settings), recorder.key)
        return recorder.stored

    def _filled(self, path: Path, settings: str) -> bool:
        try:
            key = self._marker(path, settings).read_text("utf-8")
        except OSError:
            return False
        return (self.directory / f"{key}.json").is_file()

    def _marker(self, path: Path, settings: str) -> Path:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:32]
        return self.directory / "files" / f"{digest}-{settings}"

    def _read_disk(self, key: str) -> OcrResult | None:
        if self.directory is None:
            return None
        try:
            return OcrResult.from_json(json.loads((self.directory / f"{key}.json").read_text("utf-8")))
        except (OSError, ValueError, TypeError):
            return None  # absent or damaged: OCR runs again and rewrites it

    def _write_disk(self, key: str, result: OcrResult) -> None:
        if self.directory is None or not self._disk_writable:
            return
        try:
            self._store(self.directory / f"{key}.json", json.dumps(result.to_json()))
        except OSError:
            self._disk_writable = False  # a read-only view (a scoring job's): later results stay in memory

    @staticmethod
    def _store(path: Path, text: str) -> None:
        from evaluator.dataset.store import atomic_write

        # In one step, so parallel workers never read half a file; readable by the jobs' user too.
        atomic_write(path, text.encode("utf-8"))


class _KeyRecorder:
    """Stands in for the cache during a fill: notes the key :func:`ocr_page` derives and whether it read."""

    def __init__(self, cache: OcrCache):
        self.cache, self.key, self.stored = cache, "", False

    def get(self, key: str) -> OcrResult | None:
        self.key = key
        return self.cache.get(key)

    def put(self, key: str, result: OcrResult) -> None:
        self.cache.put(key, result)
        self.stored = True


def _fill_settings(params: dict | None) -> str:
    """Digest of everything besides the pixels a reading depends on (a superset of the key's settings)."""
    settings = visual_params(params)
    parts = [ocr_engine(), language_data_digest(settings["ocr_lang"]), settings]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


DEFAULT_CACHE = OcrCache()


# --- the engine ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _tesserocr() -> ModuleType | None:
    """The ``tesserocr`` module, or None when it cannot be imported (then the tesseract program runs)."""
    try:
        import tesserocr
    except ImportError:
        return None
    return tesserocr


@functools.lru_cache(maxsize=1)
def ocr_engine() -> str:
    """Which OCR engine this process reads with, e.g. ``tesserocr 2.13.0 / tesseract 5.5.4``.

    Part of every cache key, and worth recording beside scores: another engine version may read
    a few words differently.
    """
    tesserocr = _tesserocr()
    if tesserocr is not None:
        return f"tesserocr {tesserocr.__version__} / {tesserocr.tesseract_version().splitlines()[0]}"
    try:
        return f"tesseract {pytesseract.get_tesseract_version()}"
    except pytesseract.TesseractNotFoundError:
        raise MetricError("tesseract is not installed (apt-get install tesseract-ocr)") from None


def tessdata_dir(lang: str) -> str:
    """The first folder holding every ``<lang>.traineddata`` that ``lang`` ("eng", "eng+deu") names."""
    candidates = [os.environ["TESSDATA_PREFIX"]] if os.environ.get("TESSDATA_PREFIX") else []
    candidates += TESSDATA_DIRS
    for folder in candidates:
        if all((Path(folder) / f"{part}.traineddata").is_file() for part in lang.split("+")):
            return folder.rstrip("/") + "/"
    raise MetricError(f"no Tesseract language data for {lang!r} in {', '.join(candidates)} "
                      "(apt-get install tesseract-ocr)")


class _EnginePool:
    """Loaded tesserocr engines by language. A thread borrows one for a picture and gives it back,
    so threads never share an engine and a new thread reuses an idle one instead of loading again."""

    def __init__(self):
        self._idle: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def borrow(self, lang: str) -> Iterator[Any]:
        with self._lock:
            idle = self._idle.setdefault(lang, [])
            api = idle.pop() if idle else None
        if api is None:
            api = self._load(lang)
        try:
            yield api
        finally:
            api.Clear()  # drop the picture and its results; the loaded model stays
            with self._lock:
                self._idle[lang].append(api)

    @staticmethod
    def _load(lang: str) -> Any:
        tesserocr = _tesserocr()
        try:
            return tesserocr.PyTessBaseAPI(path=tessdata_dir(lang), lang=lang)
        except RuntimeError as exc:
            raise MetricError(f"tesseract cannot load language {lang!r}: {exc}") from None


_ENGINES = _EnginePool()


# --- reading ------------------------------------------------------------------------------------

def ocr_page(img: ImageLike, params: dict | None = None, cache: OcrCache | None = None) -> OcrResult:
    """Words on the picture, from the cache when this picture was read before with the same settings."""
    image = load_image(img)
    settings = visual_params(params)
    config = (settings["ocr_lang"], int(settings["ocr_psm"]), float(settings["ocr_min_conf"]),
              int(settings["ocr_dpi"]))
    cache = DEFAULT_CACHE if cache is None else cache
    key = f"{image_key(image)}-{_settings_key(config)}"
    result = cache.get(key)
    if result is None:
        result = _run_tesseract(image, *config)
        cache.put(key, result)
    return result


def _settings_key(config: tuple) -> str:
    """A file-name-safe digest of the engine, its language data and the OCR settings."""
    parts = [ocr_engine(), language_data_digest(config[0]), *config]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def language_data_digest(lang: str) -> str:
    """Short digest of the ``.traineddata`` files read for ``lang`` (other data, other words);
    empty when they are not where :func:`tessdata_dir` looks (the tesseract program may still find them)."""
    try:
        folder = Path(tessdata_dir(lang))
    except MetricError:
        return ""
    digest = hashlib.sha256()
    for part in lang.split("+"):
        digest.update((folder / f"{part}.traineddata").read_bytes())
    return digest.hexdigest()[:16]


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


def _run_tesseract(image: Image.Image, lang: str, psm: int, min_conf: float, dpi: int) -> OcrResult:
    # Tesseract's OpenMP threads make it 4-6x slower on two cores; set at call time so
    # importing this module changes nothing (the tesserocr wheel is built without OpenMP).
    os.environ["OMP_THREAD_LIMIT"] = "1"
    gray = image.convert("L")
    if _tesserocr() is not None:
        data = _read_in_process(gray, lang, psm, dpi)
    else:
        data = _read_with_program(gray, lang, psm, dpi)
    return OcrResult(tuple(_words_from_data(data, min_conf)))


def _read_in_process(gray: Image.Image, lang: str, psm: int, dpi: int) -> dict[str, list]:
    with _ENGINES.borrow(lang) as api:
        api.SetPageSegMode(psm)
        # Raw pixels with a stated resolution: nothing depends on how an image file is encoded.
        api.SetImageBytes(gray.tobytes(), gray.width, gray.height, 1, gray.width)
        api.SetSourceResolution(dpi)
        if not api.Recognize(timeout=TESSERACT_TIMEOUT_S * 1000):
            raise MetricError(f"tesseract failed or did not finish within {TESSERACT_TIMEOUT_S} s")
        return _parse_tsv(api.GetTSVText(0))


def _parse_tsv(tsv: str) -> dict[str, list]:
    """Tesseract's TSV rows as columns, shaped like ``pytesseract.image_to_data(output_type=DICT)``."""
    names = ("level", "page_num", "block_num", "par_num", "line_num", "word_num",
             "left", "top", "width", "height", "conf", "text")
    data: dict[str, list] = {name: [] for name in names}
    for row in tsv.splitlines():
        cells = row.split("\t", len(names) - 1)
        if len(cells) == len(names) and cells[0].isdigit():  # no header row, but be sure
            for name, cell in zip(names, cells, strict=True):
                data[name].append(cell)
    return data


def _read_with_program(gray: Image.Image, lang: str, psm: int, dpi: int) -> dict[str, list]:
    gray.format = "BMP"  # pytesseract writes the temporary file in this format: no PNG compression cost
    try:
        return pytesseract.image_to_data(gray, lang=lang, config=f"--psm {psm} --dpi {dpi}",
                                         timeout=TESSERACT_TIMEOUT_S, output_type=pytesseract.Output.DICT)
    except pytesseract.TesseractNotFoundError:
        raise MetricError("tesseract is not installed (apt-get install tesseract-ocr)") from None
    except pytesseract.TesseractError as exc:
        raise MetricError(f"tesseract failed: {exc.message.strip() or exc.status}") from None
    except RuntimeError as exc:  # pytesseract's way of saying the timeout expired
        raise MetricError(f"tesseract did not finish within {TESSERACT_TIMEOUT_S} s ({exc})") from None


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

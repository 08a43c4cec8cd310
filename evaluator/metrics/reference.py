"""A checkpoint's reference picture as the visual metrics use it, and the folder that keeps it between runs.

Every submission to a task is scored against the same reference checkpoints, and about half of a
checkpoint's visual metrics is work on the reference alone: decoding its PNG, its OCR text and text
blocks, scaling it onto the common canvas, its colour histogram, smaller copies, component grid and
palette. A :class:`Reference` derives each of these once, when first asked; :class:`KeptReferences`
keeps them in a folder beside the reference OCR readings (``score --ocr-cache``), one file per
reference picture (by a digest of its bytes), visual settings and canvas size, so that a later job
reads them instead of the picture.

Like the OCR readings beside them, the files are trusted: scoring jobs run untrusted pages and get the
folder read-only, and the trusted step that fills the OCR cache writes them (:meth:`KeptReferences.fill`,
for the canvas of the picture's own size: a generated screenshot has its reference's size). A job that
may write (no sandbox) keeps what it derived itself. Everything the values depend on besides the picture
is in the key: the visual settings, the canvas size, the OCR engine and its language data, and (in the
folder's name) a digest of the metrics' code and the numeric libraries' versions, so any change to them
leaves old files unread; a fill removes the folders of other code versions once no one has written to
them for a day. A file that cannot be read, or does not hold what its name promises, is ignored, and
written again where the folder is writable.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import shutil
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from evaluator.metrics import ImageLike, load_image

FOLDER = "reference-sides"  # inside the OCR cache folder
STALE_VERSION_S = 86400.0  # a code version's folder nobody wrote to for this long is removed by a fill
PICTURE_VALUES = ("text", "blocks")  # the same on any canvas; every other value is of one canvas
_MAGIC = b"iwr-reference-side 1\n"  # then the rest's SHA-256 (hex) and a newline, a JSON line, the arrays


class Reference:
    """A reference picture for one checkpoint's metrics: decoded only when a value derived from it is not at hand.

    ``values`` are what the metrics derive from the picture alone under ``settings`` (the visual settings),
    each computed once: its OCR "text" and "blocks", and its side of the common canvas (the memo
    :class:`evaluator.metrics.visual.Canvas` fills: its scaled pixels, histograms, smaller copies, ...),
    which holds for one canvas size (:meth:`canvas_values` starts afresh on another).
    """

    def __init__(self, picture: ImageLike, settings: dict[str, Any], size: tuple[int, int] | None = None,
                 values: dict[str, Any] | None = None, kept: KeptReferences | None = None, digest: str | None = None):
        self._picture, self._size = picture, size
        self._image = picture if isinstance(picture, Image.Image) and picture.mode == "RGB" else None
        self.settings = settings
        self.values: dict[str, Any] = {} if values is None else values
        self._kept, self._digest = kept, digest
        self._canvas = size if kept is not None else None  # the canvas the values are of (None: not placed yet)
        self._read_names = frozenset(self.values)  # what came from the folder: nothing new, nothing to write

    @property
    def image(self) -> Image.Image:
        """The picture, RGB (decoded now if it was not)."""
        if self._image is None:
            self._image = load_image(self._picture)
        return self._image

    @property
    def size(self) -> tuple[int, int]:
        return self._size if self._size is not None else self.image.size

    @property
    def was_kept(self) -> bool:
        """Whether its values came from the folder."""
        return bool(self._read_names)

    def text(self, cache) -> str:
        """Its OCR text (``cache``: where OCR readings are looked up)."""
        from evaluator.metrics.ocr import ocr_text

        return self._value("text", lambda: ocr_text(self.image, self.settings, cache))

    def blocks(self, cache) -> list:
        """Its text blocks from OCR lines (:func:`evaluator.metrics.blocks.blocks_from_image`)."""
        from evaluator.metrics.blocks import blocks_from_image

        return self._value("blocks", lambda: blocks_from_image(self.image, self.settings, cache))

    def canvas_values(self, canvas: tuple[int, int]) -> dict[str, Any]:
        """Its values on a canvas of ``canvas`` (width, height): the memo of its side, which the metrics fill;
        those kept for that canvas when the folder has them."""
        canvas = tuple(canvas)
        if self._canvas is None:
            self._canvas = canvas
        elif canvas != self._canvas:
            kept = self._kept.read(self._digest, self.settings, canvas) if self._kept is not None else None
            self.values = kept or {k: v for k, v in self.values.items() if k in PICTURE_VALUES}
            self._canvas, self._read_names = canvas, frozenset(kept or ())
        return self.values

    def keep(self) -> bool:
        """Write its values to the folder it came from when it derived new ones; whether it wrote."""
        if self._kept is None or self._canvas is None or self.values.keys() <= self._read_names:
            return False
        return self._kept.write(self._digest, self.settings, self._canvas, self.values)

    def _value(self, name: str, compute):
        if name not in self.values:
            self.values[name] = compute()
        return self.values[name]


class KeptReferences:
    """Reference values kept in ``directory``/reference-sides/<code version>/ (see the module docstring)."""

    def __init__(self, directory: str | Path):
        self.root = Path(directory) / FOLDER
        self._writable = True  # False once a write failed: a scoring job's read-only view

    def open(self, path: str | Path, settings: dict) -> Reference:
        """The reference picture at ``path``, with the values kept for the canvas of its own size when there are
        any; else decoded now, so that an unreadable picture is found here, before anything else."""
        data = Path(path).read_bytes()
        size = _png_size(data)
        if size is None:
            return Reference(load_image(path), settings)  # raises the decoder's own reason
        digest = hashlib.sha256(data).hexdigest()[:32]
        values = self.read(digest, settings, size)
        if values is None:
            return Reference(load_image(path), settings, size, None, self, digest)
        return Reference(path, settings, size, values, self, digest)

    def read(self, digest: str, settings: dict, canvas: tuple[int, int]) -> dict[str, Any] | None:
        """The values kept for this picture, settings and canvas, or None (absent, damaged, or another's)."""
        try:
            key = entry_key(digest, settings, canvas)
            return _unpack(self._path(key).read_bytes(), key)
        except Exception:  # noqa: BLE001 - whatever is wrong with a kept file, its values are derived again
            return None

    def write(self, digest: str, settings: dict, canvas: tuple[int, int], values: dict[str, Any]) -> bool:
        """Keep ``values`` (those of a kind a file holds); False where the folder cannot be written."""
        if not self._writable:
            return False
        from evaluator.dataset.store import atomic_write

        try:
            key = entry_key(digest, settings, canvas)
            atomic_write(self._path(key), _pack(values, key))  # in one step: parallel writers never mix
        except OSError:
            self._writable = False  # a scoring job's read-only view: later values stay in memory
            return False
        return True

    def fill(self, paths: Iterable[str | Path], settings: dict, cache, deadline: float | None = None) -> int:
        """Derive and keep the values of every picture in ``paths`` for the canvas of its own size unless they are
        kept already; returns how many were derived now. ``cache`` holds the pictures' OCR readings (the
        trusted OCR cache, filled first). No new picture is started after ``deadline`` (``time.monotonic()``)."""
        self.remove_stale_versions()
        derived = 0
        for path in dict.fromkeys(Path(p) for p in paths):
            if deadline is not None and time.monotonic() > deadline:
                break
            derived += self._fill_one(path, settings, cache)
        return derived

    def _fill_one(self, path: Path, settings: dict, cache) -> bool:
        try:
            if self._intact(path, settings):
                return False
            from evaluator.metrics.checkpoint import derive_reference  # the metrics' modules, only when needed

            reference = self.open(path, settings)
            derive_reference(reference, cache)
        except Exception:  # noqa: BLE001 - an unreadable picture costs speed only: the job says why
            return False
        return reference.keep()

    def _intact(self, path: Path, settings: dict) -> bool:
        """Whether the picture's values are kept, in a file that is whole (checked without unpacking it: the fill
        checks every reference before each job, and needs none of the metrics' modules for that)."""
        data = path.read_bytes()
        size = _png_size(data)
        if size is None:
            return False
        key = entry_key(hashlib.sha256(data).hexdigest()[:32], settings, size)
        try:
            _checked_header(self._path(key).read_bytes(), key)
        except (OSError, ValueError):
            return False
        return True

    def remove_stale_versions(self, now: float | None = None) -> None:
        """Remove the folders of other code versions that nobody has written to for :data:`STALE_VERSION_S`."""
        now = time.time() if now is None else now
        try:
            folders = [p for p in self.root.iterdir() if p.is_dir() and p.name != code_version()]
        except OSError:
            return
        for folder in folders:
            try:
                stale = now - folder.stat().st_mtime > STALE_VERSION_S
            except OSError:
                continue
            if stale:
                shutil.rmtree(folder, ignore_errors=True)

    def _path(self, key: str) -> Path:
        return self.root / code_version() / f"{key}.bin"


def entry_key(digest: str, settings: dict, canvas: tuple[int, int]) -> str:
    """The file name of a picture's values: its bytes' digest, the canvas size, the visual settings, and the OCR
    engine and language data its text and blocks were read with."""
    from evaluator.metrics.ocr import language_data_digest, ocr_engine

    parts = [digest, list(canvas), settings, ocr_engine(), language_data_digest(str(settings["ocr_lang"]))]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Digest of the code the kept values come from: this package's modules and the numeric libraries' versions."""
    import PIL
    import scipy

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"numpy {np.__version__} pillow {PIL.__version__} scipy {scipy.__version__}".encode())
    return digest.hexdigest()[:16]


def _png_size(data: bytes) -> tuple[int, int] | None:
    """The picture's size from its header alone; None when the header cannot be read."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError, ValueError):
        return None


# --- the file: a magic line, a checksum line, a JSON line (what is where), the arrays' bytes compressed ---

def _pack(values: dict[str, Any], key: str) -> bytes:
    header: dict[str, Any] = {"key": key, "text": None, "blocks": None, "floats": {}, "arrays": []}
    arrays = []
    for name, value in sorted(values.items()):
        if name == "text" and isinstance(value, str):
            header["text"] = value
        elif name == "blocks" and isinstance(value, list):
            header["blocks"] = [[b.text, list(b.box), list(b.color), list(b.bg), [list(p) for p in b.parts]]
                                for b in value]
        elif isinstance(value, float):
            header["floats"][name] = value
        else:
            parts = value if isinstance(value, tuple) else (value,)
            if not parts or not all(isinstance(p, np.ndarray) and p.dtype.kind in "uif" for p in parts):
                continue  # of a kind no file holds: derived again where needed
            for index, part in enumerate(parts):
                header["arrays"].append([name, index if isinstance(value, tuple) else None, part.dtype.str,
                                         list(part.shape)])
                arrays.append(np.ascontiguousarray(part).tobytes())
    body = json.dumps(header).encode() + b"\n" + zlib.compress(b"".join(arrays), 1)
    return _MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _checked_header(data: bytes, key: str) -> tuple[dict[str, Any], bytes]:
    """The file's header and compressed arrays; ValueError unless it is whole and kept under ``key``."""
    if not data.startswith(_MAGIC):
        raise ValueError("not a kept reference")
    checksum, _, body = data[len(_MAGIC):].partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != checksum:
        raise ValueError("a damaged file")
    line, _, blob = body.partition(b"\n")
    header = json.loads(line)
    if not isinstance(header, dict) or header.get("key") != key:
        raise ValueError("kept under another name")
    return header, blob


def _unpack(data: bytes, key: str) -> dict[str, Any]:
    from evaluator.metrics.blocks import Block

    header, blob = _checked_header(data, key)
    values: dict[str, Any] = {name: float(value) for name, value in header["floats"].items()}
    if header["text"] is not None:
        values["text"] = str(header["text"])
    if header["blocks"] is not None:
        values["blocks"] = [Block(str(text), tuple(map(float, box)), tuple(map(int, color)), tuple(map(int, bg)),
                                  tuple(tuple(map(float, part)) for part in parts))
                            for text, box, color, bg, parts in header["blocks"]]
    raw, offset = zlib.decompress(blob), 0
    for name, index, dtype, shape in header["arrays"]:
        kind = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        array = np.frombuffer(raw, kind, count, offset).reshape(shape)  # read-only: the metrics never write
        offset += count * kind.itemsize
        if index is None:
            values[name] = array
        else:
            values[name] = (*values.get(name, ()), array)
    if offset != len(raw):
        raise ValueError("kept arrays do not fill the file")
    return values

"""What a file in a task folder really is (by its first bytes) and how big it may be.

Crawled assets keep whatever extension the site gave them, so the content decides what
a file is; the extension must still be one the page server knows how to label.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024

# Enough to see past an XML declaration and a licence comment at the top of an SVG.
HEAD_BYTES = 4096

# Extension (lower case, no dot) -> the content kind it promises.
ASSET_EXTENSIONS = {
    "png": "png", "jpg": "jpeg", "jpeg": "jpeg", "gif": "gif", "webp": "webp", "svg": "svg",
    "ico": "ico", "bmp": "bmp", "avif": "avif", "mp4": "mp4", "webm": "webm",
}
RASTER_KINDS = {"png", "jpeg", "gif", "webp", "bmp", "ico", "avif"}


@dataclass(frozen=True)
class Limits:
    """Size limits for the files of a task set (bytes unless the name says otherwise).

    The defaults leave ample room for the official data (1080p videos of about 35 s,
    crawled images) while refusing files no benchmark task needs.
    """

    jsonl_bytes: int = 64 * MIB
    line_bytes: int = 4 * MIB
    video_bytes: int = 512 * MIB
    asset_bytes: int = 64 * MIB
    assets_total_bytes: int = 512 * MIB
    checkpoint_bytes: int = 32 * MIB
    stitched_bytes: int = 64 * MIB
    json_bytes: int = 8 * MIB
    image_pixels: int = 100_000_000
    max_problems: int = 1000


# Command-line names for the limits: name -> (Limits field, unit multiplier, unit label).
LIMIT_OPTIONS = {
    "jsonl": ("jsonl_bytes", MIB, "MiB"),
    "line": ("line_bytes", MIB, "MiB"),
    "video": ("video_bytes", MIB, "MiB"),
    "asset": ("asset_bytes", MIB, "MiB"),
    "assets_total": ("assets_total_bytes", MIB, "MiB"),
    "checkpoint": ("checkpoint_bytes", MIB, "MiB"),
    "stitched": ("stitched_bytes", MIB, "MiB"),
    "json": ("json_bytes", MIB, "MiB"),
    "image_pixels": ("image_pixels", 1_000_000, "megapixels"),
    "max_problems": ("max_problems", 1, "problems"),
}


def regular_file_size(path: Path, follow: bool = False) -> int | None:
    """Size of a regular file (not a symlink unless ``follow``); None for anything else.

    Reading a FIFO or a device named like an asset would block or never end, so only
    regular files are ever opened.
    """
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def sniff(head: bytes) -> str | None:
    """The content kind named by a file's first bytes, among those tasks may hold."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] in (b"\x00\x00\x01\x00", b"\x00\x00\x02\x00"):
        return "ico"
    if head[:2] == b"BM" and len(head) >= 26:
        return "bmp"
    if head[4:8] == b"ftyp":
        return "avif" if head[8:12] in (b"avif", b"avis") else "mp4"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    if _looks_like_svg(head):
        return "svg"
    return None


_SVG_PREAMBLE = re.compile(r"\s*(<\?xml.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>)", re.S | re.I)


def _looks_like_svg(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    while match := _SVG_PREAMBLE.match(text):
        text = text[match.end():]
    return text.lstrip()[:4].lower() == "<svg"


def describe(head: bytes) -> str:
    """A short human name for content that is not an accepted kind (for messages)."""
    if not head:
        return "an empty file"
    lowered = head[:512].lstrip().lower()
    known = [
        (head[:2] == b"MZ", "a Windows executable"),
        (head[:4] == b"\x7fELF", "an ELF executable"),
        (head[:4] == b"PK\x03\x04", "a ZIP archive"),
        (head[:2] == b"\x1f\x8b", "a gzip archive"),
        (head[:5] == b"%PDF-", "a PDF document"),
        (head[:4] in (b"wOFF", b"wOF2"), "a web font"),
        (lowered.startswith((b"<!doctype html", b"<html")), "an HTML document"),
    ]
    for matched, name in known:
        if matched:
            return name
    return "binary data" if b"\x00" in head else "text"


def kind_label(kind: str) -> str:
    return {"jpeg": "JPEG", "svg": "SVG", "mp4": "MP4", "webm": "WebM", "avif": "AVIF"}.get(kind, kind.upper())


def content_name(kind: str | None, head: bytes) -> str:
    """What a file holds, for messages: "WebM data", "an HTML document"."""
    return f"{kind_label(kind)} data" if kind else describe(head)


def image_size(path: Path, head: bytes) -> tuple[int, int] | None:
    """Pixel size of a raster image without decoding it; None when unreadable."""
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    from PIL import Image  # imported here: loading a dataset must not pay for Pillow

    try:
        with Image.open(path) as image:
            return image.size
    except Image.DecompressionBombError:
        return (1 << 31, 1)  # Pillow refused to even size it: report it as too many pixels
    except Exception:  # any decoder failure means "not a readable image"
        return None


_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def png_complete(path: Path) -> bool:
    """True when a PNG ends with its end chunk: a truncated copy (the usual damage) does not.

    Checking every chunk's checksum would read each screenshot in full for a rarer fault.
    """
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() < len(_PNG_END):
            return False
        handle.seek(-len(_PNG_END), os.SEEK_END)
        return handle.read() == _PNG_END


def human_size(size: float) -> str:
    if size < 1024:
        return f"{int(size)} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            break
    return f"{size:.1f} {unit}"

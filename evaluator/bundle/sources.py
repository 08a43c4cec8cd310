"""Reading a bundle's source, a zip file or a folder, as a list of entries and a way to open each."""

from __future__ import annotations

import os
import re
import stat
import struct
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from evaluator.bundle.model import BundleError, Entry, Limits, mb, show

# Enough bytes to recognise every archive signature below (tar's sits at offset 257).
HEAD_BYTES = 512

_ARCHIVE_MAGIC = (
    (b"PK\x03\x04", "zip"), (b"PK\x05\x06", "zip"), (b"PK\x07\x08", "zip"),
    (b"\x1f\x8b", "gzip"), (b"\x1f\x9d", "compress"), (b"\xfd7zXZ\x00", "xz"),
    (b"7z\xbc\xaf\x27\x1c", "7z"), (b"Rar!\x1a\x07", "rar"), (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"LZIP", "lzip"), (b"MSCF", "cab"),
)


@contextmanager
def open_source(source: Path, limits: Limits):
    """Yields (entries, opener) where opener(entry) returns a binary stream of the entry's bytes."""
    if source.is_dir():
        yield _folder_entries(source, limits), lambda entry: _open_in_folder(source, entry.origin)
        return
    if not source.is_file():
        raise BundleError([f"bundle not found: {show(source.name)}"])
    with _open_zip(source, limits) as zf:
        yield [_zip_entry(info) for info in zf.infolist()], lambda entry: zf.open(entry.origin)


@contextmanager
def _open_zip(source: Path, limits: Limits):
    size = source.stat().st_size
    if size > limits.max_total_bytes:
        raise BundleError([f"bundle file is {mb(size)}; the limit is {mb(limits.max_total_bytes)}"])
    count = _declared_entry_count(source)
    if count is not None and count > limits.max_files:
        # Refused before zipfile builds one object per entry of a hostile archive.
        raise BundleError([f"bundle has {count} entries (files and folders); the limit is {limits.max_files}"])
    try:
        zf = zipfile.ZipFile(source)
    except UnicodeDecodeError:
        raise BundleError(["bundle has a file name marked as UTF-8 that is not valid UTF-8"]) from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise BundleError([_not_a_zip_message(source, exc)]) from None
    with zf:
        yield zf


def _not_a_zip_message(source: Path, exc: Exception) -> str:
    with source.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    kind = archive_kind(head)
    if kind and kind != "zip":
        return f"bundle is a {kind} archive, not a zip file; upload a .zip"
    if kind == "zip" or zipfile.is_zipfile(source):
        detail = f" ({exc})" if isinstance(exc, zipfile.BadZipFile) else ""  # OSError text may hold server paths
        return f"bundle is a corrupt zip file{detail}"
    return f"bundle is not a zip file (or a folder): {_looks_like(head)}"


def _looks_like(head: bytes) -> str:
    """What the start of a file that is not a zip suggests, for the refusal message."""
    if not head:
        return "the file is empty"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "it is an HTML page; put it in <task id>/index.html and zip the folders"
    if head.startswith(b"%PDF"):
        return "it is a PDF document"
    shown = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in head[:16])
    return f"its first bytes are {shown!r}"


def _declared_entry_count(path: Path) -> int | None:
    """Entry count from the zip's end-of-central-directory record (zip64 aware), or None."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - 65_557))  # the record plus the longest possible comment
        tail = fh.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    count = struct.unpack("<H", tail[at + 10:at + 12])[0]
    if count != 0xFFFF:
        return count
    at64 = tail.rfind(b"PK\x06\x06", 0, at)
    if at64 < 0 or at - at64 < 40:
        return None
    return struct.unpack("<Q", tail[at64 + 32:at64 + 40])[0]


def _zip_entry(info: zipfile.ZipInfo) -> Entry:
    name, name_ok = info.orig_filename, True
    if not info.flag_bits & 0x800:
        # Not flagged UTF-8: zipfile decoded it as cp437; recover the bytes and insist on UTF-8
        # (Linux and macOS tools write UTF-8 without setting the flag).
        raw = name.encode("cp437")
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            name, name_ok = raw.decode("utf-8", "backslashreplace"), False
    return Entry(name, _zip_kind(info, name), info.file_size, info.compress_size, info, name_ok)


def _zip_kind(info: zipfile.ZipInfo, name: str) -> str:
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "symlink"
    if name.endswith(("/", "\\")) or stat.S_ISDIR(mode):
        return "dir"
    if mode and not stat.S_ISREG(mode) and stat.S_IFMT(mode):
        return "special"
    return "file"


def _folder_entries(root: Path, limits: Limits) -> list[Entry]:
    """Every entry under ``root`` without following symlinks; stops early past the file limit."""
    entries: list[Entry] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(root / rel if rel else root) as scan:
            for item in sorted(scan, key=lambda item: item.name):
                entry = _folder_entry(item, f"{rel}/{item.name}" if rel else item.name)
                entries.append(entry)
                if len(entries) > limits.max_files:
                    return entries  # enough to refuse it; do not walk the rest
                if entry.kind == "dir":
                    pending.append(entry.origin)
    return entries


def _folder_entry(item: os.DirEntry, rel: str) -> Entry:
    info = item.stat(follow_symlinks=False)
    mode = info.st_mode
    kind = "symlink" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file"
    if kind == "file" and not stat.S_ISREG(mode):
        kind = "special"
    try:
        rel.encode("utf-8")
        name_ok = True
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        name_ok = False
    shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return Entry(shown if not name_ok else rel, kind, info.st_size if kind == "file" else 0, None, rel, name_ok)


def _open_in_folder(root: Path, rel: str) -> BinaryIO:
    """Open root/rel for reading, refusing a symlink at every level (the folder may change under us)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        raise OSError(f"{rel} is no longer a regular file")
    return os.fdopen(file_fd, "rb")


def archive_kind(head: bytes) -> str | None:
    for magic, kind in _ARCHIVE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[257:262] == b"ustar":
        return "tar"
    if re.match(rb"BZh[1-9]1AY&SY", head):
        return "bzip2"
    return None

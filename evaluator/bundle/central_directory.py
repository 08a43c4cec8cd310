"""The zip's central directory measured from its end record, before :mod:`zipfile` parses it.

``zipfile.ZipFile`` builds one object per central-directory record, however many entries the
end record declares, so a small archive declaring one entry can still hold tens of thousands of
records. :func:`central_directory_problem` walks the records' fixed headers (46 bytes each, the
names skipped unread) and stops as soon as there are more than the limit allows.
"""

from __future__ import annotations

import struct
from pathlib import Path

_END = b"PK\x05\x06"
_END64 = b"PK\x06\x06"
_RECORD = b"PK\x01\x02"
_END_SIZE = 22
_LOCATOR_SIZE = 20
_RECORD_SIZE = 46
_TAIL_BYTES = _END_SIZE + 0xFFFF  # the end record plus the longest possible comment


def _end_record(path: Path) -> tuple[int, int, int] | None:
    """(declared entries, central directory size, where it starts) from the end record, or None."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        start = max(0, size - _TAIL_BYTES)
        fh.seek(start)
        tail = fh.read()
    at = tail.rfind(_END)
    if at < 0 or len(tail) - at < _END_SIZE:
        return None
    count, cd_size = struct.unpack("<HI", tail[at + 10:at + 16])
    end_at = start + at
    if count == 0xFFFF or cd_size == 0xFFFFFFFF:  # zip64: the real values are in the zip64 end record
        at64 = tail.rfind(_END64, 0, max(0, at - _LOCATOR_SIZE + 4))
        if at64 < 0 or at - at64 < 56:
            return None
        count, cd_size = struct.unpack("<QQ", tail[at64 + 32:at64 + 48])
        end_at = start + at64
    return count, cd_size, end_at - cd_size


def central_directory_problem(path: Path, max_entries: int) -> str | None:
    """Why the archive's central directory is refused (too many records, or not what the end
    record declares), or None; a file without a readable end record is left to zipfile to judge."""
    found = _end_record(path)
    if found is None:
        return None
    declared, cd_size, cd_start = found
    if declared > max_entries:
        return f"bundle has {declared} entries (files and folders); the limit is {max_entries}"
    if cd_start < 0 or cd_size < declared * _RECORD_SIZE:
        return "bundle is a corrupt zip file (its central directory is smaller than it declares)"
    records = _count_records(path, cd_start, cd_size, max_entries + 1)
    if records > max_entries:
        return (f"bundle's central directory holds more than {max_entries} entries (files and folders), "
                f"the limit, though it declares {declared}")
    if records != declared:
        return f"bundle is a corrupt zip file (its central directory holds {records} entries, not {declared})"
    return None


def _count_records(path: Path, start: int, size: int, stop_at: int) -> int:
    """Central-directory records between ``start`` and ``start + size``, counting up to ``stop_at``."""
    count, offset = 0, 0
    with path.open("rb") as fh:
        fh.seek(start)
        while offset + _RECORD_SIZE <= size and count < stop_at:
            header = fh.read(_RECORD_SIZE)
            if len(header) < _RECORD_SIZE or header[:4] != _RECORD:
                break
            name, extra, comment = struct.unpack("<HHH", header[28:34])
            skip = name + extra + comment
            fh.seek(skip, 1)
            offset += _RECORD_SIZE + skip
            count += 1
    return count

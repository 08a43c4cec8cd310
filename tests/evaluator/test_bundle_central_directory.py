"""The zip's central directory is measured from its end record before zipfile builds its entries."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest

from evaluator.bundle import BundleError, Limits, extract_bundle, inspect_bundle
from evaluator.bundle.central_directory import central_directory_problem


def write_zip(path, members: dict[str, bytes], declared: int | None = None, prefix: bytes = b""):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = bytearray(buffer.getvalue())
    if declared is not None:
        at = data.rfind(b"PK\x05\x06")
        struct.pack_into("<HH", data, at + 8, declared, declared)
    path.write_bytes(prefix + bytes(data))
    return path


def test_an_honest_zip_passes(tmp_path):
    path = write_zip(tmp_path / "ok.zip", {"101/index.html": b"<p>x</p>", "102/index.html": b"<p>y</p>"})
    assert central_directory_problem(path, 5000) is None


def test_a_zip_with_data_before_it_passes(tmp_path):
    """Self-extracting archives carry a stub before the zip: offsets come from the end record."""
    path = write_zip(tmp_path / "sfx.zip", {"101/index.html": b"<p>x</p>"}, prefix=b"#!stub\n" * 100)
    assert central_directory_problem(path, 5000) is None


def test_more_records_than_declared_are_counted_without_zipfile(tmp_path, monkeypatch):
    path = write_zip(tmp_path / "evil.zip", {f"a/{n}": b"" for n in range(60_000)}, declared=1)
    assert path.stat().st_size > 4_000_000
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: pytest.fail("zipfile parsed the archive"))
    problem = central_directory_problem(path, 5000)
    assert problem and "more than 5000 entries" in problem and "declares 1" in problem
    assert any("more than 5000 entries" in text for text in inspect_bundle(path, {"101"}, Limits()).problems)
    with pytest.raises(BundleError, match="more than 5000 entries"):
        extract_bundle(path, tmp_path / "out", {"101"}, Limits())


def test_a_count_that_disagrees_with_the_records_is_refused(tmp_path):
    path = write_zip(tmp_path / "odd.zip", {"101/index.html": b"x", "102/index.html": b"y"}, declared=3)
    assert "corrupt" in central_directory_problem(path, 5000)


def test_a_file_without_an_end_record_is_left_to_zipfile(tmp_path):
    path = tmp_path / "not.zip"
    path.write_bytes(b"plain text, not an archive")
    assert central_directory_problem(path, 5000) is None

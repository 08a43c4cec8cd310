"""Tests for bundle intake (evaluator.bundle): safe extraction, rejections, page post-processing."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

from evaluator.bundle import (
    ASSETS_URL_PREFIX,
    MAX_REPORTED_PROBLEMS,
    BundleError,
    Limits,
    decode_page,
    extract_bundle,
    inspect_bundle,
    make_bundle_zip,
    prepare_html,
    read_page,
    validate_bundle,
)

TASKS = {"1", "2", "3"}
PAGE = b"<!DOCTYPE html><html><body><p>hello</p></body></html>"


class Area:
    """A sandbox: dest sits three folders deep beside a sentinel, so escapes are visible."""

    def __init__(self, tmp_path: Path):
        self.top = tmp_path / "area"
        self.outer = self.top / "a" / "b"
        self.outer.mkdir(parents=True)
        self.sentinel = self.outer / "sentinel.txt"
        self.sentinel.write_text("keep me")
        self.dest = self.outer / "dest"
        self.inputs = tmp_path / "inputs"
        self.inputs.mkdir()

    def files(self) -> set[Path]:
        return {path for path in self.top.rglob("*") if not path.is_dir()}

    def assert_untouched(self) -> None:
        """Nothing exists but the sentinel, and dest is an empty folder."""
        assert self.files() == {self.sentinel}
        assert self.sentinel.read_text() == "keep me"
        assert not self.dest.exists() or not any(self.dest.iterdir())

    def zip(self, members: list, name: str = "bundle.zip") -> Path:
        """Write members (name or ZipInfo, bytes) as they are, hostile names included."""
        path = self.inputs / name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns about duplicate names
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
                for member, data in members:
                    zf.writestr(member, data)
        return path

    def rejected(self, source: Path, limits: Limits = Limits(), keys: set[str] = TASKS) -> list[str]:
        """Problems raised by extract_bundle, after checking nothing was left anywhere."""
        with pytest.raises(BundleError) as caught:
            extract_bundle(source, self.dest, keys, limits)
        self.assert_untouched()
        assert validate_bundle(source, keys, limits) == caught.value.problems
        return caught.value.problems


@pytest.fixture
def area(tmp_path: Path) -> Area:
    return Area(tmp_path)


def symlink_info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def patch_bytes(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite a stored name in place (local header and central directory alike)."""
    data = path.read_bytes()
    assert data.count(old) == 2 and len(old) == len(new)
    path.write_bytes(data.replace(old, new))


def has(problems: list[str], *fragments: str) -> bool:
    return any(all(fragment in problem for fragment in fragments) for problem in problems)


# ---------------------------------------------------------------- accepted bundles


def test_it_extracts_pages_and_reports_missing_and_unmatched(area):
    """Pages map to task keys; absent tasks are missing and foreign folders unmatched, neither fatal."""
    source = area.zip([("1/index.html", PAGE), ("2/index.html", PAGE), ("extra/index.html", PAGE)])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert bundle.pages == {"1": area.dest / "1" / "index.html", "2": area.dest / "2" / "index.html"}
    assert bundle.pages["1"].read_bytes() == PAGE
    assert bundle.missing == ["3"]
    assert bundle.unmatched == ["extra"]
    assert bundle.root == area.dest


def test_it_keeps_sibling_files_next_to_the_page(area):
    """Files a page references relatively are extracted beside it."""
    source = area.zip([("1/index.html", PAGE), ("1/css/site.css", b"p{}"), ("1/logo.png", b"\x89PNG")])
    extract_bundle(source, area.dest, TASKS)
    assert (area.dest / "1" / "css" / "site.css").read_bytes() == b"p{}"
    assert (area.dest / "1" / "logo.png").read_bytes() == b"\x89PNG"


def test_it_strips_one_folder_wrapping_the_whole_bundle(area):
    """mymodel/1/index.html is read as 1/index.html, with a warning saying so."""
    source = area.zip([("mymodel/", b""), ("mymodel/1/index.html", PAGE), ("mymodel/2/index.html", PAGE)])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert sorted(bundle.pages) == ["1", "2"]
    assert (area.dest / "1" / "index.html").is_file()
    assert has(bundle.warnings, "mymodel/")


def test_it_does_not_strip_a_top_level_task_folder(area):
    """A single top-level folder named after a task is a task, not a wrapper."""
    source = area.zip([("1/index.html", PAGE), ("1/2/index.html", PAGE)])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert list(bundle.pages) == ["1"]
    assert bundle.missing == ["2", "3"]


def test_it_ignores_operating_system_metadata(area):
    """__MACOSX folders and .DS_Store files neither count as a wrapper nor get extracted."""
    source = area.zip([
        ("mymodel/1/index.html", PAGE),
        ("__MACOSX/mymodel/1/._index.html", b"junk"),
        ("mymodel/.DS_Store", b"junk"),
        (symlink_info("__MACOSX/mymodel/._link"), b"x"),
    ])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert list(bundle.pages) == ["1"]
    assert not (area.dest / "__MACOSX").exists()
    assert has(bundle.warnings, "operating-system metadata")


def test_it_hints_where_a_page_should_have_been(area):
    """A task folder without index.html, or a loose 2.html, gets a warning naming what was found."""
    source = area.zip([("1/index.html", PAGE), ("3/page.html", PAGE), ("2.html", PAGE)])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert bundle.missing == ["2", "3"]
    assert has(bundle.warnings, "task 3", "page.html")
    assert has(bundle.warnings, "2.html", "2/index.html")


def test_it_warns_about_pages_that_are_not_utf8(area):
    """Undecodable bytes are a warning naming the task, not a rejection."""
    source = area.zip([("1/index.html", b"<p>caf\xe9</p>")])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert has(bundle.warnings, "task 1", "not valid UTF-8", "offset 6")


def test_it_accepts_windows_backslash_paths(area):
    """Backslash separators written by some Windows tools are read as folders."""
    source = area.zip([("1\\index.html", PAGE)])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert bundle.pages["1"].read_bytes() == PAGE


def test_it_accepts_utf8_names_stored_without_the_utf8_flag(area):
    """Linux and macOS tools store UTF-8 names unflagged; they are read as UTF-8, not cp437."""
    source = area.zip([("1/index.html", PAGE), ("1/cafXX.png", b"x")])
    patch_bytes(source, b"1/cafXX.png", "1/caf\u00e9.png".encode())
    extract_bundle(source, area.dest, TASKS)
    assert (area.dest / "1" / "caf\u00e9.png").read_bytes() == b"x"


def test_it_copies_a_folder_bundle(area, tmp_path):
    """A folder is copied file by file under the same rules."""
    folder = tmp_path / "folder" / "mymodel"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "index.html").write_bytes(PAGE)
    (folder / "1" / "img").mkdir()
    (folder / "1" / "img" / "a.png").write_bytes(b"png")
    bundle = extract_bundle(folder.parent, area.dest, TASKS)
    assert bundle.pages["1"].read_bytes() == PAGE
    assert (area.dest / "1" / "img" / "a.png").read_bytes() == b"png"


def test_it_reports_everything_without_keeping_files(area):
    """inspect_bundle gives pages, missing and unmatched; validate_bundle finds nothing wrong."""
    source = area.zip([("1/index.html", PAGE), ("x/y.txt", b"")])
    report = inspect_bundle(source, TASKS)
    assert (report.problems, report.pages, report.unmatched, report.missing) == ([], ["1"], ["x"], ["2", "3"])
    assert validate_bundle(source, TASKS) == []
    assert not area.dest.exists()


def test_it_refuses_a_destination_that_is_not_empty(area):
    """Intake only ever fills an empty folder, so cleaning up can never remove foreign files."""
    area.dest.mkdir()
    (area.dest / "old.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        extract_bundle(area.zip([("1/index.html", PAGE)]), area.dest, TASKS)
    assert (area.dest / "old.txt").read_text() == "x"


def test_it_refuses_a_destination_inside_the_folder_bundle(tmp_path):
    """Copying a folder into itself would never end."""
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "index.html").write_bytes(PAGE)
    with pytest.raises(ValueError, match="inside the bundle"):
        extract_bundle(tmp_path, tmp_path / "out", TASKS)


# ---------------------------------------------------------------- rejections: names


def test_it_rejects_path_traversal(area):
    """Names climbing out with '..' (slash or backslash) are refused, each named."""
    source = area.zip([
        ("1/index.html", PAGE),
        ("../../evil.html", b"x"),
        ("1/../../../evil2.html", b"x"),
        ("..\\..\\evil3.html", b"x"),
    ])
    problems = area.rejected(source)
    assert has(problems, "../../evil.html", "leaves the bundle")
    assert has(problems, "1/../../../evil2.html", "leaves the bundle")
    assert has(problems, "evil3.html", "leaves the bundle")


def test_it_rejects_absolute_paths(area):
    """Absolute POSIX and drive-letter paths are refused."""
    source = area.zip([("1/index.html", PAGE), ("/tmp/evil.html", b"x"), ("C:/evil.html", b"x")])
    problems = area.rejected(source)
    assert has(problems, "/tmp/evil.html", "absolute paths")
    assert has(problems, "C:/evil.html", "absolute paths")


def test_it_rejects_symlinks_in_a_zip(area):
    """A member with symlink mode is refused, never created."""
    source = area.zip([("1/index.html", PAGE), (symlink_info("1/link.html"), b"/etc/passwd")])
    problems = area.rejected(source)
    assert problems == ["1/link.html: symbolic links are not accepted"]


def test_it_rejects_symlinks_in_a_folder_bundle(area, tmp_path):
    """Symlinked files and folders are refused and their targets never read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    folder = tmp_path / "folder"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "index.html").write_bytes(PAGE)
    (folder / "1" / "leak.txt").symlink_to(secret)
    (folder / "2").symlink_to(tmp_path)
    problems = area.rejected(folder)
    assert has(problems, "1/leak.txt", "symbolic links")
    assert has(problems, "2: symbolic links")


def test_it_rejects_special_files_in_a_folder_bundle(area, tmp_path):
    """A named pipe would hang a reader; only regular files are accepted."""
    folder = tmp_path / "folder"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "index.html").write_bytes(PAGE)
    os.mkfifo(folder / "1" / "pipe")
    assert has(area.rejected(folder), "1/pipe", "only regular files")


def test_it_rejects_duplicate_names(area):
    """Exact, letter-case, Unicode-normalisation, slash-normalisation and file/folder clashes are refused."""
    source = area.zip([
        ("1/index.html", PAGE),
        ("1/index.html", PAGE),
        ("1/Logo.png", b"a"),
        ("1/logo.png", b"b"),
        ("1/caf\u00e9.png", b"a"),
        ("1/cafe\u0301.png", b"b"),
        ("1/x.png", b"a"),
        ("1/./x.png", b"b"),
        ("2/data", b"a"),
        ("2/data/more.txt", b"b"),
    ])
    problems = area.rejected(source)
    assert has(problems, "1/index.html", "more than once")
    assert has(problems, "1/logo.png", "clashes with 1/Logo.png")
    assert has(problems, "1/cafe\u0301.png", "clashes with 1/caf\u00e9.png")
    assert has(problems, "1/x.png", "more than once")
    assert has(problems, "2/data", "file and a folder")


def test_it_rejects_names_that_are_not_utf8(area):
    """Raw non-UTF-8 name bytes are refused with the name shown escaped."""
    source = area.zip([("1/index.html", PAGE), ("1/cafX.png", b"x")])
    patch_bytes(source, b"1/cafX.png", b"1/caf\xe9.png")
    assert area.rejected(source) == ["1/caf\\xe9.png: file name is not valid UTF-8"]


def test_it_rejects_names_flagged_utf8_that_are_not(area):
    """A name marked UTF-8 holding invalid bytes makes the zip unreadable: one clear problem."""
    source = area.zip([("1/index.html", PAGE), ("1/caf\u00e9.png", b"x")])
    patch_bytes(source, "1/caf\u00e9.png".encode(), b"1/caf\xff\xfe.png")
    assert area.rejected(source) == ["bundle has a file name marked as UTF-8 that is not valid UTF-8"]


def test_it_rejects_folder_names_that_are_not_utf8(area, tmp_path):
    """A file system name with undecodable bytes is refused."""
    folder = tmp_path / "folder"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "index.html").write_bytes(PAGE)
    (folder / "1" / os.fsdecode(b"caf\xe9.png")).write_bytes(b"x")
    assert area.rejected(folder) == ["1/caf\\xe9.png: file name is not valid UTF-8"]


def test_it_rejects_control_characters_in_names(area):
    """Newlines and other control characters in names are refused and shown escaped."""
    problems = area.rejected(area.zip([("1/index.html", PAGE), ("1/a\nb.png", b"x")]))
    assert problems == ["1/a\\nb.png: file name contains control characters"]


# ---------------------------------------------------------------- rejections: sizes and contents


def test_it_rejects_files_over_the_per_file_limit(area):
    """A member larger than max_file_bytes is refused, with its size."""
    source = area.zip([("1/index.html", PAGE), ("1/big.bin", os.urandom(2000))])
    problems = area.rejected(source, Limits(max_file_bytes=1000))
    assert problems == ["1/big.bin: file is 2000 bytes; the limit per file is 1000 bytes"]


def test_it_rejects_bundles_over_the_total_limit(area):
    """The declared total is checked before anything is unpacked."""
    members = [(f"1/part{i}.txt", b"compressible " * 200) for i in range(3)] + [("1/index.html", PAGE)]
    problems = area.rejected(area.zip(members), Limits(max_total_bytes=5000))
    assert has(problems, "unpacks to", "the limit is 5000 bytes")


def test_it_rejects_high_compression_ratios(area):
    """A member that inflates more than max_ratio times is a likely bomb."""
    source = area.zip([("1/index.html", PAGE), ("1/zeros.txt", bytes(2 * 1024 * 1024))])
    assert has(area.rejected(source), "1/zeros.txt", "compression ratio", "possible zip bomb")


def test_default_limits_stop_a_classic_zip_bomb(area):
    """25 MB of zeros in a few KB trips the per-file and ratio limits without being unpacked."""
    source = area.zip([("1/index.html", PAGE), ("1/bomb.html", bytes(25 * 1024 * 1024))])
    assert source.stat().st_size < 100_000
    problems = area.rejected(source)
    assert has(problems, "1/bomb.html", "limit per file is 20.0 MB")
    assert has(problems, "1/bomb.html", "possible zip bomb")


def test_it_rejects_too_many_files(area, tmp_path):
    """Zip and folder bundles with more entries than max_files are refused before unpacking."""
    members = [(f"1/f{i}.txt", b"x") for i in range(5)]
    assert area.rejected(area.zip(members), Limits(max_files=3)) == [
        "bundle has 5 entries (files and folders); the limit is 3"
    ]
    folder = tmp_path / "folder"
    (folder / "1").mkdir(parents=True)
    for i in range(5):
        (folder / "1" / f"f{i}.txt").write_text("x")
    assert area.rejected(folder, Limits(max_files=3)) == [
        "bundle has more than the limit of 3 entries (files and folders)"
    ]


def test_it_rejects_nested_archives_by_name_and_by_content(area):
    """Archives are refused whether their name or only their bytes give them away."""
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode="w") as tar:
        info = tarfile.TarInfo("x.txt")
        tar.addfile(info, io.BytesIO(b""))
    source = area.zip([
        ("1/index.html", PAGE),
        ("1/assets.zip", b"not even a zip"),
        ("1/data.bin", gzip.compress(b"hello")),
        ("1/archive.dat", tar_bytes.getvalue()),
        ("2/index.7z", b"x"),
    ])
    problems = area.rejected(source)
    assert has(problems, "1/assets.zip", "archives inside the bundle", ".zip")
    assert has(problems, "1/data.bin", "gzip archive")
    assert has(problems, "1/archive.dat", "tar archive")
    assert has(problems, "2/index.7z", ".7z")


def test_it_rejects_an_empty_bundle(area, tmp_path):
    """A zip with no entries, a zip holding only folders and an empty folder are all refused."""
    empty = "bundle is empty: it holds no files (seen: "
    assert area.rejected(area.zip([])) == [empty + "no entries at all)"]
    assert area.rejected(area.zip([("1/", b"")], name="dirs.zip")) == [empty + "1 empty folder(s) such as 1/)"]
    junk = area.zip([("__MACOSX/._1", b"x")], name="junk.zip")
    assert area.rejected(junk) == [empty + "only operating-system metadata such as __MACOSX/._1)"]
    (tmp_path / "folder").mkdir()
    assert area.rejected(tmp_path / "folder") == [empty + "no entries at all)"]


def test_it_rejects_a_bundle_with_no_task_page(area):
    """Files but no <task>/index.html at all is fatal, naming what was seen."""
    problems = area.rejected(area.zip([("pages/one.html", PAGE), ("readme.txt", b"x")]))
    assert problems == ["no task page found: expected <task id>/index.html or <task id>/<model folder>/index.html "
                        "(e.g. 1/index.html), possibly inside one wrapper folder; "
                        "seen: pages/ (holding one.html); readme.txt"]


def test_a_bundle_of_task_folders_without_pages_names_what_they_hold(area):
    """Task folders that hold no page anywhere: the message lists them and what is inside (never empty)."""
    problems = area.rejected(area.zip([("out/1/gpt/page.html", PAGE), ("out/2/notes.txt", b"x")]))
    assert problems == ["no task page found: expected <task id>/index.html or <task id>/<model folder>/index.html "
                        "(e.g. 1/index.html), possibly inside one wrapper folder; "
                        "seen: out/ (holding 1/, 2/)"]


def test_it_rejects_files_that_are_not_zips(area):
    """Plain text, a tar.gz and a missing path each get their own message."""
    text = area.inputs / "bundle.zip"
    text.write_text("hello")
    assert area.rejected(text) == ["bundle is not a zip file (or a folder): its first bytes are 'hello'"]
    html = area.inputs / "page.zip"
    html.write_bytes(PAGE)
    assert area.rejected(html) == ["bundle is not a zip file (or a folder): it is an HTML page; "
                                   "put it in <task id>/index.html and zip the folders"]
    targz = area.inputs / "bundle.tar.gz"
    targz.write_bytes(gzip.compress(b"x" * 100))
    assert area.rejected(targz) == ["bundle is a gzip archive, not a zip file; upload a .zip"]
    assert area.rejected(area.inputs / "nope.zip") == ["bundle not found: nope.zip"]


def test_it_rejects_a_truncated_zip(area):
    """A zip cut short is reported as corrupt."""
    source = area.zip([("1/index.html", PAGE * 50)])
    source.write_bytes(source.read_bytes()[:-30])
    assert has(area.rejected(source), "corrupt zip file")


def test_it_rejects_corrupt_member_data_and_cleans_up(area):
    """A member failing its CRC is reported after the good ones were written, and all are removed."""
    data = os.urandom(4000)
    path = area.inputs / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("1/index.html", PAGE)
        zf.writestr("2/index.html", data)
    raw = bytearray(path.read_bytes())
    at = bytes(raw).index(data[:16])
    raw[at + 100] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert has(area.rejected(path), "2/index.html", "corrupt data")


def test_it_rejects_encrypted_members(area):
    """Password-protected members cannot be checked, so they are refused."""
    source = area.zip([("1/index.html", PAGE)])
    raw = bytearray(source.read_bytes())
    raw[6] |= 0x1  # general purpose flags of the local header ...
    raw[bytes(raw).index(b"PK\x01\x02") + 8] |= 0x1  # ... and of the central directory
    source.write_bytes(bytes(raw))
    assert has(area.rejected(source), "1/index.html", "encrypted")


def test_it_lists_every_problem_at_once(area):
    """Problems of different kinds in one bundle are all reported, each with its path."""
    source = area.zip([
        ("1/index.html", PAGE),
        ("../evil.html", b"x"),
        (symlink_info("2/index.html"), b"/etc/passwd"),
        ("3/index.html", PAGE),
        ("3/nested.tar", b"x"),
    ])
    problems = area.rejected(source)
    assert len(problems) == 3
    assert has(problems, "../evil.html") and has(problems, "2/index.html") and has(problems, "3/nested.tar")


def test_it_caps_a_very_long_problem_list(area):
    """Past MAX_REPORTED_PROBLEMS the rest is summarised in one line."""
    members = [(f"../evil{i}.html", b"x") for i in range(MAX_REPORTED_PROBLEMS + 20)] + [("1/index.html", PAGE)]
    problems = area.rejected(area.zip(members))
    assert len(problems) == MAX_REPORTED_PROBLEMS + 1
    assert problems[-1] == "... and 20 more problems"


# ---------------------------------------------------------------- building bundles


def test_make_bundle_zip_packages_text_files_and_folders(tmp_path):
    """Text, a file and a folder become <key>/index.html (+ siblings), byte for byte reproducibly."""
    folder = tmp_path / "site"
    (folder / "img").mkdir(parents=True)
    (folder / "index.html").write_text("<p>folder</p>")
    (folder / "img" / "a.png").write_bytes(b"png")
    single = tmp_path / "page.html"
    single.write_text("<p>file</p>")
    pages = {"10": "<p>text</p>", "2": single, "3": folder}
    first = make_bundle_zip(pages, tmp_path / "one.zip")
    second = make_bundle_zip(pages, tmp_path / "two.zip")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        assert zf.namelist() == ["2/index.html", "3/img/a.png", "3/index.html", "10/index.html"]
        assert zf.read("10/index.html") == b"<p>text</p>"


# ---------------------------------------------------------------- page post-processing


def test_prepare_html_takes_the_first_html_block_of_a_raw_answer():
    """Prose and later blocks are dropped; only the first ```html block is kept."""
    answer = "Here it is:\n```html\n<p>first</p>\n```\nAnd again:\n```html\n<p>second</p>\n```\n"
    assert prepare_html(answer) == "<p>first</p>"


def test_prepare_html_keeps_a_truncated_answer():
    """An answer cut off before its closing fence keeps everything after the opening fence."""
    assert prepare_html("<think>plan</think>\n```HTML\n<p>cut off") == "<p>cut off"


def test_prepare_html_leaves_a_real_page_that_shows_a_fence():
    """A page that merely contains a markdown sample is not mistaken for an answer."""
    page = "<!DOCTYPE html><html><body><pre>```html\n<b>x</b>\n```</pre></body></html>"
    assert prepare_html(page) == page


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('a<iframe src="x">fallback</iframe>b', "ab"),
        ('a<IFRAME title="1>2" src=x></IFrame >b', "ab"),
        ("a<iframe src=x />b</iframe>c", "ac"),
        ("a<iframe src=x>b<p>c</p>", "ab<p>c</p>"),
        ("a</iframe>b", "ab"),
        ("a<iframe src=x>1</iframe>b<iframe>2</iframe>c", "abc"),
        ("a<iframe-card>keep</iframe-card>", "a<iframe-card>keep</iframe-card>"),
        ("a<iframe", "a"),
    ],
)
def test_prepare_html_strips_every_iframe(html, expected):
    """Blocks, odd casing, quoted '>', self-closing, unclosed and stray tags all go; look-alikes stay."""
    assert prepare_html(html) == expected


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('src="__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png"', 'src="/__assets__/asset001.png"'),
        ('src="__PLACEHOLDER_ASSETS_BASE_DIR__asset001.png"', 'src="/__assets__/asset001.png"'),
        ('src="__PLACEHOLDER_ASSETS_BASE_DIR__//asset001.png"', 'src="/__assets__/asset001.png"'),
        ("url(./__PLACEHOLDER_ASSETS_BASE_DIR__/bg.jpg)", "url(/__assets__/bg.jpg)"),
        ('src="/__PLACEHOLDER_ASSETS_BASE_DIR__/a.png"', 'src="/__assets__/a.png"'),
        ('const base = "__PLACEHOLDER_ASSETS_BASE_DIR__";', 'const base = "/__assets__";'),
        ('const base = "__PLACEHOLDER_ASSETS_BASE_DIR__/";', 'const base = "/__assets__/";'),
    ],
)
def test_prepare_html_points_the_placeholder_at_the_assets_prefix(html, expected):
    """The placeholder becomes ASSETS_URL_PREFIX with exactly one slash before a file name."""
    assert ASSETS_URL_PREFIX == "/__assets__"
    assert prepare_html(html) == expected


def test_placeholders_next_to_slashes_and_each_other_are_replaced_as_one_regex_pass_would():
    """The placeholder search gives exactly what one ``re.sub`` of the pattern gives, on thousands of
    generated strings mixing placeholders with slashes, dots and name characters."""
    import random

    from evaluator.bundle.pages import _PLACEHOLDER, ASSET_PLACEHOLDER, replace_placeholder

    def one_pass(html: str) -> str:
        return _PLACEHOLDER.sub(lambda m: ASSETS_URL_PREFIX + ("/" if m.group(1) or m.group(2) else ""), html)

    pieces = ["./", "/", ".", "a", "%", "~", "-", " ", "\u00e9", "//", '"', "_", ASSET_PLACEHOLDER]
    rng = random.Random(7)
    for _ in range(5000):
        html = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert replace_placeholder(html) == one_pass(html), html
    # The slash after the first placeholder belongs to it, not to the second one.
    html = f".{ASSET_PLACEHOLDER}/{ASSET_PLACEHOLDER}x"
    assert replace_placeholder(html) == "./__assets__//__assets__/x" == one_pass(html)


def test_decode_page_tolerates_boms_and_replaces_bad_bytes():
    """UTF-8 and UTF-16 BOMs are honoured; invalid bytes become U+FFFD with a warning."""
    assert decode_page(b"\xef\xbb\xbf<p>\xc3\xa9</p>") == ("<p>\u00e9</p>", None)
    assert decode_page("\ufeff<p>x</p>".encode("utf-16-le")) == ("<p>x</p>", None)
    text, warning = decode_page(b"<p>\xe9</p>")
    assert text == "<p>\ufffd</p>"
    assert "offset 3" in warning


def test_read_page_decodes_and_post_processes(tmp_path):
    """read_page is what the server sends: decoded, fence taken, iframes gone, assets pointed."""
    path = tmp_path / "index.html"
    path.write_bytes(b'\xef\xbb\xbf```html\n<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/a.png"><iframe></iframe>\n```')
    assert read_page(path) == '<img src="/__assets__/a.png">'


# ---------------------------------------------------------------- the official generator's layout


def test_the_generators_nested_layout_extracts_like_the_flat_one(area, tmp_path):
    """<task>/<model>/index.html (and the model folder's siblings) land exactly where the flat layout puts them."""
    nested = area.zip([("1/gpt-5/index.html", PAGE), ("1/gpt-5/css/a.css", b"p{}"), ("2/gpt-5/index.html", PAGE)])
    bundle = extract_bundle(nested, area.dest, TASKS)
    flat_dest = tmp_path / "flat"
    flat = extract_bundle(area.zip([("1/index.html", PAGE), ("1/css/a.css", b"p{}"), ("2/index.html", PAGE)],
                                   name="flat.zip"), flat_dest, TASKS)
    files = {path.relative_to(area.dest) for path in area.dest.rglob("*") if path.is_file()}
    assert files == {path.relative_to(flat_dest) for path in flat_dest.rglob("*") if path.is_file()}
    assert files == {Path("1/index.html"), Path("1/css/a.css"), Path("2/index.html")}
    assert list(bundle.pages) == list(flat.pages) == ["1", "2"] and bundle.missing == flat.missing == ["3"]
    assert bundle.layout.kind == "nested" and bundle.layout.model_folders == ["gpt-5"]
    assert flat.layout.kind == "flat" and flat.layout.model_folders == []


def test_the_nested_layout_is_read_inside_a_wrapper_folder(area):
    """outputs/<task>/<model>/index.html: the wrapper is stripped, then each model folder is the task folder."""
    source = area.zip([("outputs/1/claude/index.html", PAGE), ("outputs/3/claude/index.html", PAGE),
                       ("outputs/1/claude/raw_answer.txt", b"answer")])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert sorted(bundle.pages) == ["1", "3"]
    assert (area.dest / "1" / "raw_answer.txt").read_bytes() == b"answer"
    assert bundle.layout.as_dict() == {"kind": "nested", "wrapper": "outputs", "model_folders": ["claude"],
                                       "nested_tasks": ["1", "3"]}


def test_two_model_folders_in_one_task_are_refused_naming_them(area):
    source = area.zip([("1/gpt-5/index.html", PAGE), ("1/o4/index.html", PAGE), ("2/gpt-5/index.html", PAGE)])
    assert area.rejected(source) == ["task 1: more than one model folder holds an index.html (1/gpt-5/, 1/o4/); "
                                     "a bundle holds one model's pages, so keep one model folder per task"]


def test_files_outside_the_model_folder_are_left_out_with_a_warning(area):
    source = area.zip([("1/gpt-5/index.html", PAGE), ("1/log.txt", b"x"), ("1/draft/notes.md", b"y")])
    bundle = extract_bundle(source, area.dest, TASKS)
    assert sorted(p.name for p in (area.dest / "1").iterdir()) == ["index.html"]
    assert has(bundle.warnings, "task 1: ignored 2 file(s) outside its model folder gpt-5/")


def test_a_bundle_mixing_both_layouts_takes_each_task_as_it_is(area):
    bundle = extract_bundle(area.zip([("1/index.html", PAGE), ("2/m/index.html", PAGE)]), area.dest, TASKS)
    assert sorted(bundle.pages) == ["1", "2"] and bundle.layout.kind == "mixed"
    assert bundle.layout.nested_tasks == ["2"]


def test_check_bundle_reports_pages_missing_ignored_and_layout_as_json(area):
    """The dry run: a JSON-ready report and nothing left on disk."""
    from evaluator.bundle import check_bundle

    source = area.zip([("out/1/m/index.html", PAGE), ("out/extra/m/index.html", PAGE)])
    report = check_bundle(source, ["1", "2"])
    assert report == {"accepted": True, "tasks": 2, "pages": ["1"], "missing": ["2"], "ignored": ["extra"],
                      "layout": {"kind": "nested", "wrapper": "out", "model_folders": ["m"], "nested_tasks": ["1"]},
                      "problems": [], "warnings": report["warnings"]}
    assert has(report["warnings"], "out/")
    area.assert_untouched()
    refused = check_bundle(area.zip([("1/a/index.html", PAGE), ("1/b/index.html", PAGE)], name="two.zip"), ["1"])
    assert not refused["accepted"] and has(refused["problems"], "1/a/, 1/b/")
    unreadable = area.inputs / "x.zip"
    unreadable.write_bytes(b"")
    assert check_bundle(unreadable, ["1"])["problems"] == ["bundle is not a zip file (or a folder): the file is empty"]
    assert check_bundle(unreadable, ["1"])["layout"] is None


@pytest.mark.browser
def test_the_nested_layout_scores_exactly_like_the_flat_one(tmp_path):
    """The same pages, zipped flat and in the generator's layout inside a wrapper: identical results.json scores."""
    import json

    from evaluator.runner import score
    from tests.evaluator.test_replay import GOOD_PAGE
    from tests.evaluator.test_runner import HALF_PAGE, SCORE_FIELDS, make_task_set

    data = make_task_set(tmp_path / "set", ("1", "2", "3"))
    pages = {"1": GOOD_PAGE, "2": HALF_PAGE}
    flat = make_bundle_zip(pages, tmp_path / "flat.zip")
    nested = tmp_path / "nested.zip"
    with zipfile.ZipFile(nested, "w") as zf:
        for key, html in pages.items():
            zf.writestr(f"outputs/{key}/my-model/index.html", html)
    scores = []
    for name, bundle in (("flat", flat), ("nested", nested)):
        score(data, bundle, tmp_path / name, workers=1, record_video=False)
        results = json.loads((tmp_path / name / "results.json").read_text())
        scores.append(({key: {f: task[f] for f in SCORE_FIELDS} for key, task in results["tasks"].items()},
                       results["summary"]))
    assert scores[0] == scores[1]
    assert scores[0][0]["1"]["final"] > scores[0][0]["2"]["final"] > 0 == scores[0][0]["3"]["final"]

"""Authoring: scripts, the reference page builder, stitched sheets and recording real pages."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.authoring import AuthoringError, author_task, parse_script, upsert_record
from evaluator.authoring.reference_page import PLACEHOLDER, build_reference_page
from evaluator.authoring.sources import FolderSource, LoopbackSource, open_source
from evaluator.authoring.stitch import stitch_assets
from evaluator.authoring.video import probe_video
from evaluator.cli import main

NPM = Path(__file__).resolve().parents[2] / ".cache" / "npm"
SAMPLE_TASKS = Path(__file__).resolve().parents[2] / "evaluator" / "sample" / "tasks"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Counter</title>
<link rel="stylesheet" href="css/site.css">
<link rel="stylesheet" href="https://cdn.example.com/lib.css">
<link rel="icon" href="img/icon.png">
</head><body>
<h1 class="title">Counter <img src="img/logo.svg" width="40" height="40" alt="logo"></h1>
<p id="count">Clicked 0 times</p>
<button id="add" class="btn">Add one</button>
<input id="name" placeholder="Your name">
<p id="luck"></p>
<img src="img/photo.png" srcset="img/photo.png 1x, img/photo.png 2x" width="60" height="30" alt="photo">
<script src="js/app.js"></script>
<script src="https://cdn.example.com/tracker.js"></script>
</body></html>
"""
CSS = """@import url("theme.css");
body { font-family: sans-serif; background: #fff url(../img/tile.png); }
button, input { font: 16px sans-serif; border: 1px solid #444; border-radius: 0; background: #eee; padding: 4px; }
input:focus { outline: 2px solid #333; }
@font-face { font-family: Demo; src: url(demo.eot);
  src: url(demo.woff2) format("woff2"), url(demo.eot?#ie) format("embedded-opentype"); }
"""
APP_JS = """let n = 0;
document.getElementById('luck').textContent = 'Lucky number ' + Math.floor(Math.random() * 1000) +
  ' on ' + new Date().toISOString().slice(0, 10);
document.getElementById('add').addEventListener('click', () => {
  n += 1;
  setTimeout(() => { document.getElementById('count').textContent = 'Clicked ' + n + ' times'; }, 200);
});
const marker = "</script>";
"""
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">'
    '<circle cx="20" cy="20" r="18" fill="teal"/></svg>'
)

SCRIPT = {
    "id": "counter",
    "source_website": "http://localhost/counter",
    "resolution": "640x400",
    "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "productivity",
                       "sub_domain": "counter"},
    "pace_ms": 0,
    "action_sequence": [
        {"type": "Click", "selector": "#add", "parameters": {"description": "Click the 'Add one' button"},
         "visual_evaluation_flag": True, "logical_assertion": "The text reads 'Clicked 1 times'"},
        {"type": "Type", "selector": "#name", "parameters": {"description": "Type 'Ada' into 'Your name'",
                                                             "text": "Ada"},
         "visual_evaluation_flag": False, "logical_assertion": None},
        {"type": "Press", "parameters": {"description": "Press Tab", "key": "Tab"},
         "visual_evaluation_flag": True, "logical_assertion": None},
    ],
}


def write_site(root: Path) -> Path:
    """A small multi-file page: style sheets, a script, images, a font, external references."""
    for folder in ("css", "js", "img"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(PAGE)
    (root / "css" / "site.css").write_text(CSS)
    (root / "css" / "theme.css").write_text("h1 { color: rgb(20, 60, 120); }\n")
    (root / "css" / "demo.woff2").write_bytes(b"wOF2-not-a-real-font")
    (root / "css" / "demo.eot").write_bytes(b"eot")
    (root / "js" / "app.js").write_text(APP_JS)
    (root / "img" / "logo.svg").write_text(SVG)
    Image.new("RGB", (60, 30), (200, 40, 40)).save(root / "img" / "photo.png")
    Image.new("RGB", (8, 8), (245, 245, 235)).save(root / "img" / "tile.png")
    Image.new("RGB", (16, 16), (0, 90, 0)).save(root / "img" / "icon.png")
    return root


def write_script(path: Path, data: dict = SCRIPT) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def site(tmp_path) -> Path:
    return write_site(tmp_path / "site")


@pytest.fixture(scope="module")
def served_site(tmp_path_factory):
    """The small page served by a web server on 127.0.0.1 (the test's own, stopped afterwards)."""
    root = write_site(tmp_path_factory.mktemp("served"))
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


# --------------------------------------------------------------------------- scripts


def test_it_keeps_the_selector_out_of_the_published_record():
    """The recorder's selector is dropped; everything else of the action is published as written."""
    record = parse_script(SCRIPT).record("counter")
    assert all("selector" not in action for action in record["action_sequence"])
    assert record["action_sequence"][0] == {k: v for k, v in SCRIPT["action_sequence"][0].items() if k != "selector"}
    assert record["recording_details"]["resolution"] == "640x400"
    assert set(record) == {"id", "classification", "recording_details", "source_website", "action_sequence"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["action_sequence"][0].pop("selector"), "needs a CSS selector"),
        (lambda s: s["action_sequence"][1]["parameters"].pop("text"), "text must be a non-empty string"),
        (lambda s: s["classification"].update(interaction_complexity="L9"), "L1, L2, L3, L4"),
        (lambda s: s.update(resolution="huge"), "resolution must look like"),
        (lambda s: s["action_sequence"].append({"type": "Scroll", "selector": "#x", "parameters": {
            "description": "Scroll"}, "visual_evaluation_flag": False, "logical_assertion": None}), "no selector"),
        (lambda s: s.update(id="../escape"), "id must be"),
    ],
)
def test_it_rejects_unusable_scripts_with_one_line(change, message):
    """Each kind of script mistake is named in a one-line AuthoringError."""
    data = json.loads(json.dumps(SCRIPT))
    change(data)
    with pytest.raises(AuthoringError, match=message) as caught:
        parse_script(data)
    assert "\n" not in str(caught.value)


def test_the_author_command_reports_a_bad_script_as_a_usage_error(tmp_path, site, capsys):
    """A broken script ends with exit status 2 and an ``error:`` line, not a traceback."""
    script = tmp_path / "bad.json"
    script.write_text("{not json")
    status = main(["author", "--site", str(site), "--script", str(script), "--out", str(tmp_path / "ds")])
    assert status == 2
    assert "error: script" in capsys.readouterr().err


# --------------------------------------------------------------------------- sources


@pytest.mark.parametrize("url", ["https://example.com/", "http://10.0.0.1/", "ftp://localhost/x", "file://host/x"])
def test_it_refuses_pages_that_are_not_local(url):
    """Only folders, file:// URLs and servers on the loopback interface can be recorded."""
    with pytest.raises(AuthoringError, match="--site"):
        open_source(url)


def test_it_accepts_loopback_servers_and_file_urls(site):
    """localhost, 127.x and ::1 are loopback; a file:// URL names a local folder."""
    assert isinstance(open_source("http://localhost:8000/app/"), LoopbackSource)
    assert isinstance(open_source("http://127.0.0.2/"), LoopbackSource)
    assert isinstance(open_source("http://[::1]:9/"), LoopbackSource)
    assert isinstance(open_source(site.as_uri()), FolderSource)


def test_it_never_reads_files_outside_the_site_folder(tmp_path, site):
    """A reference that climbs out of the folder stays unresolved instead of reading the file."""
    (tmp_path / "secret.png").write_bytes(b"secret")
    source = FolderSource(site, "index.html")
    assert source.read("http://source.invalid/../secret.png") is None
    assert source.read("http://source.invalid/%2e%2e/secret.png") is None
    assert source.read("http://source.invalid/img/photo.png") is not None


# --------------------------------------------------------------------------- reference page


def test_it_builds_one_self_contained_page_with_anonymised_assets(site):
    """Style sheets and scripts are inlined, images use the placeholder, fonts travel inside."""
    page = build_reference_page(open_source(str(site)))
    html = page.html
    assert [a.name for a in page.assets] == ["asset001.png", "asset002.png", "asset003.svg", "asset004.png"]
    assert [a.source for a in page.assets] == ["img/tile.png", "img/icon.png", "img/logo.svg", "img/photo.png"]
    assert f'url("{PLACEHOLDER}/asset001.png")' in html
    assert f'src="{PLACEHOLDER}/asset003.svg"' in html
    assert f'srcset="{PLACEHOLDER}/asset004.png 1x, {PLACEHOLDER}/asset004.png 2x"' in html
    assert "rgb(20, 60, 120)" in html  # @import inlined
    assert "data:font/woff2;base64," in html and "demo.eot" not in html
    assert "let n = 0;" in html and 'const marker = "<\\/script>";' in html
    for gone in ("cdn.example.com", 'href="css/', 'src="js/', "img/"):
        assert gone not in html
    assert any("cdn.example.com/lib.css" in w for w in page.warnings)


def test_it_writes_the_private_asset_map(tmp_path, site):
    """assets.json says which original file each anonymised asset is; the files hold the same bytes."""
    page = build_reference_page(open_source(str(site)))
    page.write(tmp_path / "site", tmp_path / "assets", tmp_path / "assets.json")
    entries = json.loads((tmp_path / "assets.json").read_text())["assets"]
    assert {e["name"]: e["source"] for e in entries}["asset004.png"] == "img/photo.png"
    assert (tmp_path / "assets" / "asset004.png").read_bytes() == (site / "img" / "photo.png").read_bytes()
    assert (tmp_path / "site" / "index.html").read_text() == page.html


def test_it_reads_a_page_from_a_server_on_localhost(served_site):
    """A page on a local web server is read over HTTP with the same rewriting as a folder."""
    page = build_reference_page(open_source(served_site))
    assert [a.source for a in page.assets] == ["/img/tile.png", "/img/icon.png", "/img/logo.svg", "/img/photo.png"]
    assert "let n = 0;" in page.html


# --------------------------------------------------------------------------- sheets and records


def test_it_draws_labelled_sheets_of_sixteen_assets(tmp_path):
    """17 assets make two sheets; every cell has its thumbnail and the sheets are reproducible."""
    assets = tmp_path / "assets"
    assets.mkdir()
    for n in range(1, 18):
        Image.new("RGB", (20 + n, 10), (10 * n, 0, 0)).save(assets / f"asset{n:03d}.png")
    sheets = stitch_assets(assets, tmp_path / "stitched")
    assert [p.name for p in sheets] == ["stitched_image_1.png", "stitched_image_2.png"]
    first = Image.open(sheets[0])
    assert first.size == (4 * 256, 4 * (256 + 32))
    assert first.getpixel((128, 128)) == (10, 0, 0)  # asset001 drawn in the first cell
    label = np.asarray(first.crop((0, 256, 256, 288)).convert("L"))
    assert label.min() < 100  # the file name is written under it
    again = stitch_assets(assets, tmp_path / "again")
    assert again[0].read_bytes() == sheets[0].read_bytes()


def test_it_replaces_a_tasks_line_when_it_is_recorded_again(tmp_path):
    """Re-authoring a task replaces its record; other tasks keep their lines and order."""
    path = tmp_path / "data.jsonl"
    upsert_record(path, {"id": "a", "v": 1})
    upsert_record(path, {"id": 7, "v": 1})
    upsert_record(path, {"id": "a", "v": 2})
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"id": "a", "v": 2}, {"id": 7, "v": 1}]


# --------------------------------------------------------------------------- recording (Chromium)


@pytest.mark.browser
def test_it_records_a_task_from_a_page_on_localhost(tmp_path, served_site, browser):
    """Authoring writes the whole task: record, checkpoints, assets, sheets, reference data and an H.264 video."""
    out = tmp_path / "dataset"
    task = author_task(served_site, write_script(tmp_path / "counter.json"), out, browser=browser)
    root = out / "data" / "counter"
    record = json.loads((out / "data.jsonl").read_text())
    assert record["id"] == "counter" and "selector" not in json.dumps(record)
    assert sorted(p.name for p in (root / "checkpoints").iterdir()) == [f"step_{k}.png" for k in range(4)]
    assert Image.open(root / "checkpoints" / "step_0.png").size == (640, 400)
    assert sorted(p.name for p in (root / "assets").iterdir()) == task.assets == [
        "asset001.png", "asset002.png", "asset003.svg", "asset004.png"]
    assert (root / "stitched_assets" / "stitched_image_1.png").is_file()
    assert PLACEHOLDER in (root / "reference" / "site" / "index.html").read_text()
    video = probe_video(root / "video.mp4")
    assert (video["codec_name"], video["pix_fmt"], video["width"], video["height"]) == ("h264", "yuv420p", 640, 400)
    reference = json.loads((root / "reference" / "step_1.json").read_text())
    assert set(reference) == {"url", "scroll", "viewport", "text", "blocks"}
    assert "Clicked 1 times" in reference["text"] and reference["viewport"] == [640, 400]
    block = next(b for b in reference["blocks"] if b["text"] == "Counter")
    assert block["color"] == [20, 60, 120] and block["bg"] == [255, 255, 255] and len(block["box"]) == 4


@pytest.mark.browser
def test_the_reference_page_renders_with_its_assets(tmp_path, site, browser):
    """The recorded page shows the anonymised images (served from the assets folder), not broken ones."""
    out = tmp_path / "dataset"
    author_task(str(site), write_script(tmp_path / "counter.json"), out, browser=browser, record_video=False)
    shot = np.asarray(Image.open(out / "data" / "counter" / "checkpoints" / "step_0.png").convert("RGB"))
    reds = (shot[:, :, 0] > 180) & (shot[:, :, 1] < 80) & (shot[:, :, 2] < 80)
    assert reds.sum() >= 60 * 30 * 0.9  # the 60x30 red photo is on screen


@pytest.mark.browser
def test_recording_the_same_script_twice_gives_identical_checkpoints(tmp_path, site, browser):
    """Seeded randomness, a fixed clock and settled screenshots make re-recording pixel-identical."""
    script = write_script(tmp_path / "counter.json")
    runs = []
    for name in ("first", "second"):
        author_task(str(site), script, tmp_path / name, browser=browser, record_video=False)
        runs.append(tmp_path / name / "data" / "counter")
    for k in range(4):
        a, b = (np.asarray(Image.open(run / "checkpoints" / f"step_{k}.png").convert("RGB")) for run in runs)
        assert np.array_equal(a, b), f"step_{k} differs"
        assert (runs[0] / "reference" / f"step_{k}.json").read_text() == (
            runs[1] / "reference" / f"step_{k}.json").read_text()
    assert "Lucky number" in json.loads((runs[0] / "reference" / "step_0.json").read_text())["text"]


@pytest.mark.browser
def test_it_names_the_action_whose_selector_matches_nothing(tmp_path, site, browser):
    """A selector that finds no element stops authoring with the action's number."""
    data = json.loads(json.dumps(SCRIPT))
    data["action_sequence"][0]["selector"] = "#missing"
    with pytest.raises(AuthoringError, match=r"action 1 \(Click\): selector '#missing' matches no element"):
        author_task(str(site), write_script(tmp_path / "s.json", data), tmp_path / "ds", browser=browser,
                    record_video=False)


@pytest.mark.browser
def test_it_records_a_todomvc_example_from_npm(tmp_path, browser):
    """A real third-party page (TodoMVC, vanilla JS) records offline and its items show in the reference text."""
    example = NPM / "todomvc" / "examples" / "vanillajs"
    if not example.is_dir():
        pytest.skip(f"{example} is missing: scripts/setup.sh fetches the npm pages")
    copy = shutil.copytree(example, tmp_path / "vanillajs")
    task = author_task(str(copy), SAMPLE_TASKS / "todomvc-vanillajs-list.json", tmp_path / "ds", browser=browser,
                       record_video=False, pace_ms=0)
    assert task.steps == 11
    after_add = json.loads((task.root / "reference" / "step_2.json").read_text())
    assert "Buy milk" in after_add["text"] and "1 item left" in after_add["text"].replace("\n", " ")
    final = json.loads((task.root / "reference" / "step_11.json").read_text())["text"]
    assert "Walk the dog" in final and "Buy milk" not in final
    from evaluator.dataset import validate_dataset

    report = validate_dataset(tmp_path / "ds" / "data.jsonl")
    assert [p.message for p in report.problems if "video" not in p.message] == []


def test_links_to_pictures_travel_as_assets_and_other_links_stay(tmp_path):
    """A photo grid's links to full-size pictures are what its lightbox opens: they become assets; links to
    pages, sections and the internet stay as written."""
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "full.jpg").write_bytes(b"\xff\xd8full")
    (tmp_path / "img" / "thumb.jpg").write_bytes(b"\xff\xd8thumb")
    (tmp_path / "index.html").write_text(
        '<a class="photo" href="img/full.jpg"><img src="img/thumb.jpg"></a>'
        '<a href="other.html">Other</a><a href="#docs">Docs</a><a href="https://example.com/far.jpg">Far</a>')
    page = build_reference_page(open_source(str(tmp_path)))
    assert [a.source for a in page.assets] == ["img/full.jpg", "img/thumb.jpg"]
    assert f'<a class="photo" href="{PLACEHOLDER}/asset001.jpg">' in page.html
    for kept in ('href="other.html"', 'href="#docs"', 'href="https://example.com/far.jpg"'):
        assert kept in page.html

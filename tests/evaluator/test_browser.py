"""Chromium lifecycle: routing at the fake origin, repeatable pages, settling, screenshots, video, sandbox."""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from evaluator.page_session import JsonPage, SiteMap, content_type, page_session

pytestmark = pytest.mark.browser

W, H = 480, 320


def make_site(root: Path, html: str, files: dict[str, bytes | str] | None = None,
              assets: dict[str, bytes] | None = None) -> SiteMap:
    page = root / "page"
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text(html)
    for name, data in (files or {}).items():
        (page / name).write_bytes(data.encode() if isinstance(data, str) else data)
    asset_dir = root / "assets"
    asset_dir.mkdir(exist_ok=True)
    for name, data in (assets or {}).items():
        (asset_dir / name).write_bytes(data)
    return SiteMap(page, asset_dir)


def png(size=(10, 10), color=(0, 128, 0)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def test_it_maps_urls_to_files_and_refuses_traversal(tmp_path: Path):
    """Index, siblings and assets resolve inside their folders; traversal and unknown paths do not."""
    site = make_site(tmp_path, "<p>x</p>", {"app.js": "1"}, {"a b.png": png()})
    (tmp_path / "secret.txt").write_text("secret")
    assert site.resolve("http://iwr.test/") == site.page_dir.resolve() / "index.html"
    assert site.resolve("http://iwr.test/index.html?x=1") == site.page_dir.resolve() / "index.html"
    assert site.resolve("http://iwr.test/app.js").name == "app.js"
    assert site.resolve("http://iwr.test/__assets__/a%20b.png").name == "a b.png"
    for bad in ("http://iwr.test/../secret.txt", "http://iwr.test/%2e%2e/secret.txt",
                "http://iwr.test/__assets__/../page/index.html", "http://iwr.test/__assets__/%2e%2e/secret.txt",
                "http://iwr.test/missing.js", "http://iwr.test/__assets__/"):
        assert site.resolve(bad) is None, bad


def test_it_gives_files_their_content_types():
    """Scripts, styles, images and fonts get the types browsers need to use them."""
    assert content_type(Path("a.js")) == "text/javascript"
    assert content_type(Path("a.CSS")) == "text/css"
    assert content_type(Path("a.svg")) == "image/svg+xml"
    assert content_type(Path("a.woff2")) == "font/woff2"
    assert content_type(Path("a.unknownext")) == "application/octet-stream"


def test_it_serves_the_page_its_siblings_and_assets(browser, tmp_path: Path):
    """The page at http://iwr.test/ loads its sibling stylesheet and its /__assets__/ image."""
    html = '<link rel="stylesheet" href="style.css"><h1>Hi</h1><img src="/__assets__/a.png" width="10" height="10">'
    site = make_site(tmp_path, html, {"style.css": "h1 { color: rgb(255, 0, 0); }"}, {"a.png": png()})
    with page_session(browser, site, W, H) as session:
        assert session.page.url == "http://iwr.test/"
        assert session.page.evaluate("getComputedStyle(document.querySelector('h1')).color") == "rgb(255, 0, 0)"
        assert session.page.evaluate("document.images[0].naturalWidth") == 10
        assert session.blocked == [] and session.not_found == []


def test_it_blocks_and_records_every_outside_request(browser, tmp_path: Path):
    """Requests to other origins are aborted and listed with URL and resource type; missing files get 404."""
    html = """<script>
      fetch('https://tracker.example/f').catch(() => {});
      new Image().src = 'http://tracker.example/p.gif';
      try { new WebSocket('wss://tracker.example/ws'); } catch (e) {}
      fetch('/nothing-here.json').then(r => document.title = String(r.status));
    </script>"""
    with page_session(browser, make_site(tmp_path, html), W, H) as session:
        session.settle()
        blocked = {(b["url"], b["type"]) for b in session.blocked}
        title = session.page.title()
    assert ("https://tracker.example/f", "fetch") in blocked
    assert ("http://tracker.example/p.gif", "image") in blocked
    assert ("wss://tracker.example/ws", "websocket") in blocked
    assert session.not_found == ["http://iwr.test/nothing-here.json"] and title == "404"


def test_it_makes_randomness_and_time_repeatable(browser, tmp_path: Path):
    """Same seed, same Math.random / crypto values and the same fixed Date; another seed differs."""
    script = "() => [Math.random(), Math.random(), Array.from(crypto.getRandomValues(new Uint8Array(4))), " \
             "crypto.randomUUID(), Date.now(), new Date().getTimezoneOffset(), navigator.language]"
    site = make_site(tmp_path, "<p>r</p>")
    runs = []
    for seed in (1, 1, 2):
        with page_session(browser, site, W, H, seed=seed) as session:
            runs.append(session.page.evaluate(script))
    assert runs[0] == runs[1]
    assert runs[0][:4] != runs[2][:4]
    assert runs[0][4] == runs[2][4] == 1704110401000  # the fixed time + the load step of 1000 ms
    assert runs[0][5] == 0 and runs[0][6] == "en-US"


def test_it_runs_page_timers_only_when_the_clock_advances(browser, tmp_path: Path):
    """A 500 ms timer set by a click fires on advance_clock, not during settle."""
    html = "<button onclick=\"setTimeout(() => document.body.dataset.done = 'yes', 500)\">Go</button>"
    with page_session(browser, make_site(tmp_path, html), W, H) as session:
        session.page.click("button")
        session.settle()
        before = session.page.evaluate("document.body.dataset.done || 'no'")
        session.advance_clock()
        after = session.page.evaluate("document.body.dataset.done || 'no'")
    assert (before, after) == ("no", "yes")


# A module loader in the manner of require.js: each module is fetched once the previous one has
# arrived, and its callback runs on a short timer, so the page binds only after three round trips.
CHAINED_LOADER = """<p id="out">{{template}}</p><script>
  function load(src, done) {
    const s = document.createElement('script');
    s.src = src;
    s.onload = () => setTimeout(done, 4);
    document.head.appendChild(s);
  }
  setTimeout(() => load('a.js', () => load('b.js', () => load('c.js', () => {
    document.getElementById('out').textContent = 'bound ' + [A, B, C].join('') + ' at ' + Date.now();
  }))), 4);
</script>"""


def test_it_runs_start_up_that_loads_code_after_the_load_event(browser, tmp_path: Path):
    """A page that chains module loads through timers is bound before screenshot 0, after the same steps each time."""
    site = make_site(tmp_path, CHAINED_LOADER, {"a.js": "var A = 1;", "b.js": "var B = 2;", "c.js": "var C = 3;"})
    seen = set()
    for _ in range(3):
        with page_session(browser, site, W, H) as session:
            seen.add((session.page.inner_text("#out"), session.startup_steps, session.page.evaluate("Date.now()")))
    assert len(seen) == 1, seen
    text, steps, now = seen.pop()
    step = session.settle_params["startup_step_ms"]
    assert text.startswith("bound 123 at ") and 3 <= steps < session.settle_params["startup_max_steps"]
    assert now == 1704110400000 + session.settle_params["load_clock_ms"] + steps * step


def test_it_bounds_start_up_steps_on_a_page_that_never_stops_fetching(browser, tmp_path: Path):
    """A page polling the network on a timer gets exactly startup_max_steps steps, then its screenshot."""
    html = "<p id='n'>0</p><script>setInterval(() => fetch('data.json').then(() => n.textContent++), 50);</script>"
    with page_session(browser, make_site(tmp_path, html, {"data.json": "{}"}), W, H) as session:
        steps, limit = session.startup_steps, session.settle_params["startup_max_steps"]
    assert steps == limit


def test_a_page_that_fetches_without_pause_still_loads_within_a_bound(browser, tmp_path: Path):
    """A fetch loop that never leaves the network quiet ends start-up stepping at its real-time bound."""
    html = "<p>busy</p><script>(async () => { while (true) await fetch('data.json'); })();</script>"
    begin = time.monotonic()
    with page_session(browser, make_site(tmp_path, html, {"data.json": "{}"}), W, H) as session:
        p = session.settle_params
        startup_bound = p["network_quiet_ms"] + p["startup_max_steps"] * p["dom_quiet_ms"]
        settle_bound = p["network_quiet_ms"] + p["dom_quiet_max_ms"]
        assert session.page.inner_text("p") == "busy"
    # Without the bound: 2 s of network wait for each of the 20 steps, longer than the load limit.
    assert time.monotonic() - begin < (startup_bound + settle_bound) / 1000 + 3


def test_a_page_without_late_start_up_gets_only_the_load_step(browser, tmp_path: Path):
    """No request after load: no start-up step, page time is the load step exactly (favicon requests do not count)."""
    html = '<link rel="icon" href="favicon.ico"><p>plain</p><script>setTimeout(() => document.title = "t", 10)</script>'
    with page_session(browser, make_site(tmp_path, html, {"favicon.ico": png()}), W, H) as session:
        assert session.startup_steps == 0 and session.page.title() == "t"
        assert session.page.evaluate("Date.now()") == 1704110400000 + session.settle_params["load_clock_ms"]


def test_it_dismisses_dialogs_and_closes_popups_and_downloads(browser, tmp_path: Path):
    """Dialogs never block, popups are closed and downloads refused; all are counted."""
    html = """<a id="pop" href="http://popup.example/" target="_blank">pop</a>
    <a id="dl" download="x.bin">dl</a>
    <script>
      alert(1); confirm(2); prompt(3); window.open('http://popup.example/2');
      document.getElementById('dl').href = URL.createObjectURL(new Blob(['x']));
    </script>"""
    with page_session(browser, make_site(tmp_path, html), W, H) as session:
        session.page.click("#pop")
        session.page.click("#dl")
        session.settle()
        session.page.wait_for_timeout(200)  # popup and download events arrive asynchronously
        counts = session.counts()
    assert counts["alert"] == counts["confirm"] == counts["prompt"] == counts["open"] == 1
    assert counts["popups"] == 1 and counts["downloads"] == 1


def test_it_settles_quickly_when_quiet_and_within_bound_when_not(browser, tmp_path: Path):
    """settle() returns soon on a quiet page and stops at its bound on a page that never stops changing."""
    quiet = make_site(tmp_path / "q", "<p>quiet</p>")
    busy_html = """<p id="t">0</p><script>
      const c = new MessageChannel(); let n = 0;
      c.port1.onmessage = () => { document.getElementById('t').textContent = ++n; c.port2.postMessage(0); };
      c.port2.postMessage(0);
    </script>"""
    with page_session(browser, quiet, W, H) as session:
        begin = time.monotonic()
        result = session.settle()
        quiet_s = time.monotonic() - begin
    assert result["quiet"] and quiet_s < 0.5
    with page_session(browser, make_site(tmp_path / "b", busy_html), W, H) as session:
        begin = time.monotonic()
        result = session.settle()
        busy_s = time.monotonic() - begin
    bound = session.settle_params["dom_quiet_max_ms"] / 1000
    assert not result["quiet"] and bound <= busy_s < bound + 1.5


SCREENSHOT_PAGE = """<style>
  @keyframes spin { to { transform: rotate(360deg); } }
  #spin { width: 40px; height: 40px; background: #c00; animation: spin 2s linear infinite; }
  #grow { width: 10px; height: 20px; background: #00c; transition: width 5s; }
</style>
<div id="spin"></div><div id="grow"></div><input id="field" value="typed text" autofocus>"""


def test_its_screenshots_have_the_pixels_of_playwrights(browser, tmp_path: Path):
    """Caret hidden, animations finished or cancelled: the same pixels as Playwright's page.screenshot,
    and afterwards the page is as it was (caret colour, running animations)."""
    with page_session(browser, make_site(tmp_path, SCREENSHOT_PAGE), W, H) as session:
        page = session.page
        page.evaluate("document.getElementById('grow').style.width = '300px'; scrollTo(0, 7.5)")
        page.focus("#field")
        ours = session.screenshot(tmp_path / "ours.png")
        theirs = page.screenshot(animations="disabled", caret="hide")
        after = page.evaluate("[document.getElementById('field').style.caretColor, "
                              "document.getAnimations().map(a => a.playState).sort().join()]")
    assert Image.open(io.BytesIO(ours)).size == (W, H) and (tmp_path / "ours.png").read_bytes() == ours
    assert _pixels(ours) == _pixels(theirs)
    assert after == ["", "running"]


FADE_PAGE = """<!doctype html><style>
  body { margin: 0; background: #f8f9fc; font: 16px sans-serif; }
  #menu { position: absolute; right: 0; bottom: 0; width: 300px; height: 200px; will-change: transform;
          background: #fff; border: 1px solid #ddd; }
  #top { position: fixed; right: 16px; bottom: 16px; width: 44px; height: 44px; border-radius: 5.6px; display: none;
         background: rgba(90, 92, 105, .5); color: #fff; text-align: center; line-height: 44px; }
</style><div id="menu">Menu</div><a id="top">^</a><script>
  window.mutations = 0;
  new MutationObserver(list => { window.mutations += list.length; })
    .observe(document, {subtree: true, childList: true, attributes: true});
</script>"""
SHOW = "(opacity) => { const top = document.getElementById('top'); top.style.display = 'block'; " \
       "top.style.opacity = opacity; }"
PAINTED = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 30))))"


def test_its_screenshots_do_not_depend_on_what_was_painted_before(browser, tmp_path: Path):
    """A button painted half-faded before it reached opacity 1 gives the same pixels as one shown at 1
    straight away, and the page sees no DOM change for it (its style sheets are as they were)."""
    shots, left_behind = [], []
    for fades in ((), ("0.2", "0.5", "0.8")):
        with page_session(browser, make_site(tmp_path, FADE_PAGE), 400, 300, clock=None) as session:
            page = session.page
            for opacity in (*fades, "1"):
                page.evaluate(SHOW, opacity)
                page.evaluate(PAINTED)  # real frames paint each state, as they fall between a fade's timers
            before = page.evaluate("window.mutations")
            shots.append(_pixels(session.screenshot()))
            # DOM changes the page saw during the screenshot, and style sheets still adopted after it
            left_behind.append(page.evaluate("(before) => [window.mutations - before, "
                                             "document.adoptedStyleSheets.length]", before))
    assert shots[0] == shots[1]
    assert left_behind == [[0, 0], [0, 0]]


def _pixels(png: bytes) -> bytes:
    return Image.open(io.BytesIO(png)).convert("RGB").tobytes()


def test_an_action_s_frame_bound_events_run_before_page_time_moves(browser, tmp_path: Path):
    """A scroll handler (dispatched on the next frame) that starts a timer sees it fire in the same clock step."""
    html = """<body style="height: 4000px"><p id="top" hidden>Back to top</p><script>
      addEventListener('scroll', () => setTimeout(() => document.getElementById('top').hidden = false, 300));
    </script></body>"""
    shown = []
    for _ in range(3):
        with page_session(browser, make_site(tmp_path, html), W, H) as session:
            session.page.evaluate("scrollBy(0, 500)")
            session.after_action()
            shown.append(session.page.evaluate("!document.getElementById('top').hidden"))
    assert shown == [True, True, True]


def test_a_key_that_scrolls_the_page_lands_at_once(browser, tmp_path: Path):
    """Arrow and Page Down scroll a page that does not handle them by their whole step before the next read."""
    site = make_site(tmp_path, "<body style='height: 6000px'><p>Top</p></body>")
    with page_session(browser, site, W, H) as session:
        page = session.page
        page.keyboard.press("ArrowDown")
        after_arrow = page.evaluate("scrollY")
        page.keyboard.press("PageDown")
        after_page = page.evaluate("scrollY")
        page.wait_for_timeout(300)  # an animated scroll would still be moving here
        assert 0 < after_arrow < after_page == page.evaluate("scrollY")


def test_a_json_page_returns_exactly_what_playwright_returns(browser, tmp_path: Path):
    """Through JSON or not, page functions and expressions give the same Python values and the same errors."""
    scripts = [
        ("({n}) => ({list: [1, 2.5, 'x', null, undefined, true], deep: [{a: n}], gone: undefined})", {"n": 3}),
        ("async () => ({negative_zero: -0, nan: NaN, big: 1e300 * 10})", None),
        ("document.title", None),
        ("() => undefined", None),
        ("() => 'caf\u00e9 \ud83d\ude00'", None),
    ]
    with page_session(browser, make_site(tmp_path, "<title>T</title><p>x</p>"), W, H) as session:
        page, wrapped = session.page, JsonPage(session.page)
        for script, arg in scripts:
            assert repr(wrapped.evaluate(script, arg)) == repr(page.evaluate(script, arg)), script
        with pytest.raises(Exception, match="boom"):
            wrapped.evaluate("() => { throw new Error('boom'); }")
        assert wrapped.evaluate_handle("() => document.body").as_element() is not None
        assert wrapped.url == page.url


def test_it_takes_viewport_screenshots_and_records_video(browser, tmp_path: Path):
    """Screenshots are exactly the viewport; the video file exists only once the context is closed."""
    site = make_site(tmp_path, "<body style='height:5000px;background:#00f'><input autofocus></body>")
    with page_session(browser, site, W, H, video_dir=tmp_path / "video") as session:
        shot = Image.open(io.BytesIO(session.screenshot(tmp_path / "shot.png")))
        inside = session.video_path
    assert shot.size == (W, H) and (tmp_path / "shot.png").is_file()
    assert inside is None and session.video_path is not None and session.video_path.stat().st_size > 0


def test_it_unblocks_a_hung_page_by_killing_its_renderers(browser, tmp_path: Path):
    """A click into an infinite loop returns (with an error) once the renderers are killed."""
    site = make_site(tmp_path, "<button onclick='while (true) {}'>Hang</button>")
    with page_session(browser, site, W, H) as session:
        timer = threading.Timer(1.0, browser.kill_renderers)
        timer.start()
        begin = time.monotonic()
        with pytest.raises(Exception, match="crash|closed|Target"):
            session.page.click("button", timeout=20000)
            session.page.evaluate("1")
        timer.join()
    assert time.monotonic() - begin < 10 and session.crashed
    with page_session(browser, make_site(tmp_path / "next", "<p>fine</p>"), W, H) as session:
        assert session.page.inner_text("p") == "fine"


@pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop applies when the evaluator runs as root")
def test_chromium_runs_unprivileged_with_its_own_sandbox(browser, tmp_path: Path):
    """As root, every Chromium process runs as iwr-sandbox and renderers are seccomp-filtered."""
    import pwd

    with page_session(browser, make_site(tmp_path, "<p>x</p>"), W, H):
        pids = [browser.pid, *browser.descendant_pids()]
        renderers = browser.renderer_pids()
        uids = {_status(pid, "Uid").split()[0] for pid in pids if _status(pid, "Uid")}
        seccomp = {_status(pid, "Seccomp") for pid in renderers}
    assert uids == {str(pwd.getpwnam("iwr-sandbox").pw_uid)}
    assert renderers and seccomp == {"2"}


def _status(pid: int, field: str) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def test_it_settles_across_a_navigation_to_a_sibling_page(browser, tmp_path: Path):
    """A click that loads another page of the bundle settles on the new document."""
    site = make_site(tmp_path, '<a id="next" href="second.html">Next</a>', {"second.html": "<h1>Second</h1>"})
    with page_session(browser, site, W, H) as session:
        session.page.click("#next", no_wait_after=True)
        session.settle()
        assert session.page.url == "http://iwr.test/second.html"
        assert session.page.inner_text("h1") == "Second"


def test_driver_compile_cache_is_filled_once_and_then_read(tmp_path, monkeypatch):
    """warm_driver_cache (set-up) stores Playwright's compiled driver; later driver starts accept it,
    even from a folder they cannot write (jobs read it from their sandbox)."""
    import subprocess

    from playwright._impl._driver import compute_driver_executable

    from evaluator.browser import NODE_COMPILE_CACHE_ENV, warm_driver_cache

    cache = tmp_path / "node-compile"
    monkeypatch.setenv(NODE_COMPILE_CACHE_ENV, str(cache))
    assert warm_driver_cache() == cache
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries and sum(p.stat().st_size for p in entries) > 100_000  # the bundles, not an empty folder
    env = {**os.environ, NODE_COMPILE_CACHE_ENV: str(cache), "NODE_DEBUG_NATIVE": "COMPILE_CACHE"}
    node, cli = compute_driver_executable()
    sealed = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", node, cli,
                             "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert sealed.returncode == 0, sealed.stderr
    assert "coreBundle.js was accepted" in sealed.stderr


def test_launch_points_playwright_at_the_project_compile_cache():
    """Without an explicit NODE_COMPILE_CACHE, the driver of every launch reads the set-up's cache."""
    import subprocess
    import sys

    from evaluator.browser import DRIVER_CACHE, NODE_COMPILE_CACHE_ENV, REPO_ROOT

    probe = ("import os; from evaluator.browser import launch\n"
             "with launch() as b:\n"
             "    print(b.pw_browser.is_connected(), os.environ['NODE_COMPILE_CACHE'])\n")
    env = {k: v for k, v in os.environ.items() if k != NODE_COMPILE_CACHE_ENV}
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", str(DRIVER_CACHE)]

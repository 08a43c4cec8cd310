"""iwr-det-3's page clock: CSS animations on page time, frame ticks aligned with Date, clock steps as one task.

Each test sets up the race that made scores differ between runs on a busy machine and shows the
order it now always ends in; under iwr-det-2's settle rules (animations in real time) the same page
shows the real-time behaviour, so each test can fail.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from evaluator.page_session import FIXED_TIME_S, page_session
from evaluator.protocols import get_protocol
from tests.evaluator.test_browser import make_site

pytestmark = pytest.mark.browser

W, H = 480, 320
DET3 = get_protocol("iwr-det-3").params["settle"]
DET2 = get_protocol("iwr-det-2").params["settle"]

# A 400 ms transition whose end handler marks the box, and a 600 ms timer that reads the mark: in page
# time the transition ends first; the timer must see it ended.
RACE = """<div id="box" style="width:10px;height:10px;background:red;transition:width 400ms linear"></div>
<button onclick="go()">Go</button><script>
  const box = document.getElementById('box');
  let start = 0;
  box.addEventListener('transitionend', () => { box.dataset.ended = Date.now() - start; });
  function go() {
    start = Date.now();
    box.style.width = '200px';
    setTimeout(() => { document.body.dataset.seen = box.dataset.ended ? 'ended' : 'running'; }, 600);
  }
</script>"""


def test_a_transition_does_not_move_in_real_time(browser, tmp_path: Path):  # noqa: F811
    with page_session(browser, make_site(tmp_path, RACE), W, H, settle_params=DET3) as session:
        session.page.click("button")
        time.sleep(0.6)  # real time: nothing animates
        assert session.page.evaluate("document.getAnimations().map(a => a.currentTime)") == [0]
        assert session.page.evaluate("getComputedStyle(box).width") == "10px"


def test_a_transition_ends_in_page_time_before_a_later_timer(browser, tmp_path: Path):  # noqa: F811
    with page_session(browser, make_site(tmp_path, RACE), W, H, settle_params=DET3) as session:
        session.page.click("button")
        session.after_action()
        seen = session.page.evaluate("[document.body.dataset.seen, box.dataset.ended, getComputedStyle(box).width]")
    assert seen[0] == "ended" and seen[2] == "200px"
    # Its end came at 400 ms of page time, exactly (the clock step stopped there).
    assert int(seen[1]) == 400


# The same race with a 5 s transition: however slow the machine, far less than 5 s of real time passes
# between the click and the clock step whose timer reads the mark (with 400 ms, a loaded machine ended it).
RACE_SLOW = RACE.replace("transition:width 400ms", "transition:width 5s")


def test_in_real_time_the_same_page_races(browser, tmp_path: Path):  # noqa: F811
    """iwr-det-2: the transition runs in real time while page time stands still, so after the clock step's
    600 ms timer it is still running (a few real ms have passed): the page's order depends on real time."""
    assert RACE_SLOW != RACE
    with page_session(browser, make_site(tmp_path, RACE_SLOW), W, H, settle_params=DET2) as session:
        session.page.click("button")
        session.page.evaluate("0")
        session.advance_clock()
        assert session.page.evaluate("document.body.dataset.seen") == "running"


FRAMES = """<script>
  window.frames_at = [];
  const tick = () => { frames_at.push(Date.now() - PAUSED); if (frames_at.length < 5) requestAnimationFrame(tick); };
  document.addEventListener('click', () => requestAnimationFrame(tick));
</script><button>Go</button>""".replace("PAUSED", str(int(FIXED_TIME_S * 1000)))


def test_animation_frames_fall_on_the_same_date_on_every_run(browser, tmp_path: Path):  # noqa: F811
    """The frame ticks count from the moment the clock was paused: frames come every 16 ms of page time at
    the same Date.now() on every run (a few real ms apart from run to run without the alignment)."""
    runs = []
    for _ in range(3):
        with page_session(browser, make_site(tmp_path, FRAMES), W, H, settle_params=DET3) as session:
            assert session.page.evaluate("performance.now()") == session.page.evaluate("Date.now()") - \
                FIXED_TIME_S * 1000
            session.page.click("button")
            session.after_action()
            runs.append(session.page.evaluate("frames_at"))
    assert runs[0] == runs[1] == runs[2]
    assert all(at % 16 == 0 for at in runs[0]) and len(runs[0]) == 5


SCROLLER = """<div id="s" style="width:200px;height:50px;overflow:auto;white-space:nowrap">
<div style="width:2000px;height:40px"></div></div><button>Go</button><script>
  const s = document.getElementById('s');
  window.scrolled_at = [];
  s.addEventListener('scroll', () => scrolled_at.push(Date.now() - PAUSED));
  document.querySelector('button').addEventListener('click', () => {
    let n = 0;
    const step = () => { s.scrollLeft += 20; if (++n < 30) setTimeout(step, 10); };
    setTimeout(step, 10);
  });
</script>""".replace("PAUSED", str(int(FIXED_TIME_S * 1000)))


def test_a_clock_step_runs_as_one_task(browser, tmp_path: Path):  # noqa: F811
    """Timers scrolling a box all through a clock step: the real frame that dispatches the scroll events
    comes after the step, so every run sees one scroll event, at the step's end."""
    runs = []
    for _ in range(3):
        with page_session(browser, make_site(tmp_path, SCROLLER), W, H, settle_params=DET3) as session:
            start = session.page.evaluate("Date.now()") - FIXED_TIME_S * 1000
            session.page.click("button")
            session.after_action()
            runs.append([at - start for at in session.page.evaluate("scrolled_at")])
    assert runs[0] == runs[1] == runs[2] == [DET3["clock_step_ms"]]

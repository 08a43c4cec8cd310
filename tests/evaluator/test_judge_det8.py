"""Protocol iwr-det-8's mechanisms (issue 14, found on the tuning half's toast demo and phone theme settings):
a named element's clause seen not done fails its step, and a click that scrolled to reach its target is judged
from the view it reached; and that iwr-det-7 still decides as it did."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from evaluator.judges.assertion import judge
from evaluator.judges.pixels import outside_change_fraction
from evaluator.judges.reference import RefDelta
from evaluator.judges.state import PageState, Reached
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page
from tests.evaluator.test_judge_det3 import _png, _reference, _state

DET7 = get_protocol("iwr-det-7").params
DET8 = get_protocol("iwr-det-8").params

# --------------------------------------------------------------------------- element clauses decide

TICK_BOX, OPTION_BOX = [10, 10, 40, 20], [10, 60, 40, 20]


def _options(tick: str, option: str) -> list[dict]:
    return [{"name": "Close Button", "box": TICK_BOX, "state": tick},
            {"name": "Add behavior on close", "box": OPTION_BOX, "state": option}]


def _both_changed_reference(tmp_path) -> RefDelta:
    """The reference ticked the box and enabled the option below it: its pixels changed at both places."""
    before, after = tmp_path / "ref_0.png", tmp_path / "ref_1.png"
    before.write_bytes(_png())
    both = Image.open(io.BytesIO(_png(box=TICK_BOX))).convert("RGB")
    both.paste(Image.new("RGB", (OPTION_BOX[2], OPTION_BOX[3]), (0, 0, 0)), (OPTION_BOX[0], OPTION_BOX[1]))
    buffer = io.BytesIO()
    both.save(buffer, format="PNG")
    after.write_bytes(buffer.getvalue())
    return RefDelta(changed=True, source="reference", scrolled=False, detail={"pixel_fraction": 0.08},
                    texts=("Close Button Add behavior on close", "Close Button Add behavior on close"),
                    images=(before, after))


ASSERTION = "'Close Button' is ticked, and 'Add behavior on close' below it is no longer greyed out"


def _tick(before: PageState, after: PageState, reference: RefDelta, params):
    return judge(Act("Click", "Tick the 'Close Button' checkbox", logical_assertion=ASSERTION), before, after,
                 reference, params)


def test_a_named_element_left_as_it_was_fails_the_step(tmp_path):
    """A snapshot ticks the box natively but leaves the option greyed out: half the phrases held, which passed
    under iwr-det-7; under iwr-det-8 the option's clause, seen not done, fails the step."""
    reference = _both_changed_reference(tmp_path)
    before = _state(_options("checkbox", "checkbox;disabled"), _png(), text="Close Button Add behavior on close")
    ticked = _state(_options("checkbox;checked", "checkbox;disabled"), _png(box=TICK_BOX),
                    text="Close Button Add behavior on close")
    assert _tick(before, ticked, reference, DET7).passed
    verdict = _tick(before, ticked, reference, DET8)
    assert not verdict.passed and verdict.evidence["elements_not_done"] == ["add behavior on close"]


def test_both_elements_done_pass(tmp_path):
    reference = _both_changed_reference(tmp_path)
    before = _state(_options("checkbox", "checkbox;disabled"), _png(), text="Close Button Add behavior on close")
    done = _state(_options("checkbox;checked", "checkbox"), _png(box=TICK_BOX),
                  text="Close Button Add behavior on close")
    assert _tick(before, done, reference, DET8).passed


def test_an_element_the_reference_left_alone_decides_nothing(tmp_path):
    """Where the reference's pixels did not change at the element (or its change was not measured, as where it
    scrolled), a failing element clause is outvoted as before."""
    reference = _reference(tmp_path, TICK_BOX)  # only the box changed in the reference
    before = _state(_options("checkbox", "checkbox;disabled"), _png(), text="Close Button Add behavior on close")
    ticked = _state(_options("checkbox;checked", "checkbox;disabled"), _png(box=TICK_BOX),
                    text="Close Button Add behavior on close")
    verdict = _tick(before, ticked, reference, DET8)
    assert "elements_not_done" not in verdict.evidence
    scrolled = _reference(tmp_path, [10, 10, 40, 80], scrolled=True)
    assert "elements_not_done" not in _tick(before, ticked, scrolled, DET8).evidence


# --------------------------------------------------------------------------- a click that scrolled to reach

THUMB_BOX = (20, 40, 60, 30)
FRAME = "The dark thumbnail now has the gold frame"


def _view(scroll: float, dom: str = "a", mark: list | None = None) -> PageState:
    """The page at a scroll position: the screenshot shows what is in view (a mark where the frame is)."""
    shot = _png(size=(200, 100), box=mark, fill=(200, 160, 0)) if mark else _png(size=(200, 100), rgb=(240, 240, 240))
    return PageState(url="http://iwr.test/", text="Theme Light Dark", blocks=[{"text": "Theme Light Dark"}],
                     dom_hash=dom, scroll=(0.0, scroll), screenshot=shot)


def _scrolled_reference() -> RefDelta:
    return RefDelta(changed=True, source="reference", scrolled=True, detail={"pixel_fraction": 0.93},
                    added=["theme"], removed=["navigation"])


def _tap(before, after, reached, params, assertion=FRAME):
    action = Act("Click", "Tap the dark theme thumbnail", logical_assertion=assertion)
    return judge(action, before, after, _scrolled_reference(), params, reached=reached)


def _reached(scroll: float = 600.0) -> Reached:
    return Reached(_view(scroll).screenshot, (0.0, scroll), THUMB_BOX)


def test_a_click_that_only_scrolled_to_its_target_fails():
    """The copy swallowed the tap: after reaching the thumbnail nothing changed. iwr-det-7 took the scroll for
    the change; iwr-det-8 judges from the reached view."""
    before, after = _view(0.0), _view(600.0)
    assert _tap(before, after, _reached(), DET7).passed
    verdict = _tap(before, after, _reached(), DET8)
    assert not verdict.passed and verdict.evidence["idle_after_reaching"] is True


def test_a_click_that_did_something_after_reaching_passes():
    """The frame moved (its DOM changed), or only pixels outside the target changed: the click did something."""
    before = _view(0.0)
    assert _tap(before, _view(600.0, dom="b"), _reached(), DET8).passed
    framed = _view(600.0, mark=[100, 10, 80, 80])  # something drawn outside the thumbnail
    assert _tap(before, framed, _reached(), DET8).passed


def test_a_hover_shade_on_the_target_is_no_effect():
    """Pixels inside the target's box (the pointer's hover shade) do not count as the click's effect."""
    hovered = _view(600.0, mark=[THUMB_BOX[0], THUMB_BOX[1], THUMB_BOX[2], THUMB_BOX[3]])
    assert not _tap(_view(0.0), hovered, _reached(), DET8).passed


def test_only_where_the_assertion_claims_a_change():
    """A state that merely holds ('The Dark thumbnail is shown') and a page that scrolled after the click (an
    in-page link) are judged as before; so is a click whose target was in view (nothing reached)."""
    before, after = _view(0.0), _view(600.0)
    assert "idle_after_reaching" not in _tap(before, after, _reached(), DET8,
                                             assertion="The 'Dark' thumbnail is shown").evidence
    assert "idle_after_reaching" not in _tap(before, _view(900.0), _reached(), DET8).evidence
    assert "idle_after_reaching" not in _tap(before, after, None, DET8).evidence


def test_outside_change_fraction_leaves_the_box_out():
    plain, marked = _png(size=(200, 100)), _png(size=(200, 100), box=[20, 40, 60, 30])
    assert outside_change_fraction(plain, marked, [20, 40, 60, 30], scale=1.0, pad=0) == 0.0
    assert outside_change_fraction(plain, marked, [120, 40, 20, 20], scale=1.0, pad=0) == pytest.approx(
        1800 / (20000 - 400))
    assert outside_change_fraction(plain, None, [0, 0, 1, 1]) is None


@pytest.mark.browser
def test_the_replay_reaches_an_out_of_view_target_first(browser):
    """In a real page: a thumbnail below the view is scrolled into view, and the view there is kept; a target in
    view reaches nothing."""
    from types import SimpleNamespace

    from evaluator.replay import _reach

    with open_page(browser, "drawn_icons.html") as page:
        page.set_viewport_size({"width": 390, "height": 300})
        page.evaluate("() => { document.body.style.paddingBottom = '2000px'; scrollTo(0, 0); }")
        session = SimpleNamespace(page=page, screenshot=lambda: page.screenshot())
        far = page.evaluate_handle("() => { const b = document.createElement('button'); b.textContent = 'Far';"
                                   " b.style.position = 'absolute'; b.style.top = '1500px';"
                                   " document.body.appendChild(b); return b; }").as_element()
        reached = _reach(session, SimpleNamespace(handle=far))
        assert reached is not None and reached.scroll[1] > 1000
        assert 0 <= reached.box[1] < 300 and reached.screenshot[:4] == b"\x89PNG"
        near = page.evaluate_handle("() => { scrollTo(0, 0); const b = document.createElement('button');"
                                    " b.textContent = 'Near'; b.style.position = 'absolute'; b.style.top = '5px';"
                                    " document.body.appendChild(b); return b; }").as_element()
        assert _reach(session, SimpleNamespace(handle=near)) is None

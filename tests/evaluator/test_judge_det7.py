"""Protocol iwr-det-7's mechanisms (issue 14, found on the tuning half's off-canvas menu pages): icons
drawn in CSS, pictures placed by a heading, ordinals counted among the look-alikes a relation places;
and that iwr-det-6 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.params import TargetingParams
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page
from tests.evaluator.test_judge_det3 import chosen

DET6 = get_protocol("iwr-det-6").params
DET7 = get_protocol("iwr-det-7").params


@pytest.fixture(scope="module")
def icons_page(browser):
    with open_page(browser, "drawn_icons.html") as page:
        yield page


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted"), [
    ("Click the hamburger icon (three bars) next to 'Toggle Navigation'", "toggle"),
    ("Tap the menu icon beside the words 'Toggle Navigation'", "toggle"),
    ("Tap the dark theme thumbnail, the second small picture under Theme", "dark"),
    ("Click the first picture under Theme", "light"),
])
def test_iwr_det_7_finds_drawn_icons_and_placed_pictures(icons_page, text, wanted):
    assert chosen(icons_page, text, DET7) == wanted


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted"), [
    ("Click the hamburger icon (three bars) next to 'Toggle Navigation'", "toggle"),
    ("Tap the dark theme thumbnail, the second small picture under Theme", "dark"),
])
def test_iwr_det_6_missed_them(icons_page, text, wanted):
    """The defects iwr-det-7 fixes, as iwr-det-6 still scores them: another element, or none."""
    assert chosen(icons_page, text, DET6) != wanted


@pytest.mark.browser
def test_three_stacked_empty_marks_draw_bars_too(icons_page):
    """Three thin empty siblings stacked in a button are bars as well (a 'More' label names no glyph)."""
    target = find_target(icons_page, Act("Click", "Click the three bars button"), DET7)
    assert target.chosen["id"] == "stack"


@pytest.mark.browser
def test_a_single_thin_rule_draws_no_glyph(icons_page):
    """One thin painted line is a rule, not three bars: the link drawing it gets no glyph match."""
    from evaluator.agents.targeting import candidates_js

    data = icons_page.evaluate(candidates_js(), {"drawnGlyphs": True, "maxCandidates": 100})
    drawn = {c["id"]: c.get("drawn") for c in data["candidates"]}
    assert drawn["toggle"] == ["bars"] and drawn["stack"] == ["bars"]
    assert drawn["rule"] == [] and drawn["repo"] == [] and drawn["dark"] == []


@pytest.mark.browser
def test_older_protocols_collect_no_drawn_glyphs(icons_page):
    """The collection script adds the field only when asked, so iwr-det-6's candidates are unchanged."""
    from evaluator.agents.targeting import candidates_js

    data = icons_page.evaluate(candidates_js(), {"maxCandidates": 100})
    assert all("drawn" not in c for c in data["candidates"])


def test_the_new_settings_are_iwr_det_7s_only():
    p6, p7 = TargetingParams.from_dict(DET6), TargetingParams.from_dict(DET7)
    for name in ("drawn_glyphs", "picture_anchor_words", "placed_look_alikes"):
        assert getattr(p7, name) is True and getattr(p6, name) is False

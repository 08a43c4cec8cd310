"""Protocol iwr-det-16's mechanism (issue 14, found on the tuning half's responsive navigation bar, whose phone copy
with a '-' box that no longer folded the menu passed that step): a control found by a glyph that a textless part of
it draws is clicked on that part, where a person taps, not at its middle."""

from __future__ import annotations

import pytest

from evaluator.agents.actions import perform
from evaluator.agents.glyphs import glyph_point
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET15 = get_protocol("iwr-det-15").params
DET16 = get_protocol("iwr-det-16").params


def _click(page, description: str, params) -> tuple[str, object]:
    """Find and click what ``description`` names; what the page says was used, and the point clicked."""
    action = Act("Click", description)
    target = find_target(page, action, params["targeting"])
    assert target.found, target.reason
    done, why = perform(page, action, target, params["targeting"])
    assert done, why
    return page.text_content("#used"), target.point


@pytest.mark.browser
def test_the_plus_box_is_clicked_on_the_box_not_at_the_links_middle(browser):
    """Before, 'the plus box' found the link drawing it and clicked the link's middle (its words): the box's own
    handler never ran. Now the click lands on the box, and the minus box after it folds the list again."""
    with open_page(browser, "glyph_box.html", width=380, height=600) as page:
        used, point = _click(page, "Tap the plus box next to 'Products'", DET15)
        assert (used, point) == ("link", None)
        used, point = _click(page, "Tap the plus box next to 'Products'", DET16)
        assert used == "fold box" and point is not None
        assert page.is_visible("#laptops")
        box = page.eval_on_selector("#products", "a => a.getBoundingClientRect().width")
        assert point[0] > box / 2  # the box sits at the link's right end
        used, _ = _click(page, "Tap the minus box next to 'Products'", DET16)
        assert used == "fold box" and not page.is_visible("#laptops")
        assert page.eval_on_selector("#products", "a => a.parentElement.className") == "parent"


@pytest.mark.browser
def test_a_control_named_by_its_words_or_drawing_the_glyph_itself_is_clicked_at_its_middle(browser):
    """The point is only for a glyph a part draws: 'Products' by its words, and a close control whose own box
    draws its ×, are clicked as before."""
    with open_page(browser, "glyph_box.html", width=380, height=600) as page:
        assert _click(page, "Tap 'Products'", DET16) == ("link", None)
        assert _click(page, "Tap the × close button", DET16) == ("close", None)


def test_the_point_is_the_first_part_drawing_the_glyph_shown_or_named():
    points = [["»", 3, 4], ["-", 10.5, 20], ["+", 30, 40]]
    assert glyph_point([], ["minus"], points) == (10.5, 20.0)
    assert glyph_point(["+"], [], points) == (30.0, 40.0)
    assert glyph_point([], ["plus", "minus"], points) == (10.5, 20.0)
    assert glyph_point([], ["bars"], points) is None
    assert glyph_point(["+"], ["plus"], None) is None

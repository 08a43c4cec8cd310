"""Protocol iwr-det-13's mechanism (issue 14, found on the tuning half's colour picker page, whose dev task's
reference failed its step 2 under every earlier version): a row said to be "of" something is a row of that grid,
counted among the elements of the best matches' kind, not among the look-alikes by words. A bare row is counted as
before, and iwr-det-12 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.params import TargetingParams
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET12 = get_protocol("iwr-det-12").params
DET13 = get_protocol("iwr-det-13").params


# The squares' ids say nothing (an id's words count as a name): c1-c3 greys, c4 dark red, c5 bright red, c6 blue,
# c7 pale red, c8 pink, c9 pale blue; the palette's first row has no red.
BRIGHT_RED, PALE_RED = "c5", "c7"


def _square(page, description: str, params) -> str:
    target = find_target(page, Act("Click", description), params)
    assert target.found
    return target.handle.evaluate("el => el.id")


@pytest.mark.browser
def test_the_second_row_of_colours_is_the_palettes_not_the_red_squares(browser):
    """The palette's first row has no red: counted among the red squares (and the red 'cancel' link), the second
    row is the pale tints'."""
    description = "Click the bright red square, the second one in the second row of colours"
    with open_page(browser, "palette_rows.html") as page:
        assert _square(page, description, DET12) != BRIGHT_RED
        assert _square(page, description, DET13) == BRIGHT_RED
        assert _square(page, "Click the first one in the third row of colours, a pale red", DET13) == PALE_RED


@pytest.mark.browser
def test_a_bare_row_is_counted_among_the_look_alikes_as_before(browser):
    """The top row of the red squares is the palette's second: counted in the palette's grid it would be the greys'."""
    description = "Click the second red square in the top row"
    with open_page(browser, "palette_rows.html") as page:
        assert _square(page, description, DET13) == _square(page, description, DET12) == BRIGHT_RED


@pytest.mark.parametrize(("text", "named"), [
    ("Click the bright red square, the second one in the second row of colours", True),
    ("Click 14 in the third row of the calendar", True),
    ("Click 'Jun' in the second row of months", True),
    ("Click the photo of yellow toy heads, in the middle of the bottom row", False),
    ("Click the middle photo of the top row (the swing)", False),
    ("Click the second row of 'Results'", False),
])
def test_a_row_of_something_names_its_grid(text, named):
    assert parse_description(text, params=TargetingParams.from_dict(DET13)).grid_of is named
    assert not parse_description(text, params=TargetingParams.from_dict(DET12)).grid_of


def _chosen(page, description: str, params) -> str | None:
    target = find_target(page, Act("Click", description), params)
    return target.handle.evaluate("el => el.id") if target.found else None


@pytest.mark.browser
def test_a_colour_box_is_a_box_showing_a_colour_not_a_text_box(browser):
    with open_page(browser, "picker_panel.html") as page:
        assert _chosen(page, "Click the colour box under 'Result'", DET12) != "box1"  # the text field
        assert _chosen(page, "Click the colour box under 'Result'", DET13) == "box1"
        assert _chosen(page, "Click the small colour box with an arrow", DET13) == "box1"


def test_swatch_words_said_of_an_anchor_keep_their_reading():
    params = TargetingParams.from_dict(DET13)
    target = parse_description("Click the small colour box with an arrow", params=params)
    assert target.swatch and not target.roles - {"arrow"} and "colour" not in target.content
    anchor = parse_description("Click 'OK' below the colour box", params=params)
    old = parse_description("Click 'OK' below the colour box", params=TargetingParams.from_dict(DET12))
    assert not anchor.swatch and anchor.relations[0].to_dict() == old.relations[0].to_dict()


def _without(setting: str) -> dict:
    return {**DET13, "targeting": {**DET13["targeting"], setting: False}}


@pytest.mark.browser
def test_an_anchor_in_view_is_the_one_meant(browser):
    """Two colour boxes, each under a 'Result': scrolled to the second, its 'Result' is the anchor in view."""
    with open_page(browser, "picker_panel.html") as page:
        assert _chosen(page, "Click the colour box under 'Result'", DET13) == "box1"
        page.evaluate("() => document.getElementById('box2').scrollIntoView({block: 'center'})")
        assert _chosen(page, "Click the colour box under 'Result'", DET13) == "box2"
        assert _chosen(page, "Click the colour box under 'Result'", _without("view_anchors")) == "box1"


@pytest.mark.browser
def test_the_example_code_is_the_code_block_in_view(browser):
    """No element says 'example code': the code block in view is the anchor, and the box below it is meant."""
    with open_page(browser, "picker_panel.html") as page:
        page.evaluate("() => document.getElementById('box3').scrollIntoView({block: 'center'})")
        assert _chosen(page, "Tap the small colour box with an arrow below the example code", DET13) == "box3"
        assert _chosen(page, "Tap the small colour box with an arrow below the example code",
                       _without("code_anchors")) == "box1"
        params = TargetingParams.from_dict(DET13)
        assert parse_description("Click the box below the example code", params=params).relations[0].role == "code"
        assert parse_description("Click the box below the example code",
                                 params=TargetingParams.from_dict(DET12)).relations[0].role is None


@pytest.mark.browser
def test_an_element_named_by_the_control_inside_it_ranks_below_that_control(browser):
    """The panel (c2) listens for clicks and says only 'more', its button's (c1) word; its box lies nearer 'Palette'."""
    with open_page(browser, "picker_panel.html") as page:
        assert _chosen(page, "Click 'more' under the palette", DET12) == "c2"
        assert _chosen(page, "Click 'more' under the palette", DET13) == "c1"

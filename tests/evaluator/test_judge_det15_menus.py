"""Protocol iwr-det-15's mechanisms (issue 14, found on the tuning half's responsive navigation bar, whose two
reference pages failed under iwr-det-14): a symbol CSS writes as generated content is a glyph the control shows and
'the plus box' names the control drawing it; 'the heading' names the page's heading; 'again' repeats only an element
of the kind named; and an ordinal past the look-alikes a relation places counts the page's look-alikes."""

from __future__ import annotations

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.params import TargetingParams
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET14 = get_protocol("iwr-det-14").params
DET15 = get_protocol("iwr-det-15").params


def _without(setting: str) -> dict:
    """iwr-det-15's params with one of its targeting settings off."""
    params = get_protocol("iwr-det-15").params
    params["targeting"][setting] = False
    return params


def _chosen(page, description: str, params) -> str | None:
    """The id of the chosen element (or of the link it lies in); None when nothing was found."""
    target = find_target(page, Act("Click", description), params)
    return target.handle.evaluate("el => (el.closest('a') || el).id") if target.found else None


@pytest.mark.browser
def test_the_plus_box_next_to_a_label_is_the_parent_item_whose_css_writes_the_plus(browser):
    """The '+' of a parent item is its span's ::before content, which no text or class says: before, nothing
    showed a plus; now the item drawing it is found, and once open its '-' is the minus box."""
    with open_page(browser, "collapsible_nav.html") as page:
        assert _chosen(page, "Tap the plus box next to the first 'More'", DET14) is None
        assert _chosen(page, "Tap the plus box next to the first 'More'", DET15) == "more1"
        page.click("#more1")
        assert _chosen(page, "Tap the minus box next to 'More'", DET15) == "more1"
        assert _chosen(page, "Tap the plus box below 'Contact'", DET15) == "more2"


@pytest.mark.browser
def test_a_symbol_css_writes_is_a_weaker_match_than_the_character_a_control_shows(browser):
    """A tab drawing a ◀ in CSS names the left-arrow glyph, but '«' is what the month's button shows."""
    with open_page(browser, "collapsible_nav.html") as page:
        assert _chosen(page, "Tap the « arrow left of the month", DET15) == "prev"
        assert _chosen(page, "Tap the ◀ at the top right", DET15) == "settings-tab"


@pytest.mark.browser
def test_the_heading_is_a_target_although_nothing_listens_to_it(browser):
    """Clicking away from an open menu on the page's heading: before, a link was clicked instead."""
    with open_page(browser, "collapsible_nav.html") as page:
        assert _chosen(page, "Click the big heading 'Welcome to the shop'", DET14) != "title"
        assert _chosen(page, "Click the big heading 'Welcome to the shop'", DET15) == "title"
        assert _chosen(page, "Click 'Contact'", DET15) == "contact"
        assert _chosen(page, "Click the last heading in the menu, 'Contact'", DET15) == "contact"


@pytest.mark.browser
def test_again_repeats_the_previous_element_only_when_it_is_of_the_kind_named(browser):
    """'The three-bars button again' after tapping the plus box of 'Sub menu' (a link whose short label says
    'menu', as a three-bars button's name does) is the three-bars button, not that link."""
    with open_page(browser, "collapsible_nav.html") as page:
        assert _chosen(page, "Tap the three-bars button at the top right", DET15) == "toggler"
        assert _chosen(page, "Tap the plus box next to 'Sub menu'", DET15) == "submenu"
        assert _chosen(page, "Tap the three-bars button again", _without("repeat_kinds")) == "submenu"
        find_target(page, Act("Click", "Tap the plus box next to 'Sub menu'"), DET15)
        assert _chosen(page, "Tap the three-bars button again", DET15) == "toggler"
        find_target(page, Act("Click", "Tap the plus box next to 'Sub menu'"), DET15)
        assert _chosen(page, "Tap the same plus box again", DET15) == "submenu"


@pytest.mark.browser
def test_an_ordinal_past_what_a_relation_places_counts_the_pages_look_alikes(browser):
    """"The second 'More', below 'Contact'": the relation places one 'More'; before, 'second' picked nothing."""
    with open_page(browser, "collapsible_nav.html") as page:
        assert _chosen(page, "Tap the second 'More', below 'Contact'", _without("ordinals_past_placed")) == "more1"
        assert _chosen(page, "Tap the second 'More', below 'Contact'", DET15) == "more2"
        assert _chosen(page, "Tap the first 'More', below 'Home'", DET15) == "more1"


@pytest.mark.parametrize(("text", "roles"), [
    ("Tap the plus box next to 'Dropdown'", {"icon"}),
    ("Tap the minus box", {"icon"}),
    ("Click the search box", {"textbox"}),
    ("Click the text box", {"textbox"}),
    ("Click the big heading 'Welcome'", {"heading"}),
])
def test_glyph_boxes_and_headings_are_read_from_the_words(text, roles):
    desc = parse_description(text, params=TargetingParams.from_dict(DET15))
    assert desc.roles == roles
    assert "heading" not in parse_description(text, params=TargetingParams.from_dict(DET14)).roles

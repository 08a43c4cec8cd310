"""Protocol iwr-det-4's mechanisms (issue 14, found on the broadened tuning half): what each decides,
and that iwr-det-3 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.colours import HUE_ONLY, LOOK_MATCH, colour_names, is_mark, look_score
from evaluator.agents.description import parse_description
from evaluator.agents.glyphs import glyph_score
from evaluator.agents.params import TargetingParams
from evaluator.agents.scoring import attribute_tokens
from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import RefDelta, judge
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET3 = get_protocol("iwr-det-3").params
DET4 = get_protocol("iwr-det-4").params

BARS = {"tag": "button", "id": "sidebarToggleTop", "cls": "btn btn-link rounded-circle", "text": "",
        "icons": ["fa fa-bars"]}
KEBAB = {"tag": "a", "id": "dropdownMenuLink", "cls": "dropdown-toggle", "text": "",
         "icons": ["fas fa-ellipsis-v fa-sm"]}


def _glyph(description: str, cand: dict, params) -> float:
    p = TargetingParams.from_dict(params)
    desc = parse_description(description, params=p)
    return glyph_score(desc.glyphs, desc.concepts, cand, attribute_tokens(cand), p.glyph_shapes)


# --------------------------------------------------------------------------- glyph shapes


def test_three_bars_name_the_bars_icon_not_a_kebab_or_a_menu_id():
    """'The three-bar button' is the bars icon (0.9); a ⋮ whose id says 'menu' is only a generic menu."""
    assert _glyph("Tap the three-bar button", BARS, DET4) == 0.9
    assert _glyph("Tap the three-bar button", KEBAB, DET4) == 0.6
    assert _glyph("Open the hamburger menu", BARS, DET4) == 0.9


def test_three_dots_name_the_kebab():
    """'The three dots' and '⋮' are the ellipsis icon, which the bars toggle does not draw."""
    assert _glyph("Click the three dots on the card", KEBAB, DET4) == 0.9
    assert _glyph("Click the ⋮ on the card", KEBAB, DET4) == 0.9
    assert _glyph("Click the three dots on the card", BARS, DET4) == 0.0


def test_iwr_det_3_reads_bars_dots_and_menu_ids_as_one_glyph():
    """Under iwr-det-3 the bars toggle and the kebab score alike, as they always did."""
    assert _glyph("Tap the three-bar button", BARS, DET3) == _glyph("Tap the three-bar button", KEBAB, DET3) == 0.9
    assert parse_description("Tap the three-bar button", params=TargetingParams.from_dict(DET3)).concepts == ["menu"]


@pytest.fixture(scope="module")
def menus_page(browser):
    with open_page(browser, "menus.html") as page:
        yield page


@pytest.mark.browser
def test_the_three_bar_toggle_is_found_past_an_earlier_kebab(menus_page):
    """On a page whose card menu (⋮, id 'dropdownMenuLink') comes first, iwr-det-4 taps the bars toggle."""
    target = find_target(menus_page, Act("Click", "Tap the three-bar button again"), DET4)
    assert target.chosen["id"] == "sidebarToggleTop"
    target = find_target(menus_page, Act("Click", "Click the three dots next to 'Earnings Overview'"), DET4)
    assert target.chosen["id"] == "dropdownMenuLink"
    old = find_target(menus_page, Act("Click", "Tap the three-bar button again"), DET3)
    assert old.chosen["id"] != "sidebarToggleTop"  # the defect iwr-det-4 fixes


# --------------------------------------------------------------------------- unphrased text delta

SIDEBAR = "Dashboard Components Utilities Pages Charts Tables"


def _state(text: str, dom: str) -> PageState:
    return PageState(url="http://iwr.test/", text=text, blocks=[{"text": text}], dom_hash=dom)


def _sidebar_back() -> RefDelta:
    """The reference's sidebar came back: its labels were added, in place."""
    added = ["charts", "components", "dashboard", "pages", "tables", "utilities"]
    return RefDelta(added=added, changed=True, source="reference", scrolled=False, detail={"pixel_fraction": 0.3},
                    texts=("Earnings", SIDEBAR + " Earnings"))


def _judge(before, after, params):
    action = Act("Click", "Tap the three-bar button again",
                 logical_assertion="The sidebar with its icons is back on the left")
    return judge(action, before, after, _sidebar_back(), params)


def test_words_changed_unlike_the_reference_fail_an_unphrased_assertion():
    """A card menu opened (its items added) where the reference's sidebar labels came back: fails."""
    before = _state("Earnings", "a")
    after = _state("Earnings Dropdown Header Action Another action", "b")
    verdict = _judge(before, after, DET4)
    assert not verdict.passed
    assert verdict.evidence["other_words_changed"] is True
    assert "none of them as the reference's did" in verdict.reason
    assert _judge(before, after, DET3).passed  # iwr-det-3: any change passed


def test_words_changed_as_the_reference_or_not_at_all_are_judged_as_before():
    """The sidebar's labels back (or some of them), or a page whose words stayed (a class change): passes."""
    before = _state("Earnings", "a")
    assert _judge(before, _state(SIDEBAR + " Earnings", "b"), DET4).passed
    assert _judge(before, _state("Earnings Charts Tables Settings", "b"), DET4).passed
    assert _judge(before, _state("Earnings", "b"), DET4).passed


# --------------------------------------------------------------------------- colour words


@pytest.mark.parametrize("rgb, name", [
    ((94, 205, 222), "blue"), ((145, 230, 199), "green"), ((213, 149, 170), "pink"), ((224, 88, 79), "red"),
    ((68, 68, 68), "grey"), ((47, 47, 47), "black"), ((255, 255, 255), "white"), ((120, 70, 20), "brown"),
])
def test_painted_colours_are_named_as_people_name_them(rgb, name):
    """Hue bands, greys, black, white, brown; teal is both cyan and blue."""
    assert name in colour_names(*rgb)
    assert "red" not in colour_names(94, 205, 222)


def test_a_shape_noun_ending_the_phrase_is_the_head_and_hues_are_the_targets_own():
    """'The blue dot in the dark toolbar': dot is the head, blue the target's hue, the toolbar an anchor."""
    p = TargetingParams.from_dict(DET4)
    desc = parse_description("Click the blue dot in the dark toolbar at the top left", params=p)
    assert (desc.colours, desc.shapes, desc.content, desc.anchors) == (["blue"], ["dot"], [], ["toolbar"])
    assert parse_description("Click the small square button", params=p).shapes == []
    plain = "Tap the fourth dot in the row of dots under the carousel"  # no hue: read as iwr-det-3 reads it
    assert parse_description(plain, params=p).to_dict() == parse_description(
        plain, params=TargetingParams.from_dict(DET3)).to_dict()
    old = parse_description("Click the blue dot in the dark toolbar", params=TargetingParams.from_dict(DET3))
    assert (old.colours, old.content) == ([], ["dot", "toolbar"])


def test_a_dot_must_be_a_small_mark_of_the_hue():
    """A 14 px blue mark is 'the blue dot' (0.9); a card's blue 200 px edge only counts half."""
    desc = parse_description("Click the blue dot", params=TargetingParams.from_dict(DET4))
    assert look_score(desc, {"colours": [[68, 68, 68, 43, 43], [94, 205, 222, 14, 14]]}) == LOOK_MATCH
    assert look_score(desc, {"colours": [[94, 205, 222, 200, 128]]}) == HUE_ONLY
    assert look_score(desc, {"colours": [[224, 88, 79, 14, 14]]}) == 0.0
    assert is_mark(14, 14) and not is_mark(200, 8) and not is_mark(60, 60)


@pytest.fixture(scope="module")
def swatches_page(browser):
    with open_page(browser, "swatches.html") as page:
        yield page


@pytest.mark.browser
def test_a_coloured_mark_is_found_by_its_hue(swatches_page):
    """The filter buttons show only a coloured mark: 'the blue dot' is the Blue button, not the card
    whose class says blue; 'the green card' is the green-edged card; iwr-det-3 finds no dot."""
    blue_dot = Act("Click", "Click the blue dot in the dark toolbar")
    assert find_target(swatches_page, blue_dot, DET4).chosen["id"] == "f-blue"
    assert find_target(swatches_page, Act("Click", "Click the red dot"), DET4).chosen["id"] == "f-red"
    assert find_target(swatches_page, Act("Click", "Click the green card"), DET4).chosen["id"] == "c-green"
    old = find_target(swatches_page, blue_dot, DET3)
    assert not old.found or old.chosen["id"] != "f-blue"

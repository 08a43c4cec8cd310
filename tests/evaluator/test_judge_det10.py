"""Protocol iwr-det-10's mechanisms (issue 14, found on the tuning half's slide-in side menus, whose buttons show
three bars and hide their words): a number before a plural noun counts look-alikes and names nothing, and 'the
same icon again' is the element the previous action used; iwr-det-9 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.params import TargetingParams
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page
from tests.evaluator.test_judge_det3 import chosen

DET9 = get_protocol("iwr-det-9").params
DET10 = get_protocol("iwr-det-10").params


def _read(text: str, params=DET10):
    return parse_description(text, params=TargetingParams.from_dict(params))


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize(("text", "content"), [
    ("Tap the upper of the two menu icons on the left", ["menu"]),
    ("Click one of the 3 green tabs", ["one"]),
    ("Click the menu icon with three bars at the top left", ["bars"]),
])
def test_a_number_before_a_plural_noun_names_nothing(text, content):
    assert _read(text).content == content


@pytest.mark.parametrize(("text", "content"), [
    ("Click the 2 button", ["2"]),
    ("Click 'Dummy 2' in one of the two menus", []),
    ("Click the two", ["two"]),
])
def test_a_number_that_names_stays(text, content):
    """A number before a singular noun or at the end is a name ('the 2 button' of a calculator)."""
    assert _read(text).content == content


def test_iwr_det_9_read_the_count_as_the_name():
    assert _read("Tap the upper of the two menu icons on the left", DET9).content == ["two"]


def test_again_and_same_are_read_only_under_iwr_det_10():
    assert _read("Tap the same menu icon again, now pushed to the right of the panel").again
    assert _read("Tap that icon again to close the panel").again
    assert not _read("Tap the menu icon").again
    assert not _read("Tap that icon again", DET9).again


# --------------------------------------------------------------------------- the page


@pytest.fixture
def side_menus(browser):
    with open_page(browser, "side_menus.html", width=390, height=700) as page:
        yield page


def _click(page, text: str, params=DET10) -> str | None:
    target = find_target(page, Act("Click", text), params)
    if not target.found:
        return None
    target.handle.click()
    return target.chosen["id"]


@pytest.mark.browser
def test_the_upper_of_two_icons_is_found_by_its_words(side_menus):
    """The icons say 'Toggle menu' out of view; 'two' named nothing on the page, so iwr-det-9 found no icon."""
    assert chosen(side_menus, "Tap the upper of the two menu icons on the left", DET10) == "up"
    assert chosen(side_menus, "Tap the lower menu icon on the left", DET10) == "down"
    assert chosen(side_menus, "Tap the upper of the two menu icons on the left", DET9) is None


@pytest.mark.browser
def test_the_same_icon_again_is_the_one_the_previous_action_used(side_menus):
    """The open panel pushed the icon aside and 'now pushed' names nothing: the icon just tapped is the one."""
    assert _click(side_menus, "Tap the upper of the two menu icons on the left") == "up"
    assert side_menus.evaluate("document.body.className") == "open"
    again = "Tap the same menu icon again, now pushed to the right of the panel"
    assert chosen(side_menus, again, DET9) is None
    assert _click(side_menus, again) == "up"
    assert side_menus.evaluate("document.body.className") == ""
    # another icon, tapped and then tapped again by 'that icon'
    assert _click(side_menus, "Tap the lower menu icon on the left") == "down"
    assert _click(side_menus, "Tap that icon again to close the panel") == "down"


@pytest.mark.browser
def test_again_after_another_element_is_no_repeat(side_menus):
    """'Click the menu icon again' after a link of the panel: the link's words do not fit, the icon is taken."""
    assert _click(side_menus, "Tap the upper of the two menu icons on the left") == "up"
    assert _click(side_menus, "Click 'Dummy 2' in the dark panel") == "dummy"
    assert chosen(side_menus, "Click the upper menu icon again", DET10) == "up"

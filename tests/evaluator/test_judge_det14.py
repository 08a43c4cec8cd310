"""Protocol iwr-det-14's mechanisms (issue 14, found on the tuning half's carousel playground, whose two reference
pages failed at their first dot under iwr-det-13): a dot ending the target's noun phrase names a pager dot and is the
head a relation places; a picture noun said of an anchor finds the pictures, of the size its size word says; and
look-alikes drawn in one box (a dot's list item and its button) are counted once by an ordinal."""

from __future__ import annotations

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.params import TargetingParams
from evaluator.agents.relations import sized_anchors
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET13 = get_protocol("iwr-det-13").params
DET14 = get_protocol("iwr-det-14").params


def _chosen(page, description: str, params) -> str | None:
    """The id of the chosen element, or of the dot (list item) it lies in; None when nothing was found."""
    target = find_target(page, Act("Click", description), params)
    return target.handle.evaluate("el => (el.closest('li') || el).id") if target.found else None


@pytest.mark.browser
def test_the_arrow_next_to_the_small_photos_is_that_carousels(browser):
    """Two carousels, each with a 'Next' arrow: the row of small photos names the second, the larger photos the
    first (found as pictures, not as a row saying 'photos')."""
    with open_page(browser, "carousel_rows.html") as page:
        assert _chosen(page, "Click the right arrow next to the row of small photos", DET14) == "small-next"
        assert _chosen(page, "Click the right arrow next to the big photos", DET14) == "big-next"
        assert _chosen(page, "Click the left arrow next to the three larger photos", DET14) == "big-prev"


@pytest.mark.browser
def test_the_seventh_dot_below_the_small_photos_is_its_pagers_seventh(browser):
    """A pager's dots say nothing (their numbers are hidden, each draws a bullet): before, no element matched; a
    list item and the button filling it are one dot, counted once."""
    with open_page(browser, "carousel_rows.html") as page:
        assert _chosen(page, "Click the seventh dot below the row of small photos", DET13) == "small-dot5"
        assert _chosen(page, "Click the second of the two dots under the larger photos", DET13) is None
        assert _chosen(page, "Click the seventh dot below the row of small photos", DET14) == "small-dot7"
        assert _chosen(page, "Click the second of the two dots under the larger photos", DET14) == "big-dot2"


@pytest.mark.parametrize(("text", "relation", "concepts"), [
    ("Click the seventh dot below the row of small photos", ("below", "image", ["small"]), ["dot"]),
    ("Tap the fifth dot under the big photo", ("below", "image", ["big"]), ["dot"]),
    ("Click the right arrow next to the three larger photos", ("near", "image", ["bigger"]), ["right"]),
    ("Click the three dots menu", None, ["more"]),
    ("Click the arrow below 'Photos'", ("below", None, []), []),
])
def test_dots_and_picture_anchors_are_read_from_the_words(text, relation, concepts):
    desc = parse_description(text, params=TargetingParams.from_dict(DET14))
    got = desc.relations[0] if desc.relations else None
    assert (got and (got.kind, got.role, got.sizes)) == relation
    assert set(concepts) <= set(desc.concepts) and ("dot" in desc.concepts) == ("dot" in concepts)
    assert "dot" not in parse_description(text, params=TargetingParams.from_dict(DET13)).concepts


def test_a_size_word_keeps_the_pictures_of_that_size():
    """Of the pictures found, 'small' keeps the smallest, 'big' the largest, 'larger' all but the smallest."""
    boxes = [[0, 0, 60, 40], [0, 100, 200, 130], [0, 300, 600, 400]]
    params = TargetingParams.from_dict(DET14)
    for words, kept in (("small", [0]), ("big", [2]), ("larger", [1, 2]), ("smaller", [0, 1])):
        desc = parse_description(f"Click the arrow next to the {words} photos", params=params)
        assert sized_anchors(desc, [boxes]) == [[boxes[i] for i in kept]], words

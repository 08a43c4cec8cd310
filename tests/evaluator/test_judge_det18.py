"""Protocol iwr-det-18's mechanism (issue 14, found on the tuning half's photo-lightbox site, whose phone reference
could not open its first photo): words said of what a photo shows, which a picture without words cannot say, leave it a
picture the description may mean, at a discount; the ordinal and the anchor choose among the pictures, and a picture
whose own words say what it shows is preferred."""

from __future__ import annotations

import pytest

from evaluator.agents.actions import perform
from evaluator.agents.targeting import find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET17 = get_protocol("iwr-det-17").params
DET18 = get_protocol("iwr-det-18").params


def _opened(page, description: str, params) -> str | None:
    """Find and click what ``description`` names; the photo opened (None: nothing found)."""
    page.evaluate("document.getElementById('used').textContent = 'nothing'")
    action = Act("Click", description)
    target = find_target(page, action, params["targeting"])
    if not target.found:
        return None
    done, why = perform(page, action, target, params["targeting"])
    assert done, why
    return page.text_content("#used")


@pytest.mark.browser
def test_a_photo_described_by_what_it_shows_is_found_by_its_place(browser):
    """Before, 'bridge' and 'lit' took the picture match away and only the link whose caption attribute says 'bridge'
    came near, below the bar; now every photo is a picture the description may mean and 'the second' chooses."""
    with open_page(browser, "depicted_photos.html", width=390, height=844) as page:
        said = "Tap the second photo under 'Trips', the bridge lit up at night"
        assert _opened(page, said, DET17) in (None, "bridge")
        assert _opened(page, said, DET18) == "night"
        assert _opened(page, "Tap the third photo, a boat on a green lake", DET18) == "lake"


@pytest.mark.browser
def test_a_picture_whose_words_say_what_it_shows_is_preferred(browser):
    """A picture whose alt text (or caption attribute) says the words still matches above the pictures without words,
    which now match too but only at a discount."""
    with open_page(browser, "depicted_photos.html", width=390, height=844) as page:
        assert _opened(page, "Tap the photo, the red balloon over the hills", DET18) == "balloon"
        assert _opened(page, "Tap the photo, the old stone bridge", DET18) == "bridge"


@pytest.mark.browser
def test_a_quoted_label_keeps_its_reading(browser):
    """With a quoted label the words are the element's own, not what a picture shows: the rule does not apply."""
    with open_page(browser, "depicted_photos.html", width=390, height=844) as page:
        said = Act("Click", "Tap the 'Harbour lights' photo, the one lit up at night")
        before = find_target(page, said, DET17["targeting"])
        after = find_target(page, said, DET18["targeting"])
        assert after.found and after.chosen == before.chosen

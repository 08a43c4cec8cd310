"""Protocol iwr-det-18's mechanism (issue 14, found on the tuning half's photo-lightbox site, whose phone reference
could not open its first photo): words said of what a photo shows, which a picture without words cannot say, leave it a
picture the description may mean, at a discount; the ordinal and the anchor choose among the pictures, and a picture
whose own words say what it shows is preferred."""

from __future__ import annotations

import pytest

from evaluator.agents.actions import perform
from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import judge
from evaluator.judges.reference import RefDelta, word_delta
from evaluator.judges.state import PageState
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


# --------------------------------------------------------------------------- view_appearance

def _state(document: str, view: str) -> PageState:
    """A page whose document's text is ``document`` and whose view shows ``view``."""
    return PageState(url="http://iwr.test/", text=document, blocks=[{"text": view}] if view else [])


GALLERY = "Sample gallery baguetteBox.js Simple and easy to use lightbox script"
# The reference's view: the lightbox paints over the whole page, so its words all go and the caption's come.
OPENED = RefDelta(*word_delta(GALLERY, "Midnight City"), changed=True, source="reference",
                  texts=(GALLERY, "Midnight City"), scrolled=False)
OPENS = "The photo opens large over a dark background with the caption 'Midnight City' under it"


def _verdict(params, after: PageState, reference: RefDelta = OPENED, kind: str = "Click"):
    action = Act(kind, "Tap the second photo", logical_assertion=OPENS)
    return judge(action, _state(GALLERY, GALLERY), after, reference, params["assertion"])


def test_a_caption_added_out_of_view_does_not_show_the_photo_opened():
    """The copy without CSS appends the lightbox at the foot of the page: its document gains the caption, its view
    shows the gallery as before. iwr-det-17 passed the step on the quoted caption; iwr-det-18 fails it."""
    appended = _state(GALLERY + "\nMidnight City", GALLERY)
    assert _verdict(DET17, appended).passed
    verdict = _verdict(DET18, appended)
    assert not verdict.passed
    assert verdict.evidence["phrases"][0]["out_of_view"] is True


def test_a_caption_shown_in_view_still_holds():
    """A page that opens the photo over the gallery shows the caption in its view: the step passes, as before."""
    shown = _state(GALLERY + "\nMidnight City", "Midnight City")
    assert _verdict(DET18, shown).passed and _verdict(DET17, shown).passed


def test_where_the_reference_scrolled_the_document_still_counts():
    """A reference that scrolled brought its words into view by the scroll: a page whose layout differs may show them
    elsewhere, so the document's text decides, as before."""
    appended = _state(GALLERY + "\nMidnight City", GALLERY)
    scrolled = RefDelta(added=OPENED.added, removed=OPENED.removed, changed=True, source="reference",
                        texts=OPENED.texts, scrolled=True)
    assert _verdict(DET18, appended, scrolled).passed == _verdict(DET17, appended, scrolled).passed

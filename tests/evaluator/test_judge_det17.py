"""Protocol iwr-det-17's mechanisms (issue 14, found on the tuning half's autocomplete site, whose reference pages typed
into the wrong box): a label shows its words where it prints them, not in the field it names, so 'the box under' or
'after' a label's words is the field that label names; and text another element paints over is not visible text, on
the judge's side as on the reference's."""

from __future__ import annotations

import pytest

from evaluator.agents.actions import perform
from evaluator.agents.targeting import find_target
from evaluator.authoring.recorder import visible_text_script
from evaluator.judges.reference import word_delta
from evaluator.judges.state import capture_state
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET16 = get_protocol("iwr-det-16").params
DET17 = get_protocol("iwr-det-17").params


def _used(page, description: str, params) -> str:
    """Find and click what ``description`` names; the id of the field that took the focus."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    action = Act("Click", description)
    target = find_target(page, action, params["targeting"])
    assert target.found, target.reason
    done, why = perform(page, action, target, params["targeting"])
    assert done, why
    return page.text_content("#used")


@pytest.mark.browser
def test_the_box_under_a_labels_words_is_the_field_that_label_names(browser):
    """Before, the anchor search found the field the label names (its name is the label's text) and a field is never
    beside its own content, so another field was clicked; now the anchor is the printed words above the field."""
    with open_page(browser, "labelled_fields.html", width=760, height=700) as page:
        assert _used(page, "Click the text box under 'Pick a size:'", DET16) != "size"
        assert _used(page, "Click the text box under 'Pick a size:'", DET17) == "size"
        assert _used(page, "Click the text box under 'Pick a colour:'", DET17) == "colour"


@pytest.mark.browser
def test_the_box_after_a_labels_words_is_the_field_that_label_names(browser):
    """'after' reads the page in order from its anchor: before, the anchor was the e-mail field itself and the field
    after it, the tags box, was clicked; now the anchor is the words 'Type an email:' and the e-mail box follows."""
    with open_page(browser, "labelled_fields.html", width=760, height=700) as page:
        assert _used(page, "Click the box after 'Type an email:'", DET16) == "tags"
        assert _used(page, "Click the box after 'Type an email:'", DET17) == "email"
        assert _used(page, "Click the box after 'Tags (comma separated):'", DET17) == "tags"


@pytest.mark.browser
def test_a_field_whose_own_words_say_the_anchor_is_still_the_anchor(browser):
    """A placeholder is shown in the field itself: 'the box after the one saying 'Your city'' still reads the field
    saying it as the anchor, and a field named by its own words is found by them as before."""
    with open_page(browser, "labelled_fields.html", width=760, height=700) as page:
        assert _used(page, "Click the 'Your city' box", DET17) == "city"
        assert _used(page, "Click the box above 'Your city'", DET17) == "tags"


@pytest.mark.browser
def test_text_painted_over_is_not_visible_text(browser):
    """The reference's recorded visible text leaves out text another element paints over; the judge's reading of the
    page now does too (iwr-det-17), so the words a closing list uncovers are a change on both sides. A transparent
    box on top hides nothing."""
    with open_page(browser, "covered_text.html", width=700, height=400) as page:
        before = capture_state(page, take_screenshot=False)
        assert "Note that by default" in before.viewport_text  # iwr-det-16's reading: under the list, yet "visible"
        covered = capture_state(page, take_screenshot=False, covered_hidden=True)
        assert "Note that by default" not in covered.viewport_text
        assert "JavaScript" in covered.viewport_text and "closes on Escape" in covered.viewport_text
        page.evaluate("document.getElementById('list').hidden = true")
        closed = capture_state(page, take_screenshot=False, covered_hidden=True)
        added, removed = word_delta(covered.viewport_text, closed.viewport_text)
        assert {"note", "default"} <= set(added) and "javascript" in removed
        recorded = page.evaluate(visible_text_script())
        assert "Note that by default" in recorded["text"]


def test_only_iwr_det_17_reads_covered_text_as_hidden():
    assert DET17["assertion"]["covered_text"] is True
    assert not DET16["assertion"].get("covered_text")

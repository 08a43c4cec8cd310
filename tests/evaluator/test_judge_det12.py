"""Protocol iwr-det-12's mechanisms (issue 14, found on the tuning half's date picker demo, measured before any
tuning on it: both reference pages failed): size words say how a control looks; an element labelled in data-*
whose clicks an ancestor handles is a target; a grid row the look-alikes by words do not reach is counted among
the elements of the best match's kind; a quoted phrase said to appear is counted in the fields' values after an
action that typed nothing; 'showing' cues a state as 'shows' does. iwr-det-11 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import judge
from evaluator.judges.phrases import key_phrases
from evaluator.judges.reference import RefDelta
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET11 = get_protocol("iwr-det-11").params
DET12 = get_protocol("iwr-det-12").params


@pytest.mark.browser
def test_a_size_word_says_how_the_field_looks_not_what_it_is_called(browser):
    click = Act("Click", "Click the wide empty text box under 'Demo'")
    with open_page(browser, "calendar.html") as page:
        assert not find_target(page, click, DET11).found  # 'wide' was a word of a name no element says
        target = find_target(page, click, DET12)
        assert target.found and target.chosen["tag"] == "input"


@pytest.mark.browser
def test_a_day_whose_clicks_the_calendar_handles_is_found_by_its_row(browser):
    with open_page(browser, "calendar.html") as page:
        assert not find_target(page, Act("Click", "Click 14 in the third row of the calendar"), DET11).found
        target = find_target(page, Act("Click", "Click 14 in the third row of the calendar"), DET12)
        assert target.found and target.chosen["text"] == "14"
        # the row places, the words choose: the 1 of the first row is February's, not January's 28 beside it
        first = find_target(page, Act("Click", "Click 1 in the first row of the calendar"), DET12)
        assert first.chosen["text"] == "1" and first.chosen["box"][1] < target.chosen["box"][1]
        target.handle.click()
        assert page.input_value("#field") == "02/14/2024"


@pytest.mark.browser
def test_an_element_labelled_in_data_without_a_listening_ancestor_stays_out(browser):
    """Delegation is what makes the day a target: the same spans on a calendar nobody listens to are text."""
    with open_page(browser, "calendar.html") as page:
        page.evaluate("() => { const grid = document.getElementById('grid'); grid.replaceWith(grid.cloneNode(true)); }")
        assert not find_target(page, Act("Click", "Click 14 in the third row of the calendar"), DET12).found


def _field(value: str) -> PageState:
    return PageState(url="http://iwr.test/", text="Demo February 2024 1 2 3 14", values={"input:0": value},
                     blocks=[{"text": "Demo"}])


def test_a_date_a_click_puts_in_the_text_box_is_counted_there():
    click = Act("Click", "Click 14", logical_assertion="The text box now shows '02/14/2024'")
    delta = RefDelta(changed=True, source="reference", scrolled=False, added=[], removed=[])
    before, after = _field(""), _field("02/14/2024")
    assert not judge(click, before, after, delta, DET11).passed
    verdict = judge(click, before, after, delta, DET12)
    assert verdict.passed
    assert verdict.evidence["phrases"][0]["source"] == "form values"
    assert not judge(click, before, _field(""), delta, DET12).passed  # a page whose field stayed empty


def test_text_a_type_action_puts_in_its_field_is_not_its_effect():
    typed = Act("Type", "Type the date in the text box", text="02/14/2024",
                logical_assertion="The text box now shows '02/14/2024'")
    delta = RefDelta(changed=True, source="reference", scrolled=False, added=[], removed=[])
    verdict = judge(typed, _field(""), _field("02/14/2024"), delta, DET12)
    assert not any(c.get("source") == "form values" for c in verdict.evidence["phrases"])


def test_showing_cues_a_state_in_its_own_clause():
    assertion = "The panel is gone and a calendar showing 'January 2024' has taken the place of the text box"
    assert [p.mode for p in key_phrases(assertion) if p.text == "January 2024"] == ["removal"]
    assert [p.mode for p in key_phrases(assertion, participles=True) if p.text == "January 2024"] == ["state"]
    # a clause's own polarity still decides: "no longer showing" is a removal whatever the participle
    gone = "The calendar is no longer showing 'January 2024'"
    assert [p.mode for p in key_phrases(gone, participles=True)] == ["removal"]

"""Protocol iwr-det-15's mechanism (issue 14, found on the tuning half's form validation demos, whose two reference
pages failed at their first Type step under iwr-det-14): a form field that no label names is named by the short text
printed right before it, just above it or just left of it on its row."""

from __future__ import annotations

import pytest

from evaluator.agents.targeting import candidates_js, find_target
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET14 = get_protocol("iwr-det-14").params
DET15 = get_protocol("iwr-det-15").params


def _chosen(page, kind: str, description: str, params, text: str | None = None) -> str | None:
    """The id of the chosen element; None when nothing was found."""
    target = find_target(page, Act(kind, description, text=text), params)
    return target.handle.evaluate("el => el.id") if target.found else None


@pytest.mark.browser
def test_a_field_is_named_by_the_caption_printed_above_it(browser):
    """'Full Name * :' sits in a label right above the field, but the label's 'for' names no element: before, the
    field had no name and nothing was found; now the caption names it, and each field gets its own."""
    with open_page(browser, "caption_form.html") as page:
        assert _chosen(page, "Type", "Type 'Ada Lovelace' into the 'Full Name' field", DET14, "Ada Lovelace") is None
        assert _chosen(page, "Type", "Type 'Ada Lovelace' into the 'Full Name' field", DET15, "Ada Lovelace") \
            == "f-fullname"
        assert _chosen(page, "Type", "Type 'ada@example.com' into the 'Email' field", DET15, "ada@example.com") \
            == "f-email"


@pytest.mark.browser
def test_a_radio_button_or_checkbox_is_named_by_the_text_just_left_of_it(browser):
    """'M: ( ) F: ( )' in one block: the block's text named both radio buttons, and the first was taken for 'F';
    the text right before each is its own label."""
    with open_page(browser, "caption_form.html") as page:
        assert _chosen(page, "Click", "Click the 'F' radio button next to 'Gender'", DET14) == "f-male"
        assert _chosen(page, "Click", "Click the 'F' radio button next to 'Gender'", DET15) == "f-female"
        assert _chosen(page, "Click", "Tick the 'Running' checkbox under 'Hobbies'", DET15) == "f-run"


@pytest.mark.browser
def test_only_a_field_without_a_label_and_with_text_right_before_it_has_a_caption(browser):
    """A field with a label or a placeholder of its own has no caption (they name it); text printed far above a field
    is no caption of it; off (iwr-det-14), no field has one."""
    with open_page(browser, "caption_form.html") as page:
        def captions(on: bool) -> dict:
            data = page.evaluate(candidates_js(), {"editableOnly": False, "maxCandidates": 3000, "anchors": [],
                                                   "captions": on})
            return {c["id"]: c.get("caption") for c in data["candidates"] if c["id"].startswith("f-")}

        assert captions(True) == {"f-fullname": "Full Name * :", "f-email": "Email * :", "f-male": "M:",
                                  "f-female": "F:", "f-ski": "Skiing", "f-run": "Running", "f-search": "", "f-city": "",
                                  "f-notes": ""}
        assert set(captions(False).values()) == {None}
        assert _chosen(page, "Type", "Type 'Paris' into the 'City' field", DET15, "Paris") == "f-city"

"""Carrying out Click, Type, Press and Scroll on crafted pages."""

from __future__ import annotations

import pytest

from evaluator.agents.actions import key_from_description, normalize_key, perform, press_key
from evaluator.agents.targeting import Target, find_target
from tests.evaluator.pages import Act, open_page

browser_test = pytest.mark.browser


def act(page, action: Act) -> tuple[bool, str]:
    """Find the target (Click/Type) and perform, as the replay does."""
    return perform(page, action, find_target(page, action))


def value(page, selector: str) -> str:
    return page.eval_on_selector(selector, "el => el.isContentEditable ? el.innerText : el.value")


# --------------------------------------------------------------------------- keys


def test_it_normalises_key_names():
    """Spoken and lower-case key names become Playwright's names; combos keep their parts."""
    assert normalize_key("enter") == "Enter"
    assert normalize_key("esc") == "Escape"
    assert normalize_key("ctrl+a") == "Control+a"
    assert normalize_key("up arrow") == "ArrowUp"
    assert normalize_key("F5") == "F5"


def test_it_infers_the_key_from_the_description_when_missing():
    """"Press the up arrow key" gives ArrowUp; a description naming no key gives None."""
    assert key_from_description("Press the up arrow key to move the tiles") == "ArrowUp"
    assert key_from_description("Press Enter to search") == "Enter"
    assert key_from_description("Hit the Escape key") == "Escape"
    assert key_from_description("Press the button") is None
    assert press_key(Act("Press", "Press Enter", key="tab")) == "Tab"


def test_it_refuses_unknown_action_types():
    """An action type outside Click/Type/Press/Scroll fails with a reason, without touching the page."""
    assert perform(object(), Act("Hover", "Hover the menu")) == (False, "unknown action type 'Hover'")


# --------------------------------------------------------------------------- click


@browser_test
def test_click_on_an_element_inside_a_scroll_container(browser):
    """The chosen element is scrolled into view and clicked."""
    with open_page(browser, "targeting.html") as page:
        page.eval_on_selector("#item8", "el => el.addEventListener('click', () => el.textContent = 'Done')")
        assert act(page, Act("Click", "Click Item 8")) == (True, "clicked")
        assert page.inner_text("#item8") == "Done"


@browser_test
def test_click_reports_who_intercepted_it(browser):
    """A covered element fails the click and the reason names the element on top."""
    with open_page(browser, "targeting.html") as page:
        handle = page.query_selector("#covered")
        executed, reason = perform(page, Act("Click", "Click Covered"), Target(handle=handle),
                                   {"click_timeout_ms": 500})
        assert not executed
        assert "intercepted" in reason and "overlay" in reason


@browser_test
def test_click_without_a_target_fails_with_the_targeting_reason(browser):
    """No element found: the step fails with the reason targeting gave."""
    with open_page(browser, "targeting.html") as page:
        executed, reason = act(page, Act("Click", "Click the Unicorn subscription toggle"))
        assert not executed and "no element matches" in reason


# --------------------------------------------------------------------------- type and press


@browser_test
def test_type_fills_the_right_field_only(browser):
    """The named field holds the text afterwards; the other fields are untouched."""
    with open_page(browser, "form.html") as page:
        assert act(page, Act("Type", "Type 'Ada Lovelace' into the Full name field", text="Ada Lovelace"))[0]
        assert value(page, "#name") == "Ada Lovelace"
        assert value(page, "#email") == ""
        assert act(page, Act("Type", "Type the email address", text="ada@example.com"))[0]
        assert value(page, "#email") == "ada@example.com"
        assert act(page, Act("Type", "Write 'call Bob' in the notes area"))[0]
        assert value(page, "#notes") == "call Bob"


@browser_test
def test_type_fails_when_the_field_does_not_hold_the_text(browser):
    """Letters typed into a number field do not stick: the step fails and says what the field holds."""
    with open_page(browser, "form.html") as page:
        executed, reason = act(page, Act("Type", "Type into the Quantity field", text="abc"))
        assert not executed and "field holds" in reason


@browser_test
def test_type_without_any_text_fails(browser):
    """No text and no quoted string in the description: nothing to type."""
    with open_page(browser, "form.html") as page:
        assert act(page, Act("Type", "Type into the Full name field")) == (
            False, "no text to type: the action has no text and its description quotes none")


@browser_test
def test_press_enter_submits_the_form(browser):
    """Type a name, press Enter: the form's submit handler runs."""
    with open_page(browser, "form.html") as page:
        assert act(page, Act("Type", "Type 'Ada' into the Full name field", text="Ada"))[0]
        assert act(page, Act("Press", "Press Enter to submit", key="enter")) == (True, "pressed Enter")
        assert page.inner_text("#result") == "Thanks, Ada"


@browser_test
def test_press_infers_the_key_or_fails(browser):
    """Without a key the description's key name is pressed; with none the step fails."""
    with open_page(browser, "form.html") as page:
        assert act(page, Act("Press", "Press the Escape key to close"))[0]
        assert page.inner_text("#keys") == "last key Escape"
        executed, reason = act(page, Act("Press", "Press the button"))
        assert not executed and "no key" in reason


# --------------------------------------------------------------------------- scroll


@browser_test
@pytest.mark.parametrize(("name", "expected"),
                         [("long.html", True), ("short.html", False), ("inner-scroll.html", True)])
def test_scroll_moves_half_a_page_down_or_fails(browser, name, expected):
    """A long page and a page scrolling in a container succeed; a short page fails."""
    with open_page(browser, name, width=800, height=600) as page:
        executed, reason = act(page, Act("Scroll", "Scroll down"))
        assert executed is expected, reason
        if name == "long.html":
            assert page.evaluate("scrollY") == 300

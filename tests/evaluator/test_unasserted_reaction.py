"""iwr-det-3's ``unasserted_reaction``: an action with no assertion passes once performed, unless the reference's
text visibly changed in place and the page changed nothing at all."""

from __future__ import annotations

from evaluator.judges.assertion import RefDelta, reaction_missing
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act

DET3 = get_protocol("iwr-det-3").params
DET2 = get_protocol("iwr-det-2").params
PRESS = Act("Press", "", key="ArrowLeft")


def state(text: str, **extra) -> PageState:
    return PageState(**{"url": "http://iwr.test/", "text": text, "blocks": [{"text": text}], **extra})


def moved(scrolled: bool | None = False) -> RefDelta:
    """The reference's tiles moved: a 2 went, a 4 came, in place."""
    return RefDelta(added=["4"], removed=["2"], changed=True, source="reference", texts=("2 2", "4"),
                    scrolled=scrolled)


def test_a_page_that_ignored_an_action_the_reference_reacted_to_fails_it():
    board = state("2 2")
    assert reaction_missing(PRESS, board, state("2 2"), moved(), DET3)


def test_any_reaction_of_the_page_is_enough():
    board = state("2 2")
    assert not reaction_missing(PRESS, board, state("4"), moved(), DET3)  # its text changed
    assert not reaction_missing(PRESS, board, state("2 2", url="http://iwr.test/#moved"), moved(), DET3)
    assert not reaction_missing(PRESS, state("2 2", values={"q": ""}), state("2 2", values={"q": "a"}), moved(), DET3)


def test_where_the_reference_did_not_react_in_place_nothing_is_demanded():
    board = state("2 2")
    unchanged = RefDelta(added=[], removed=[], changed=False, source="reference", texts=("2 2", "2 2"),
                         scrolled=False)
    assert not reaction_missing(PRESS, board, state("2 2"), unchanged, DET3)
    assert not reaction_missing(PRESS, board, state("2 2"), moved(scrolled=True), DET3)  # the view moved
    assert not reaction_missing(Act("Scroll", ""), board, state("2 2"), moved(), DET3)
    ocr = RefDelta(added=["4"], removed=["2"], changed=True, source="ocr", texts=("2 2", "4"), scrolled=False)
    assert not reaction_missing(PRESS, board, state("2 2"), ocr, DET3)  # OCR differs on a hover shade
    assert not reaction_missing(PRESS, board, state("2 2"), None, DET3)


def test_only_iwr_det_3_asks_it():
    assert not reaction_missing(PRESS, state("2 2"), state("2 2"), moved(), DET2)


def test_the_reaction_check_decodes_no_screenshot(monkeypatch):
    """It reads the URL, text, DOM and form state only: comparing the screenshots' pixels is work it does not need."""
    import evaluator.judges.assertion as assertion

    def no_pixels(*_args, **_kwargs):
        raise AssertionError("the reaction check compared pixels")

    monkeypatch.setattr(assertion, "pixel_change_fraction", no_pixels)
    shot = b"\x89PNG not decoded"
    assert reaction_missing(PRESS, state("2 2", screenshot=shot), state("2 2", screenshot=shot), moved(), DET3)
    assert not reaction_missing(PRESS, state("2 2", screenshot=shot), state("4", screenshot=shot), moved(), DET3)

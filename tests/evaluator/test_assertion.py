"""Judging assertions without an LLM: signals, key phrases, reference deltas, real pages."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from evaluator.agents.actions import perform
from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import RefDelta, judge, key_phrases, polarity, reference_delta, signed_f1
from evaluator.judges.reference import word_delta
from evaluator.judges.state import PageState, capture_state
from tests.evaluator.pages import Act, open_page

browser_test = pytest.mark.browser


def state(text: str, **extra) -> PageState:
    return PageState(url="http://iwr.test/", text=text, blocks=[{"text": text}], **extra)


def check(assertion: str, before: PageState, after: PageState, reference=None):
    return judge(Act("Click", "Click it", logical_assertion=assertion), before, after, reference)


# --------------------------------------------------------------------------- phrases and polarity


def test_it_reads_the_assertion_polarity():
    """Appearance, removal, unchanged and plain state assertions are told apart."""
    assert polarity("A success message appears") == "appearance"
    assert polarity("The item 'Milk' is removed from the list") == "removal"
    assert polarity("The modal is no longer visible") == "removal"
    assert polarity("The counter remains at 0") == "unchanged"
    assert polarity("The counter shows 3") == "state"


def test_it_extracts_quoted_numbers_and_capitalised_phrases():
    """Quoted strings, numbers and capitalised names are the key phrases; sentence starts are not."""
    phrases = key_phrases("The 'Cart' badge shows 3 and the Order Summary panel lists $12.99")
    assert [(p.text, p.kind) for p in phrases] == [
        ("Cart", "quoted"), ("3", "number"), ("$12.99", "number"), ("Order Summary", "capital")]
    assert key_phrases("Products are listed") == []


def test_each_clause_and_landmark_gets_its_own_polarity():
    """Appearance and removal clauses differ; a landmark after "below" only has to be present."""
    phrases = key_phrases("'Walk the dog' is added below 'Buy milk' and the counter shows '2 items left'")
    assert [(p.text, p.mode) for p in phrases] == [
        ("Walk the dog", "appearance"), ("Buy milk", "state"), ("2 items left", "state")]
    mixed = key_phrases("The alerts close and a 'Message Center' dropdown opens")
    assert [(p.text, p.mode) for p in mixed] == [("Message Center", "appearance")]
    listed = key_phrases("A menu with 'Profile', 'Settings' and 'Logout' appears")
    assert {p.mode for p in listed} == {"appearance"}
    assert key_phrases("The theme changes from 'Light' to 'Dark'")[0].mode == "removal"


def test_it_falls_back_to_content_words_whose_count_moved():
    """Without strong phrases, only content words whose count changed on the page are checked."""
    phrases = key_phrases("a confirmation message about shipping appears", "Cart", "Cart free shipping")
    assert [p.text for p in phrases] == ["shipping"]
    assert key_phrases("The tiles move and a new tile appears", "tiles tile score", "tiles tile score") == []


def test_word_delta_and_signed_f1():
    """Added and removed words form a signed multiset; identical deltas agree fully."""
    added, removed = word_delta("Cart is empty", "Cart 1 item")
    assert added == ["1", "item"] and removed == ["empty", "is"]
    assert signed_f1(_signed(added, removed), _signed(added, removed)) == 1.0
    assert signed_f1(_signed(["x"], []), _signed(["y"], [])) == 0.0


def _signed(added, removed):
    from evaluator.judges.assertion import _signed

    return _signed(added, removed)


# --------------------------------------------------------------------------- decisions on synthetic states


def test_appearance_needs_more_after_than_before():
    """"appears" passes only when the phrase occurs more often after the action."""
    assert check("The item 'Milk' appears", state("Eggs"), state("Eggs Milk")).passed
    assert not check("The item 'Milk' appears", state("Eggs Milk"), state("Eggs Milk Bread")).passed


def test_removal_needs_fewer_after_than_before():
    """A removal verb passes when the phrase is gone (or rarer) after the action."""
    assert check("'Walk dog' is removed", state("Walk dog Pay rent"), state("Pay rent")).passed
    assert not check("'Walk dog' is removed", state("Walk dog Pay rent"), state("Walk dog Pay")).passed


def test_numbers_must_match_exactly():
    """"the counter shows 3" fails on 13 or 3.5 and passes on 3."""
    assert check("The counter shows 3", state("Counter: 2"), state("Counter: 3")).passed
    assert not check("The counter shows 3", state("Counter: 2"), state("Counter: 13")).passed
    assert not check("The counter shows 3", state("Counter: 2"), state("Counter: 3.5")).passed


def test_no_change_fails_whatever_the_phrases():
    """A phrase already present does not make an unchanged page pass."""
    verdict = check("The 'Saved' label is shown", state("Saved"), state("Saved"))
    assert not verdict.passed
    assert verdict.evidence["changed"] is False, verdict.evidence["changes"]


def test_without_checkable_phrase_changed_must_match_the_reference():
    """Nothing checkable: pass when the page changed exactly when the reference did."""
    before, after = state("a"), state("b")
    assert check("Something happens", before, after, RefDelta(changed=True, source="reference")).passed
    assert not check("Something happens", before, after, RefDelta(changed=False, source="reference")).passed
    assert check("Something happens", before, state("a"), RefDelta(changed=False, source="reference")).passed


def test_reference_delta_agreement_can_carry_the_step():
    """The quoted name differs, but the page added the words the reference added."""
    reference = RefDelta(added=["free", "shipping", "on", "orders"], changed=True, source="reference")
    verdict = check("The 'Delivery info' panel opens", state("Show details"),
                    state("Show details Free shipping on orders"), reference)
    assert verdict.passed and verdict.evidence["deltas_agree"]
    other = check("The 'Delivery info' panel opens", state("Show details"),
                  state("Show details Returns accepted"), reference)
    assert not other.passed


def test_the_evidence_records_every_signal():
    """Evidence has the change signals, the phrase checks, the delta and the polarity."""
    verdict = check("The counter shows 3", state("2"), state("3"))
    assert set(verdict.evidence["changes"]) >= {"pixels", "url", "scroll", "focus", "values", "checked", "text", "dom"}
    assert verdict.evidence["phrases"][0] == {"phrase": "3", "kind": "number", "mode": "state", "before": 0,
                                              "after": 1, "holds": True}
    assert verdict.evidence["polarity"] == "state"
    json.dumps(verdict.evidence)


def test_a_phrase_left_alone_does_not_hold_where_the_reference_changed_it():
    """The tiles '2' merged on the reference; on a page that only scrolled they are still there, which is
    no evidence. The same phrase moving as on the reference, or a landmark the reference kept, still holds."""
    assertion = "The two '2' tiles merge into a '4' at the bottom and the score becomes 4"
    reference = RefDelta(added=["4", "4", "4"], removed=["0", "0", "2"], changed=True, source="ocr",
                         texts=("Score 0 Best 0 2 2", "Score 4 Best 4 2 4"))
    before = state("Score 0 Best 0 2 2", scroll=(0, 0))
    scrolled = check(assertion, before, state("Score 0 Best 0 2 2", scroll=(0, 120)), reference)
    assert not scrolled.passed and scrolled.evidence["phrases_held"] == 0.0
    assert scrolled.evidence["phrases"][0] == {"phrase": "2", "kind": "quoted", "mode": "state", "before": 2,
                                               "after": 2, "holds": False, "stale": True, "reference": [2, 1]}
    assert check(assertion, before, state("Score 4 Best 4 2 4"), reference).passed
    reference.scrolled = True  # what the reference's viewport text gained, a scroll brought into view
    assert "stale" not in check(assertion, before, state("Score 0 Best 0 2 2", scroll=(0, 120)),
                                reference).evidence["phrases"][0]
    landmark = RefDelta(added=["walk", "the", "dog"], changed=True, source="ocr",
                        texts=("Buy milk", "Buy milk Walk the dog"))
    verdict = check("'Walk the dog' is added below 'Buy milk'", state("Buy milk"),
                    state("Buy milk Walk the dog"), landmark)
    assert verdict.passed and verdict.evidence["phrases"][1]["holds"]


def test_a_page_whose_text_and_dom_stayed_fails_where_the_reference_text_changed():
    """Only scrolled and repainted: no text, DOM, form or URL change, while the reference's own text
    changed in place. A reference that scrolled, or a Scroll action, is not judged this way."""
    reference = RefDelta(added=["4"], removed=["2"], changed=True, source="reference",
                         texts=("Score 2", "Score 4"), scrolled=False)
    before, after = state("Score 2 tiles 4", scroll=(0, 0)), state("Score 2 tiles 4", scroll=(0, 120))
    verdict = check("The score shows 4", before, after, reference)
    assert not verdict.passed and verdict.evidence["text_change_missing"]
    assert verdict.evidence["changes"]["scroll"] and not verdict.evidence["changes"]["dom"]
    scrolled_ref = RefDelta(added=["4"], removed=["2"], changed=True, source="reference",
                            texts=("Score 2", "Score 4"), scrolled=True)
    assert check("The score shows 4", before, after, scrolled_ref).passed
    scroll = judge(Act("Scroll", "Scroll down", logical_assertion="The score shows 4"), before, after, reference)
    assert scroll.passed and "text_change_missing" not in scroll.evidence


def test_pixels_alone_count_as_a_change():
    """A colour change with the same text is a change."""
    white, red = _png((255, 255, 255)), _png((255, 0, 0))
    verdict = check("Something happens", state("x", screenshot=white), state("x", screenshot=red))
    assert verdict.evidence["changes"]["pixels"] and verdict.passed


# --------------------------------------------------------------------------- reference_delta


class FakeTask:
    """A task as evaluator.dataset gives it: reference steps and checkpoint images on disk."""

    def __init__(self, root: Path, refs: dict, images: dict | None = None):
        self.root, self.refs = root, refs
        for k, rgb in (images or {}).items():
            Image.new("RGB", (40, 30), rgb).save(root / f"step_{k}.png")

    def load_reference(self, k):
        return self.refs.get(k)

    def checkpoint_path(self, k):
        return self.root / f"step_{k}.png"


def test_reference_delta_reads_reference_text(tmp_path):
    """Words added and removed between reference steps k-1 and k; changed from the images."""
    task = FakeTask(tmp_path, {0: {"text": "Cart is empty"}, 1: {"text": "Cart 1 item"}},
                    {0: (255, 255, 255), 1: (0, 0, 0)})
    delta = reference_delta(task, 1, cache={})
    assert delta.source == "reference"
    assert delta.added == ["1", "item"] and delta.removed == ["empty", "is"]
    assert delta.changed is True
    assert delta.texts == ("Cart is empty", "Cart 1 item") and delta.scrolled is False


def test_reference_delta_without_data_says_nothing(tmp_path):
    """No reference text and no images: no delta, changed unknown; k < 1 is refused."""
    delta = reference_delta(FakeTask(tmp_path, {}), 2)
    assert delta.source == "none" and delta.changed is None
    with pytest.raises(ValueError, match="k >= 1"):
        reference_delta(FakeTask(tmp_path, {}), 0)


def test_reference_delta_falls_back_to_ocr_with_a_cache(tmp_path, monkeypatch):
    """Only images: their OCR text is diffed, and each image is read once thanks to the cache."""
    import evaluator.judges.reference as reference

    reads = []
    monkeypatch.setattr(reference, "_ocr_image", lambda path: reads.append(path) or
                        ("Cart empty" if path.name == "step_0.png" else "Cart 2 items"))
    task = FakeTask(tmp_path, {}, {0: (255, 255, 255), 1: (250, 250, 250)})
    cache: dict = {}
    first, second = reference_delta(task, 1, cache), reference_delta(task, 1, cache)
    assert first.source == "ocr" and first.added == ["2", "items"] and first.removed == ["empty"]
    assert first.changed is False  # near-identical images
    assert second.added == first.added and len(reads) == 2


def _png(rgb) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), rgb).save(buffer, format="PNG")
    return buffer.getvalue()


# --------------------------------------------------------------------------- real pages


def run_step(page, action: Act, reference=None):
    """Capture, act, capture, judge: one step as the replay runs it."""
    before = capture_state(page)
    executed, reason = perform(page, action, find_target(page, action))
    assert executed, reason
    after = capture_state(page)
    return judge(action, before, after, reference)


@browser_test
def test_capture_state_reads_form_focus_text_and_blocks(browser):
    """Values, checked states, focus, visible text and text blocks with boxes and colours."""
    with open_page(browser, "form.html") as page:
        page.fill("#name", "Ada")
        page.focus("#email")
        snapshot = capture_state(page)
    assert snapshot.values["input#name"] == "Ada"
    assert snapshot.focus == "input#email"
    assert "Full name" in snapshot.text
    block = next(b for b in snapshot.blocks if b["text"] == "Full name")
    assert block["box"][2] > 0 and block["color"] == [0, 0, 0] and block["bg"] == [255, 255, 255]
    assert snapshot.screenshot[:4] == b"\x89PNG"


@browser_test
def test_capture_state_sees_changes_inside_shadow_roots(browser):
    """A web component's text lives in its shadow root, out of innerText: the DOM hash still moves."""
    html = ("<p>Outside</p><x-counter></x-counter><script>customElements.define('x-counter', class extends "
            "HTMLElement { connectedCallback() { const root = this.attachShadow({mode: 'open'}); "
            "root.innerHTML = '<span>Count 0</span><button>inc</button>'; root.querySelector('button').onclick = "
            "() => { root.querySelector('span').textContent = 'Count 1'; }; } });</script>")
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(html)
        before = capture_state(page, take_screenshot=False)
        page.locator("x-counter button").click()
        after = capture_state(page, take_screenshot=False)
    finally:
        context.close()
    assert before.text == after.text == "Outside"
    assert before.dom_hash != after.dom_hash


@browser_test
def test_an_added_item_passes_its_appearance_assertion(browser):
    """Type an item, click Add: "the item appears" holds."""
    with open_page(browser, "assertion.html") as page:
        page.fill("#new-item", "Buy milk")
        verdict = run_step(page, Act("Click", "Click the Add item button",
                                     logical_assertion="The item 'Buy milk' appears in the list"))
    assert verdict.passed, verdict.reason


@browser_test
def test_a_click_that_changes_nothing_fails(browser):
    """A button without effect: the page did not change, so the assertion fails."""
    with open_page(browser, "assertion.html") as page:
        verdict = run_step(page, Act("Click", "Click Nothing",
                                     logical_assertion="A confirmation message 'Saved' appears"))
    assert not verdict.passed
    assert verdict.evidence["changed"] is False, verdict.evidence["changes"]
    assert verdict.evidence["changes"]["pixel_fraction"] < 0.002  # hover shading only


@browser_test
def test_removal_passes_when_the_item_is_gone(browser):
    """Click the first Remove: "'Walk dog' is removed" holds; clicking Nothing instead fails it."""
    with open_page(browser, "assertion.html") as page:
        assertion = "The 'Walk dog' item is removed from the list"
        assert not run_step(page, Act("Click", "Click Nothing", logical_assertion=assertion)).passed
        assert run_step(page, Act("Click", "Click the first Remove button", logical_assertion=assertion)).passed


@browser_test
def test_the_counter_must_show_the_number(browser):
    """Increase makes "the counter shows 3" hold; a restyle changes pixels but not the number."""
    with open_page(browser, "assertion.html") as page:
        restyled = run_step(page, Act("Click", "Click Restyle", logical_assertion="The counter shows 3"))
        assert restyled.evidence["changes"]["pixels"] and not restyled.passed
        assert run_step(page, Act("Click", "Click Increase", logical_assertion="The counter shows 3")).passed


@browser_test
def test_a_key_that_only_scrolls_the_page_fails_a_text_change(browser):
    """ArrowDown on a page without scripts scrolls it: the view moves, the text and DOM do not."""
    reference = RefDelta(added=["4"], removed=["2"], changed=True, source="reference",
                         texts=("A long page 2", "A long page 4"), scrolled=False)
    action = Act("Press", "Press the Down arrow key", key="ArrowDown", logical_assertion="The 'long page' shows a 4")
    with open_page(browser, "long.html") as page:
        before = capture_state(page)
        assert perform(page, action)[0]
        page.wait_for_function("scrollY > 5")  # keyboard scrolling is animated
        verdict = judge(action, before, capture_state(page), reference)
    assert verdict.evidence["changed"] and verdict.evidence["changes"]["scroll"]
    assert not verdict.passed and verdict.evidence["text_change_missing"], verdict.reason


@browser_test
def test_the_reference_delta_decides_when_words_differ(browser):
    """The reference revealed shipping text: the page revealing it passes, other text fails."""
    reference = RefDelta(added="free shipping on orders over 50 dollars".split(), changed=True, source="reference")
    assertion = "The 'Delivery info' panel opens"
    with open_page(browser, "assertion.html") as page:
        other = run_step(page, Act("Click", "Click Show policy", logical_assertion=assertion), reference)
        right = run_step(page, Act("Click", "Click Show details", logical_assertion=assertion), reference)
    assert not other.passed
    assert right.passed and right.evidence["delta"]["f1"] == 1.0

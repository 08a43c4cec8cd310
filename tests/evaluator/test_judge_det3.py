"""Protocol iwr-det-3's judge fixes (issue 14): what each one finds or decides, and that iwr-det-2 does not."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from evaluator.agents.description import parse_description
from evaluator.agents.params import AssertionParams, TargetingParams
from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import RefDelta, judge
from evaluator.judges.elements import state_clause_names
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page

DET2 = get_protocol("iwr-det-2").params
DET3 = get_protocol("iwr-det-3").params


@pytest.fixture(scope="module")
def pictures_page(browser):
    with open_page(browser, "pictures.html") as page:
        yield page


def chosen(page, description: str, params=DET3) -> str | None:
    target = find_target(page, Act("Click", description), params)
    return target.chosen["id"] if target.found else None


# --------------------------------------------------------------------------- element finder


@pytest.mark.browser
@pytest.mark.parametrize("description, wanted", [
    ("Tap the double right arrow (») next to the left one", "next"),
    ("Tap the « arrow", "prev"),
    ("Open the three-bar menu icon", "menu"),
    ("Click the magnifier", "search"),
    ("Click the small square button with an upward arrow at the bottom right corner", "top"),
])
def test_glyphs_find_icon_only_controls(pictures_page, description, wanted):
    """A glyph character or glyph words pick the control that shows that glyph or names it in its icon."""
    assert chosen(pictures_page, description) == wanted


@pytest.mark.browser
@pytest.mark.parametrize("description, wanted", [
    ("Click the first (top-left) photo in the grid", "p1"),
    ("Click the middle photo of the second row", "p5"),
    ("Click the third photo", "p3"),
    ("Click the second tile", "t2"),
])
def test_picture_nouns_and_grid_positions_find_images(pictures_page, description, wanted):
    """Picture nouns match image-bearing links and tiles; ordinals, rows and columns follow the laid-out grid."""
    assert chosen(pictures_page, description) == wanted


@pytest.mark.browser
def test_check_verbs_find_the_checkbox_beside_its_text(pictures_page):
    """'Tick the checkbox next to Blue' and 'Untick Green' pick the box itself, not the text beside it."""
    assert chosen(pictures_page, "Tick the checkbox next to 'Blue'") == "blue"
    assert chosen(pictures_page, "Untick 'Green'") == "green"


@pytest.mark.browser
def test_attribute_labels_name_svg_shapes(pictures_page):
    """A board square labelled in data-* is a target, found by that label."""
    assert chosen(pictures_page, "Click the square e4 on the board") == "sq-e4"


@pytest.mark.browser
def test_iwr_det_2_keeps_its_element_finder(pictures_page):
    """Under iwr-det-2 a glyph-only description and a data-* label do not find their element, as before."""
    assert chosen(pictures_page, "Tap the « arrow", DET2) != "prev"
    assert chosen(pictures_page, "Click the square e4 on the board", DET2) != "sq-e4"


def test_descriptions_read_glyphs_and_grid_only_under_iwr_det_3():
    """The new readings need the iwr-det-3 targeting parameters."""
    det3 = TargetingParams.from_dict(DET3)
    desc = parse_description("the middle tile of the second row", params=det3)
    assert (desc.grid_row, desc.picture) == (2, True)
    assert parse_description("Tap the » arrow", params=det3).concepts == ["right"]
    old = parse_description("the middle tile of the second row")
    assert (old.grid_row, old.ordinal, old.glyphs) == (None, 2, [])


# --------------------------------------------------------------------------- assertions


def _png(size=(200, 100), box=None, rgb=(255, 255, 255), fill=(0, 0, 0)) -> bytes:
    image = Image.new("RGB", size, rgb)
    if box:
        image.paste(Image.new("RGB", (box[2], box[3]), fill), (box[0], box[1]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _state(elements, screenshot, text="Green Blue Pink") -> PageState:
    return PageState(url="http://iwr.test/", text=text, blocks=[{"text": text}], elements=elements,
                     dom_hash=str(len(str(elements))), screenshot=screenshot)


def _reference(tmp_path, changed_box, scrolled=False) -> RefDelta:
    before, after = tmp_path / "ref_0.png", tmp_path / "ref_1.png"
    before.write_bytes(_png())
    after.write_bytes(_png(box=changed_box))
    fraction = 0.0 if changed_box is None else changed_box[2] * changed_box[3] / 20000
    return RefDelta(changed=changed_box is not None, source="reference", scrolled=scrolled,
                    detail={"pixel_fraction": fraction}, texts=("Green Blue Pink", "Green Blue Pink"),
                    images=(before, after))


GREEN_BOX = [10, 10, 40, 40]


def _green(state: str) -> list[dict]:
    return [{"name": "Green", "box": GREEN_BOX, "state": state}, {"name": "Blue", "box": [60, 10, 40, 40],
                                                                    "state": "control"}]


def _judge(assertion, before, after, reference, params=DET3):
    return judge(Act("Click", "Click it", logical_assertion=assertion), before, after, reference, params)


def test_a_state_clause_is_judged_on_the_named_element(tmp_path):
    """"'Green' is no longer highlighted" passes when Green's state changed where the reference's pixels did."""
    reference = _reference(tmp_path, GREEN_BOX)
    before = _state(_green("control active"), _png())
    after = _state(_green("control"), _png(box=GREEN_BOX))
    verdict = _judge("'Green' is no longer highlighted", before, after, reference)
    assert verdict.passed, verdict.reason
    assert not _judge("'Green' is no longer highlighted", before, after, reference, DET2).passed


def test_a_state_clause_fails_when_the_named_element_did_not_change(tmp_path):
    """Content that moved elsewhere does not make 'X is now highlighted' true when X kept its look."""
    reference = _reference(tmp_path, GREEN_BOX)
    before = _state(_green("control"), _png())
    after = _state(_green("control"), _png(box=[120, 50, 60, 40]))
    assert not _judge("'Green' is now highlighted", before, after, reference).passed


def test_a_highlight_set_on_a_parent_holds_when_the_element_looks_like_the_reference(tmp_path):
    """'Green' highlighted by its parent's class (li.active > a): Green's own state stays, its place
    changed and now looks as the reference's does; a different look there, or no change, still fails."""
    reference = _reference(tmp_path, GREEN_BOX)
    before = _state(_green("control"), _png())
    after = _state(_green("control"), _png(box=GREEN_BOX))
    verdict = _judge("'Green' is now highlighted", before, after, reference)
    assert verdict.passed, verdict.reason
    assert verdict.evidence["phrases"][0]["looks_like_reference"] is True
    other_look = _state(_green("control"), _png(box=GREEN_BOX, fill=(200, 30, 30)))
    assert not _judge("'Green' is now highlighted", before, other_look, reference).passed
    unchanged = _state(_green("control"), _png())
    assert not _judge("'Green' is now highlighted", before, unchanged, reference).passed
    off = {**DET3, "assertion": {**DET3["assertion"], "element_look": False}}
    assert not _judge("'Green' is now highlighted", before, after, reference, off).passed


def test_an_element_standing_elsewhere_in_the_reference_is_judged_by_its_own_state(tmp_path):
    """An unstyled copy's 'Green' box sits where the reference shows something else: the reference's
    pixels there say nothing about it, so its own state change decides."""
    reference = _reference(tmp_path, [120, 50, 60, 40])  # the reference changed elsewhere only
    grey = (180, 180, 180)
    before = _state(_green("control"), _png(box=GREEN_BOX, fill=grey))  # unlike the reference's first checkpoint
    after = _state(_green("control active"), _png(box=GREEN_BOX, fill=grey))
    assert _judge("'Green' is now highlighted", before, after, reference).passed
    off = {**DET3, "assertion": {**DET3["assertion"], "element_place_check": False}}
    assert not _judge("'Green' is now highlighted", before, after, reference, off).passed
    same_place = _state(_green("control"), _png())  # where the reference stands still, a change is wrong
    moved = _state(_green("control active"), _png())
    assert not _judge("'Green' is now highlighted", same_place, moved, reference).passed


def _light_grid_reference(tmp_path) -> RefDelta:
    """White cards leave a light grey page: 13 levels per channel, under the page-wide tolerance."""
    before, after = tmp_path / "grid_0.png", tmp_path / "grid_1.png"
    before.write_bytes(_png(rgb=(242, 242, 242), box=[0, 40, 200, 60], fill=(255, 255, 255)))
    after.write_bytes(_png(rgb=(242, 242, 242)))
    return RefDelta(changed=True, source="reference", scrolled=False, detail={"pixel_fraction": 0.0},
                    texts=("Green Blue Pink", "Green Blue Pink"), images=(before, after))


def test_a_filtered_light_grid_is_a_large_change_a_ticked_box_does_not_match(tmp_path):
    """Counted at a fine tolerance, the reference's vanishing cards are 60% of the view; a page that
    only ticked its box (no script ran) is not commensurate, one whose grid also changed is."""
    reference = _light_grid_reference(tmp_path)
    before = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}], screenshot=_png(),
                       checked={"0": False})
    ticked = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}],
                       screenshot=_png(box=[4, 4, 6, 6]), checked={"0": True})
    filtered = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}],
                         screenshot=_png(box=[0, 40, 200, 60], fill=(230, 230, 230)), checked={"0": True})
    assertion = "The grid is filtered"
    assert not _judge(assertion, before, ticked, reference).passed
    assert _judge(assertion, before, filtered, reference).passed
    coarse = {**DET3, "assertion": {**DET3["assertion"], "commensurate_tolerance": 0}}
    assert _judge(assertion, before, ticked, reference, coarse).passed


def test_a_page_whose_scripts_changed_its_dom_reacted_however_little_it_draws(tmp_path):
    """An unstyled copy filters its grid (inline styles, classes) and draws almost none of it where the
    reference's grid visibly changed in place: the page reacted. A native tick with no script changes
    no DOM and is not commensurate; where the reference scrolled, a DOM change is no jump."""
    reference = _light_grid_reference(tmp_path)
    quiet = _png()
    before = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}], screenshot=quiet,
                       checked={"0": False}, dom_hash="a")
    scripted = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}], screenshot=quiet,
                         checked={"0": True}, dom_hash="b")
    native = PageState(url="http://iwr.test/", text="Green", blocks=[{"text": "Green"}], screenshot=quiet,
                       checked={"0": True}, dom_hash="a")
    assertion = "The grid is filtered"
    assert _judge(assertion, before, scripted, reference).passed
    assert not _judge(assertion, before, native, reference).passed
    off = {**DET3, "assertion": {**DET3["assertion"], "dom_reaction_commensurate": False}}
    assert not _judge(assertion, before, scripted, reference, off).passed
    scrolled = _light_grid_reference(tmp_path)
    scrolled.scrolled = True
    assert not _judge(assertion, before, scripted, scrolled).passed


def test_state_words_make_clauses_about_named_elements():
    """Names of visible-state clauses are read from quotes and capitals; other clauses name none."""
    assert state_clause_names("'Seventh' is highlighted and the 'Next' button is greyed out") == {"seventh", "next"}
    assert state_clause_names("'Walk the dog' is added to the list") == set()


def test_an_unchanged_reference_checks_the_described_state(tmp_path):
    """Where the reference did not change (a click on the open tab), the state is checked, no change demanded."""
    reference = _reference(tmp_path, None)
    state = _state([], _png(), text="Home Profile Contact Profile details")
    assertion = "The 'Profile details' panel is shown"
    assert _judge(assertion, state, state, reference).passed
    missing = _state([], _png(), text="Home Profile Contact")
    assert not _judge(assertion, missing, missing, reference).passed


def test_a_change_must_be_commensurate_with_the_reference(tmp_path):
    """A hash-only change does not pass where the reference visibly moved a large part of its view."""
    reference = _reference(tmp_path, [0, 0, 200, 60])
    before = PageState(url="http://iwr.test/", text="Intro Features", blocks=[{"text": "Intro"}], screenshot=_png())
    after = PageState(url="http://iwr.test/#features", text="Intro Features", blocks=[{"text": "Intro"}],
                      screenshot=_png())
    assertion = "The page jumps to the 'Features' section"
    assert not _judge(assertion, before, after, reference).passed
    assert _judge(assertion, before, after, reference, DET2).passed


def test_iwr_det_3_parameters_default_off():
    """The new assertion parameters are off unless a protocol turns them on (iwr-det-2 is unaffected)."""
    params = AssertionParams()
    assert not (params.element_state or params.unchanged_reference_state or params.commensurate_change)
    assert AssertionParams.from_dict(DET3).element_state


# --------------------------------------------------------------------------- settling


TRANSITION_PAGE = """<style>
  #side { width: 200px; height: 50px; background: #36c; transition: width 3s; }
  #side.narrow { width: 60px; }
  @keyframes spin { to { transform: rotate(360deg); } }
  #spinner { width: 20px; height: 20px; background: #c33; animation: spin 1s linear infinite; }
</style>
<button id="toggle" onclick="side.classList.toggle('narrow')">Toggle</button>
<div id="side"></div><div id="spinner"></div><p id="chart">wide</p>
<script>
  side.addEventListener("transitionend", () => { chart.textContent = "resized " + side.offsetWidth; });
</script>"""


@pytest.mark.browser
def test_layout_settles_after_a_transition_under_iwr_det_3(browser, tmp_path):
    """A 3 s sidebar transition (real time, not page time) and the resize its end starts are over before
    the screenshot, whatever the machine's speed; an endless spinner does not hold settling up."""
    from evaluator.page_session import SiteMap, page_session

    (tmp_path / "index.html").write_text(TRANSITION_PAGE, encoding="utf-8")
    site = SiteMap.for_page(tmp_path / "index.html")
    settle = DET3["settle"]
    with page_session(browser, site, 800, 600, settle_params=settle) as session:
        session.goto()
        session.page.click("#toggle")
        result = session.after_action()
        assert session.page.inner_text("#chart") == "resized 60"
        assert 0 < result["layout_steps"] < settle["layout_max_steps"]

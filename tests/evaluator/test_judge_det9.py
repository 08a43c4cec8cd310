"""Protocol iwr-det-9's mechanisms (issue 14, found on the tuning half): whether a named element stands where
the reference shows it is told by what stands there, not by the blank background a wide box shares with the
reference (an unstyled toast demo); 'the top row' is a grid row, an edge said of a look places nothing, and
look-alikes are of one kind (a card grid under a toolbar of colour dots); and iwr-det-8 still decides as it did."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from evaluator.agents.description import parse_description
from evaluator.agents.params import TargetingParams
from evaluator.judges.assertion import judge
from evaluator.judges.pixels import region_change_fraction, region_content_change_fraction
from evaluator.judges.reference import RefDelta, word_delta
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page
from tests.evaluator.test_judge_det3 import chosen

DET8 = get_protocol("iwr-det-8").params
DET9 = get_protocol("iwr-det-9").params

ROW = [8, 40, 780, 20]  # a row spanning the window: mostly blank, its words at the left
TICK = [12, 44, 12, 12]  # the checkbox in that row


def _picture(*blocks, size=(800, 200)) -> bytes:
    """A white picture with dark blocks ``(x, y, w, h)`` (a word, a box) painted on it."""
    image = Image.new("RGB", size, (255, 255, 255))
    for x, y, w, h, *fill in blocks:
        image.paste(Image.new("RGB", (w, h), tuple(fill) or (30, 30, 30)), (x, y))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# --------------------------------------------------------------------------- the pixel comparison


def test_a_wide_blank_box_with_other_words_is_not_the_same_place():
    """The page's words at the row's left, the reference's further along the row: over the whole row only a
    few percent of the pixels changed, over what stands there nearly all of them did."""
    page, reference = _picture([12, 44, 90, 12]), _picture([200, 44, 90, 12])
    assert region_change_fraction(page, reference, ROW, 0.5, 24) < 0.2
    assert region_content_change_fraction(page, reference, ROW, 0.5, 24) > 0.9


def test_the_same_words_are_the_same_place_and_a_blank_box_cannot_be_told():
    """Identical content is no change at all; a box that is one plain colour in both has nothing to compare;
    a box painted another colour everywhere changed everywhere."""
    words = _picture([12, 44, 90, 12])
    assert region_content_change_fraction(words, words, ROW, 0.5, 24) == 0.0
    assert region_content_change_fraction(_picture(), _picture(), ROW, 0.5, 24) is None
    grey = _picture([0, 30, 800, 40, 128, 128, 128])
    assert region_content_change_fraction(_picture(), grey, ROW, 0.5, 24) == 1.0
    assert region_content_change_fraction(words, None, ROW, 0.5, 24) is None


def test_a_small_edit_among_the_words_stays_small():
    """One word of five changed: the share counts the changed word against all the words shown, not against
    the one changed word alone."""
    before = _picture(*[[12 + 60 * i, 44, 50, 12] for i in range(5)])
    after = _picture(*[[12 + 60 * i, 44, 50, 12] for i in range(4)], [252, 44, 50, 12, 200, 30, 30])
    share = region_content_change_fraction(before, after, ROW, 0.5, 24)
    assert 0.1 < share < 0.3


# --------------------------------------------------------------------------- the clause


def _reference(tmp_path) -> RefDelta:
    """The reference ticked its own box further down the page; its row for 'Close Button' is elsewhere."""
    before, after = tmp_path / "ref_0.png", tmp_path / "ref_1.png"
    before.write_bytes(_picture([200, 44, 90, 12], [12, 120, 12, 12, 200, 200, 200]))
    after.write_bytes(_picture([200, 44, 90, 12], [12, 120, 12, 12, 20, 90, 200]))
    return RefDelta(changed=True, source="reference", scrolled=False, detail={"pixel_fraction": 0.001},
                    texts=("Close Button", "Close Button"), images=(before, after))


def _state(state: str, screenshot: bytes) -> PageState:
    elements = [{"name": "Close Button", "box": ROW, "state": "row"},
                {"name": "Close Button", "box": TICK, "state": state}]
    return PageState(url="http://iwr.test/", text="Close Button", blocks=[{"text": "Close Button"}],
                     elements=elements, dom_hash=state, screenshot=screenshot, checked={"0": "checked" in state})


def _tick(before, after, reference, params):
    return judge(Act("Click", "Tick the 'Close Button' checkbox", logical_assertion="'Close Button' is ticked"),
                 before, after, reference, params)


def test_an_unstyled_row_elsewhere_in_the_reference_is_judged_by_its_own_state(tmp_path):
    """An unstyled copy's row holds the label at its left where the reference's row shows other words: under
    iwr-det-8 the blank row passed for the same place, the reference's pixels there did not change, and the
    ticked box failed the step; under iwr-det-9 the place is told apart and the box's own state decides."""
    reference = _reference(tmp_path)
    before = _state("checkbox", _picture([30, 44, 80, 12], [12, 44, 12, 12, 200, 200, 200]))
    ticked = _state("checkbox;checked", _picture([30, 44, 80, 12], [12, 44, 12, 12, 20, 90, 200]))
    assert not _tick(before, ticked, reference, DET8).passed
    verdict = _tick(before, ticked, reference, DET9)
    assert verdict.passed, verdict.reason
    left_alone = _state("checkbox", _picture([30, 44, 80, 12], [12, 44, 12, 12, 200, 200, 200]))
    assert not _tick(before, left_alone, reference, DET9).passed


def test_where_the_page_stands_as_the_reference_a_change_the_reference_did_not_make_still_fails(tmp_path):
    """The same row, the same words, the same place: the reference did not change it, so a page whose box
    changed there does something the reference did not (the clause is about the box the reference ticked)."""
    reference = _reference(tmp_path)
    same = _picture([200, 44, 90, 12], [12, 120, 12, 12, 200, 200, 200])
    before, after = _state("checkbox", same), _state("checkbox;checked", same)
    check = _tick(before, after, reference, DET9).evidence["phrases"][0]
    assert check["kind"] == "element" and check["reference_change"] == 0.0 and not check["holds"]


# --------------------------------------------------------------------------- targeting: rows, look edges, one kind

T8 = TargetingParams.from_dict(DET8)
T9 = TargetingParams.from_dict(DET9)


@pytest.mark.parametrize(("text", "row", "col"), [
    ("Click the card with the pink top edge in the top row", 1, None),
    ("Click the last tile in the bottom row", -1, None),
    ("Click the photo in the left column", None, 1),
    ("Click the rightmost column's header", None, -1),
])
def test_a_side_row_is_a_grid_position(text, row, col):
    """'The top row' is the grid's first row as 'the first row' is; iwr-det-8 read 'top' as the window's top."""
    read, before = parse_description(text, params=T9), parse_description(text, params=T8)
    assert (read.grid_row, read.grid_col) == (row, col) and not read.regions
    assert (before.grid_row, before.grid_col) == (None, None)


@pytest.mark.parametrize("text", [
    "Click the card with the pink top edge",
    "Click the tile having a red left edge",
    "Click the blue right edge card",
])
def test_an_edge_said_of_the_look_places_nothing(text):
    """A side and 'edge' after a colour word or 'with' / 'having' describe the target's border."""
    read = parse_description(text, params=T9)
    assert read.edge is None and "edge" in read.appearance
    assert parse_description(text, params=T8).edge


@pytest.mark.parametrize(("text", "edge"), [
    ("Click the button at the right end of the row", "right"),
    ("Click the link at the top edge of the menu", "top"),
])
def test_an_edge_of_a_place_still_places(text, edge):
    assert parse_description(text, params=T9).edge == edge


@pytest.fixture(scope="module")
def card_grid(browser):
    with open_page(browser, "card_grid.html") as page:
        yield page


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted"), [
    ("Click the card with the pink top edge in the top row", "c3"),
    ("Click the pink card in the bottom row", "c6"),
    ("Click the second blue card", "c5"),
    ("Click the pink dot in the toolbar", "d3"),
])
def test_cards_are_told_from_the_dots_above_them(card_grid, text, wanted):
    """The filter dots paint the cards' hues too; look-alikes are of one kind, so rows and ordinals count cards."""
    assert chosen(card_grid, text, DET9) == wanted


@pytest.mark.browser
def test_iwr_det_8_clicked_the_dot(card_grid):
    assert chosen(card_grid, "Click the card with the pink top edge in the top row", DET8) == "d3"


@pytest.fixture(scope="module")
def wrapped_tabs(browser):
    with open_page(browser, "wrapped_tabs.html") as page:
        yield page


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted", "before"), [
    ("Tap the tab at the right end of the second row", "t4", "t3"),
    ("Tap the tab at the far right of the top row", "t2", None),
    ("Tap the first tab of the second row", "t3", "t3"),
])
def test_an_edge_picks_in_the_row_a_grid_position_names(wrapped_tabs, text, wanted, before):
    """Four tabs wrapped into two rows: with a row named, 'right end' is the row's last tab; iwr-det-8 took the
    row's first whatever the edge said."""
    assert chosen(wrapped_tabs, text, DET9) == wanted
    if before is not None:
        assert chosen(wrapped_tabs, text, DET8) == before


# --------------------------------------------------------------------------- a quoted effect nowhere on the page

TABS = "First Step Second Step Third Step Forth Step"
OPENED = "'Forth Step' is open and its text starts with 'Quisque at sem turpis'"


def _tab_reference() -> RefDelta:
    texts = (f"{TABS} Donec mi sapien, hendrerit nec egestas", f"{TABS} Quisque at sem turpis, id sagittis diam")
    added, removed = word_delta(*texts)
    return RefDelta(added=added, removed=removed, changed=True, source="reference", scrolled=False,
                    detail={"pixel_fraction": 0.05}, texts=texts)


def _tab_page(text: str, dom: str) -> PageState:
    return PageState(url="http://iwr.test/", text=f"{TABS} {text}", blocks=[{"text": f"{TABS} {text}"}],
                     dom_hash=dom, screenshot=_picture([10, 10, 100, 10]))


def _open_forth(after: PageState, params):
    before = _tab_page("Donec mi sapien, hendrerit nec egestas", "second")
    return judge(Act("Click", "Tap the tab at the right end of the second row", logical_assertion=OPENED),
                 before, after, _tab_reference(), params)


def test_another_tab_opened_fails_though_the_words_it_removed_agree():
    """The page opened the third tab: neither phrase holds, but it removed the words the reference removed, so
    the word delta agreed and passed the step under iwr-det-8; under iwr-det-9 the reference's quoted words,
    nowhere on a page whose words changed, fail it."""
    other = _tab_page("Morbi ornare tellus at elit ultrices", "third")
    assert _open_forth(other, DET8).passed
    verdict = _open_forth(other, DET9)
    assert not verdict.passed and verdict.evidence["quotes_absent"] == ["Quisque at sem turpis"]
    right = _tab_page("Quisque at sem turpis, id sagittis diam", "forth")
    assert _open_forth(right, DET9).passed


def test_a_page_whose_words_did_not_change_is_judged_as_before():
    """A page drawing its panel (its text unchanged, its pixels changed) is not failed by text it cannot show."""
    drawn = PageState(url="http://iwr.test/", text=f"{TABS} Donec mi sapien, hendrerit nec egestas",
                      blocks=[{"text": TABS}], dom_hash="forth",
                      screenshot=_picture([10, 10, 100, 10], [10, 40, 300, 60]))
    verdict = _open_forth(drawn, DET9)
    assert "quotes_absent" not in verdict.evidence
    assert verdict.passed == _open_forth(drawn, DET8).passed


@pytest.fixture(scope="module")
def photo_grid(browser):
    with open_page(browser, "photo_grid.html") as page:
        yield page


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted"), [
    ("Click the photo in the middle of the bottom row", "p5"),
    ("Tap the photo on the left in the bottom row", "p4"),
    ("Click the last photo", "p6"),
])
def test_a_small_picture_below_a_photo_grid_is_no_look_alike(photo_grid, text, wanted):
    """A scroll hint drawn by an image is a link showing a picture, like the photos' links, but a tenth of their
    size: the grid's bottom row and its last photo are the photos'. iwr-det-8 took the hint for the bottom row."""
    assert chosen(photo_grid, text, DET9) == wanted


@pytest.mark.browser
def test_iwr_det_8_took_the_hint_for_the_bottom_row(photo_grid):
    assert chosen(photo_grid, "Click the photo in the middle of the bottom row", DET8) == "hint"


def test_a_counter_the_reference_shows_on_lines_of_its_own_is_a_gained_quote():
    """The reference's text holds a lightbox counter as '1', '/', '3' on lines of their own; a scripts-stripped
    page that followed the photo's link to the picture file has other words and no '1/3': it fails the step."""
    texts = ("SimpleLightbox v2.14.3 Documentation Download", "×\n1\n/\n3\n‹\n›\nDonate")
    added, removed = word_delta(*texts)
    reference = RefDelta(added=added, removed=removed, changed=True, source="reference", scrolled=False,
                         detail={"pixel_fraction": 0.98}, texts=texts)
    before = PageState(url="http://iwr.test/", text=texts[0], blocks=[{"text": texts[0]}], dom_hash="grid",
                       screenshot=_picture([10, 10, 100, 10]))
    followed = PageState(url="http://iwr.test/img/full/02.jpg", text="02.jpg (1920x1280)",
                         blocks=[{"text": "02.jpg (1920x1280)"}], dom_hash="picture",
                         screenshot=_picture([0, 0, 800, 200, 40, 40, 40]))
    act = Act("Click", "Click the middle photo of the top row", logical_assertion="The photo opens large with "
              "the counter '1/3' at the top left")
    verdict = judge(act, before, followed, reference, DET9)
    assert not verdict.passed and verdict.evidence["quotes_absent"] == ["1/3"]

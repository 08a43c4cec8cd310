"""Protocol iwr-det-6's mechanisms (issue 14, found on the tuning half: a toolbar of marks whose labels
are hidden): what each decides on a page, and that iwr-det-5 still decides as it did."""

from __future__ import annotations

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.glyphs import glyph_score
from evaluator.agents.params import TargetingParams
from evaluator.agents.scoring import attribute_tokens
from evaluator.agents.targeting import find_target
from evaluator.judges.assertion import judge
from evaluator.judges.reference import RefDelta
from evaluator.judges.state import PageState
from evaluator.protocols import get_protocol
from tests.evaluator.pages import Act, open_page
from tests.evaluator.test_judge_det3 import GREEN_BOX, _green, _png, _state, chosen

DET5 = get_protocol("iwr-det-5").params
DET6 = get_protocol("iwr-det-6").params
P5 = TargetingParams.from_dict(DET5)
P6 = TargetingParams.from_dict(DET6)


def _read(text: str, params: TargetingParams = P6) -> dict:
    return parse_description(text, params=params).to_dict()


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize(("text", "edge"), [
    ("Click the small button at the far left of the toolbar", "left"),
    ("Click the rightmost tab", "right"),
    ("Click the button at the right end of the row", "right"),
    ("Tap the icon at the very top of the list", "top"),
    ("Click the bottommost link", "bottom"),
])
def test_edge_words_name_a_side_and_no_name(text, edge):
    """'far', 'end' and the -most words place the target; none of them is a name it must show, and 'far
    left of the toolbar' starts no relation to a place outside the toolbar."""
    read = _read(text)
    assert read["edge"] == edge
    assert "far" not in read["content"] and "end" not in read["content"]
    assert read["relations"] == []


def test_a_bare_side_of_an_anchor_reads_as_before():
    """'at the right of the checkboxes' is said of a place outside them too: still a relation."""
    read = _read("Click 'Desc' at the right of the checkboxes")
    assert "edge" not in read
    assert read["relations"][0]["kind"] == "right"


def test_look_words_are_no_names():
    """'ring' and 'empty' describe the look: matched against classes, never required as a label."""
    read = _read("Click the dark empty button")
    assert read["content"] == [] and "empty" in read["appearance"]
    assert _read("Click the small ring button")["content"] == []
    assert _read("Click the 'Empty' button")["quotes"] == ["Empty"]  # a quoted word stays a label
    assert _read("Click the dark empty button", P5)["content"] == ["empty"]  # iwr-det-5 as it was


@pytest.mark.parametrize(("text", "kind", "phrase"), [
    ("Click the dark button right after the pink dot", "after", "the pink dot"),
    ("Click the tab just before 'Settings'", "before", '"Settings"'),
    ("Click the button following the blue dot", "after", "the blue dot"),
])
def test_sequence_relations_keep_the_anchor_as_said(text, kind, phrase):
    read = _read(text)
    assert read["relations"] == [{"kind": kind, "quotes": ["Settings"] if "Settings" in text else [], "words": [],
                                  "role": None, "phrase": phrase}]
    assert read.get("colours", []) == []  # the anchor's hue is not the target's
    assert "right" not in read["regions"]


def test_iwr_det_5_reads_right_after_as_a_region_and_the_anchor_as_the_target():
    read = _read("Click the dark button right after the pink dot", P5)
    assert read["regions"] == ["right"] and read["colours"] == ["pink"] and read["relations"] == []


def test_sort_words_name_the_arrows():
    """A chevron whose only name is a hidden 'Desc' label and data-sort='default:desc' is the down arrow."""
    desc_button = {"tag": "button", "text": "Desc", "cls": "control sort", "data_labels": ["default:desc"]}
    asc_button = {"tag": "button", "text": "Asc", "cls": "control sort", "data_labels": ["default:asc"]}

    def score(text, cand, p):
        d = parse_description(text, params=p)
        return glyph_score(d.glyphs, d.concepts, cand, attribute_tokens(cand), p.glyph_shapes, p.glyph_labels)

    assert score("Click the down arrow button", desc_button, P6) == 0.9
    assert score("Click the down arrow button", asc_button, P6) == 0.0
    assert score("Click the upward arrow", asc_button, P6) == 0.9
    assert score("Click the down arrow button", desc_button, P5) == 0.0
    long_label = {"tag": "button", "text": "Sort the list in descending order please", "cls": "x"}
    assert score("Click the down arrow button", long_label, P6) == 0.0  # a sentence is not a glyph's name


# --------------------------------------------------------------------------- on a page


@pytest.fixture(scope="module")
def toolbar_page(browser):
    with open_page(browser, "toolbar.html") as page:
        yield page


@pytest.mark.browser
@pytest.mark.parametrize(("text", "wanted"), [
    ("Click the small ring button at the far left of the toolbar", "all"),
    ("Click the button at the far right of the toolbar", "desc"),
    ("Click the rightmost tab", "t-settings"),
    ("Click the dark empty button right after the blue dot", "none"),
    ("Click the button just before the blue dot", "pink"),
    ("Click the tab right after 'Home'", "t-profile"),
    ("Click the down arrow button in the toolbar", "desc"),
    ("Click the up arrow button", "asc"),
])
def test_iwr_det_6_finds_controls_named_by_place_and_look(toolbar_page, text, wanted):
    assert chosen(toolbar_page, text, DET6) == wanted


@pytest.mark.browser
@pytest.mark.parametrize("text", [
    "Click the small ring button at the far left of the toolbar",
    "Click the dark empty button right after the blue dot",
    "Click the down arrow button in the toolbar",
])
def test_iwr_det_5_missed_them(toolbar_page, text):
    """The defects iwr-det-6 fixes, as iwr-det-5 still scores them: no element, or another one."""
    wanted = {"ring": "all", "empty": "none", "down": "desc"}
    key = next(k for k in wanted if k in text)
    assert chosen(toolbar_page, text, DET5) != wanted[key]


@pytest.mark.browser
def test_a_sequence_anchor_not_on_the_page_leaves_the_place_open(toolbar_page):
    """'After the purple dot' on a page without one: the cue is unused (no place decides), as a relation's
    missing anchor is; the description's other words still choose."""
    target = find_target(toolbar_page, Act("Click", "Click the 'Settings' tab right after the purple dot"), DET6)
    assert target.chosen["id"] == "t-settings"
    assert target.chosen["parts"]["position"] == 0.5


@pytest.mark.browser
def test_nothing_on_that_side_of_the_anchor_places_nothing(toolbar_page):
    """'The tab before Home': Home is the first tab, so no tab gets the position part."""
    target = find_target(toolbar_page, Act("Click", "Click the tab just before 'Home'"), DET6)
    assert target.runner_up is not None
    assert target.chosen["parts"]["position"] == 0.0


# --------------------------------------------------------------------------- idle phrases

SLIDES_BEFORE = "Slide 1 Slide 2"
SLIDES_AFTER = "Slide 2 Slide 3"


def _slides(text: str, scroll: float, dom: str = "a") -> PageState:
    return PageState(url="http://iwr.test/", text="Slide 1 Slide 2 Slide 3 Slide 4", blocks=[{"text": text}],
                     dom_hash=dom, scrollers={"track": (scroll, 0.0)})


def _carousel_moved() -> RefDelta:
    """The reference's carousel slid one card: 'Slide 1' left the view, 'Slide 3' came in; 'Slide 2' was in
    view before and after."""
    return RefDelta(added=["3"], removed=["1"], changed=True, source="reference", scrolled=True,
                    detail={"pixel_fraction": 0.05}, texts=(SLIDES_BEFORE, SLIDES_AFTER))


def _slide(before: PageState, after: PageState, params):
    action = Act("Click", "Tap the double right arrow (»)",
                 logical_assertion="The carousel slides one card to the left: 'Slide 2' is now the first card in view")
    return judge(action, before, after, _carousel_moved(), params)


def test_a_phrase_the_reference_showed_unchanged_carries_no_verdict():
    """A page that only nudged its scroller a few pixels still shows 'Slide 2', as it did before: under
    iwr-det-6 the phrase is idle and the word delta (nothing left the view) fails the step."""
    before, nudged = _slides(SLIDES_BEFORE, 0.0), _slides(SLIDES_BEFORE, 12.0)
    verdict = _slide(before, nudged, DET6)
    assert not verdict.passed and verdict.evidence["phrases_idle"] is True
    assert verdict.evidence["phrases"][0]["idle"] is True
    assert "deltas agree=False" in verdict.reason
    assert _slide(before, nudged, DET5).passed  # iwr-det-5: the phrase carried the step


def test_a_page_that_slides_as_the_reference_did_passes():
    """The same words leave and enter the view as in the reference: the delta agrees."""
    verdict = _slide(_slides(SLIDES_BEFORE, 0.0), _slides(SLIDES_AFTER, 300.0, "b"), DET6)
    assert verdict.passed and verdict.evidence["deltas_agree"] is True


def test_a_phrase_that_appears_on_the_page_is_not_idle():
    """Where 'Slide 2' was not in the page's view before the action and is after, it is the page's change."""
    verdict = _slide(_slides("Slide 1", 0.0), _slides("Slide 2", 300.0, "b"), DET6)
    assert verdict.passed
    assert not verdict.evidence["phrases"][0].get("idle")


def test_a_scroll_keeps_its_phrases():
    """A Scroll changes only what is in view: a page whose layout shows 'Bar Chart' before and after the scroll
    shows the described state, and the phrase carries the step as under iwr-det-5."""
    action = Act("Scroll", "Scroll down the charts page", logical_assertion="The 'Bar Chart' card is shown")
    page = PageState(url="http://iwr.test/", text="Area Chart Bar Chart", blocks=[{"text": "Area Chart Bar Chart"}],
                     scroll=(0.0, 0.0))
    scrolled = PageState(url="http://iwr.test/", text="Area Chart Bar Chart",
                         blocks=[{"text": "Bar Chart Footer Copyright"}], scroll=(0.0, 400.0))
    reference = RefDelta(added=["bar", "chart"], removed=["area"], changed=True, source="reference", scrolled=True,
                         texts=("Area Chart", "Bar Chart"))
    verdict = judge(action, page, scrolled, reference, DET6)
    assert verdict.passed and not verdict.evidence["phrases"][0].get("idle")
    assert verdict.evidence["deltas_agree"] is False  # the words in view moved otherwise: the phrase decided



# --------------------------------------------------------------------------- table headers, quoted words


def test_a_column_header_is_a_table_cell_not_the_page_header():
    read = _read("Click the 'Age' column header to sort by age")
    assert read["roles"] == ["columnheader"] and read["regions"] == []
    assert _read("Click the logo in the header")["regions"] == ["header"]  # alone, still the page's header
    assert _read("Click the 'Age' column header", P5)["regions"] == ["header"]  # iwr-det-5 as it was


def test_a_quoted_label_is_not_found_inside_another_word():
    from evaluator.agents.scoring import quote_match

    assert quote_match("age", "pages") > P5.accept_threshold  # iwr-det-5: 'Age' matched "Pages" at 0.82
    assert quote_match("age", "pages", word_bounds=True) < 0.7
    assert quote_match("add to cart", "add to cart!", word_bounds=True) == 1.0
    assert quote_match("salary", "salary: activate to sort", word_bounds=True) == quote_match(
        "salary", "salary: activate to sort")


@pytest.fixture(scope="module")
def table_page(browser):
    with open_page(browser, "table_header.html") as page:
        yield page


@pytest.mark.browser
def test_the_column_header_is_found_under_a_top_navigation(table_page):
    """A page whose navigation ('Pages', 'Messages') stands at the top, above a sortable table: iwr-det-6
    clicks the Age column's header; iwr-det-5 clicked the 'Pages' link, its 'header' and its 'age'."""
    action = Act("Click", "Click the 'Age' column header to sort by age")
    chosen = find_target(table_page, action, DET6).chosen
    assert (chosen["tag"], chosen["parts"]["role"]) == ("th", 1.0)
    assert find_target(table_page, action, DET5).chosen["text"] == "Pages"


# --------------------------------------------------------------------------- a look needs a reaction

GREY, HIGHLIGHT = (68, 68, 68), (63, 63, 63)  # a toolbar's buttons; the active (and the hovered) one


def _grey_highlight_reference(tmp_path) -> RefDelta:
    """The reference's 'Green' took a highlight five levels darker, the rest of the view stood still: a
    reference whose checkpoints count as the same, whose named element changed at the fine tolerance."""
    before, after = tmp_path / "ref_0.png", tmp_path / "ref_1.png"
    before.write_bytes(_png(rgb=GREY))
    after.write_bytes(_png(rgb=GREY, box=GREEN_BOX, fill=HIGHLIGHT))
    return RefDelta(changed=False, source="reference", scrolled=False, detail={"pixel_fraction": 0.0001},
                    texts=("Green Blue Pink", "Green Blue Pink"), images=(before, after))


def test_a_hover_shade_is_not_the_reference_highlight(tmp_path):
    """A page that ignored the click shows only the pointer's hover shade on Green, the same grey as the
    reference's highlight: iwr-det-5 took it for the highlight, iwr-det-6 asks for a reaction first. A page
    that marked Green's parent active (its DOM changed) and looks the same still passes."""
    reference = _grey_highlight_reference(tmp_path)
    before = _state(_green("control"), _png(rgb=GREY))
    hovered = _state(_green("control"), _png(rgb=GREY, box=GREEN_BOX, fill=HIGHLIGHT))
    assert hovered.dom_hash == before.dom_hash
    assertion = "'Green' is highlighted"
    assert _judge(assertion, before, hovered, reference, DET5).passed
    verdict = _judge(assertion, before, hovered, reference, DET6)
    assert not verdict.passed and verdict.evidence["phrases"][0]["looks_like_reference"] is False
    parent_marked = _state(_green("control"), _png(rgb=GREY, box=GREEN_BOX, fill=HIGHLIGHT))
    parent_marked.dom_hash = "li.active"
    assert _judge(assertion, before, parent_marked, reference, DET6).passed


def _judge(assertion, before, after, reference, params):
    return judge(Act("Click", "Click it", logical_assertion=assertion), before, after, reference, params)

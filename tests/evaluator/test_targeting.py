"""Finding the element an action describes: description parsing, scoring, and real pages."""

from __future__ import annotations

import dataclasses

import pytest

from evaluator.agents.description import parse_description
from evaluator.agents.params import AssertionParams, ParamsError, TargetingParams
from evaluator.agents.relations import between_score, relation_score
from evaluator.agents.scoring import candidate_roles, score_candidates
from evaluator.agents.targeting import Target, find_target
from evaluator.agents.words import quoted, split_identifier
from evaluator.protocols import PROTOCOLS, get_protocol
from tests.evaluator.pages import Act, open_page

browser_test = pytest.mark.browser


@pytest.fixture(scope="module")
def targeting_page(browser):
    with open_page(browser, "targeting.html") as page:
        yield page


@pytest.fixture(scope="module")
def form_page(browser):
    with open_page(browser, "form.html") as page:
        yield page


@pytest.fixture(scope="module")
def relative_page(browser):
    with open_page(browser, "relative.html") as page:
        yield page


def click(page, description: str) -> Target:
    return find_target(page, Act("Click", description))


def chosen_id(target: Target) -> str | None:
    return target.chosen["id"] if target.chosen else None


# --------------------------------------------------------------------------- parsing and scoring


def test_it_reads_quotes_roles_regions_and_ordinals():
    """A description yields its quoted label, role, region, ordinal and label phrase."""
    desc = parse_description("Click the second 'Add' button in the footer")
    assert desc.quotes == ["Add"]
    assert desc.roles == {"button"}
    assert desc.regions == ["footer"]
    assert desc.ordinal == 2
    assert parse_description("Click the Add to cart button").labels == [["add", "cart"]]


def test_it_keeps_capitalised_position_words_as_label_words():
    """"First Name" names a field; it is not an ordinal."""
    desc = parse_description("Type into the First Name field")
    assert desc.ordinal is None
    assert desc.content == ["first", "name"]
    assert desc.roles == {"textbox"}


def test_it_uses_the_role_noun_as_label_when_nothing_else_is_said():
    """"Click the logo" matches elements named or classed "logo"."""
    assert parse_description("Click the logo").content == ["logo"]


def test_it_splits_identifiers_and_finds_quotes():
    """camelCase, kebab and snake case split; apostrophes are not quotes."""
    tokens = split_identifier("addToCart btn-primary user_icon")
    assert tokens == ["add", "to", "cart", "btn", "primary", "user", "icon"]
    assert quoted("Click the user's 'Sign in' link and “Help”") == ["Sign in", "Help"]


def test_it_breaks_ties_by_smaller_area_then_document_order():
    """Equal scores go to the smaller element, then to the earlier one."""
    page = {"viewport": [800, 600], "document": [800, 600], "scroll": [0, 0], "candidates": [
        _cand("Go", order=1, box=[0, 0, 200, 50]), _cand("Go", order=2, box=[0, 100, 50, 20]),
        _cand("Go", order=3, box=[0, 200, 50, 20])]}
    ranked = score_candidates(parse_description("Click Go"), page, TargetingParams())
    assert [s.cand["order"] for s in ranked] == [2, 3, 1]


def test_it_gives_generic_clickables_a_role_of_their_own():
    """A div with only a click handler is generic; class names add roles."""
    assert candidate_roles(_cand("x", tag="div")) == {"generic"}
    assert "tab" in candidate_roles(_cand("x", tag="div", cls="nav-tab active"))
    assert candidate_roles(_cand("", tag="button", images=1)) == {"button", "icon"}


def test_params_cover_the_protocol_sections_exactly():
    """Every key of the newest iwr-det's targeting and assertion sections is a known parameter and vice
    versa; the defaults are iwr-det-2's values (so a stored iwr-det-2 score keeps its meaning)."""
    newest = max((p for p in PROTOCOLS.values() if p.name == "iwr-det"), key=lambda p: int(p.version))
    params = newest.params  # the newest version, whether or not it is the default yet
    assert set(params["targeting"]) == {f.name for f in dataclasses.fields(TargetingParams)}
    assert set(params["assertion"]) == {f.name for f in dataclasses.fields(AssertionParams)}
    assert TargetingParams.from_dict(get_protocol("iwr-det-2").params) == TargetingParams()
    assert AssertionParams.from_dict(get_protocol("iwr-det-2").params) == AssertionParams()


def test_it_rejects_unknown_or_mistyped_params():
    """A typo in a params section is an error naming the key, not a silent default."""
    with pytest.raises(ParamsError, match="accept_treshold"):
        TargetingParams.from_dict({"targeting": {"accept_treshold": 0.5}})
    with pytest.raises(ParamsError, match="type_single_field_fallback"):
        TargetingParams.from_dict({"type_single_field_fallback": "no"})
    assert TargetingParams.from_dict({"accept_threshold": {"value": 0.6, "reason": "r"}}).accept_threshold == 0.6


def test_it_needs_no_page_for_press_and_scroll():
    """Press and Scroll get an empty target without the page being touched."""
    target = find_target(object(), Act("Press", "Press Enter", key="Enter"))
    assert not target.found and "needs no target" in target.reason


def _cand(text, order=0, box=(0, 0, 50, 20), tag="button", cls="", images=0):
    return {"order": order, "tag": tag, "type": "", "role": "", "text": text, "box": list(box), "cls": cls,
            "images": images, "reasons": ["tag"], "context": [], "icons": []}


# --------------------------------------------------------------------------- real pages


@browser_test
def test_it_prefers_the_exact_label_over_a_longer_one(targeting_page):
    """"Save" picks the Save button, not "Save draft"; a quoted longer label picks that one."""
    assert chosen_id(click(targeting_page, "Click the Save button")) == "save"
    assert chosen_id(click(targeting_page, "Click on 'Save draft'")) == "save-draft"
    assert chosen_id(click(targeting_page, "Click the delete account button")) == "delete-account"


@browser_test
def test_it_finds_icon_buttons_by_aria_label_and_title(targeting_page):
    """Icon-only controls are found through aria-label, title and icon class names."""
    cart = click(targeting_page, "Click the shopping cart icon")
    assert cart.chosen and cart.chosen["text"] == "Shopping cart"
    assert click(targeting_page, "Click the search icon in the header").chosen["text"] == "Search"
    assert click(targeting_page, "Click the user account icon").chosen["text"] == "User account"
    assert chosen_id(click(targeting_page, "Click the Acme logo")) == "logo"


@browser_test
def test_it_uses_ordinals_and_regions_among_same_text(targeting_page):
    """Same text three times: ordinal and region words pick the right one."""
    first = click(targeting_page, "Click the first Add button")
    second = click(targeting_page, "Click the second Add button")
    assert first.chosen["box"][0] < second.chosen["box"][0]
    assert first.chosen["box"][1] == second.chosen["box"][1]
    assert chosen_id(click(targeting_page, "Click the Add button in the footer")) == "footer-add"
    assert chosen_id(click(targeting_page, "Click the last Add button")) == "footer-add"


@browser_test
def test_it_flags_identical_candidates_as_ambiguous(targeting_page):
    """Two identical "More" links: one is chosen, the runner-up recorded, the choice flagged."""
    target = click(targeting_page, "Click the More link")
    assert target.found and target.ambiguous
    assert target.runner_up["text"] == "More"


@browser_test
@pytest.mark.parametrize("description", [
    "Click the Secret button", "Click Phantom", "Click the Phantom child button", "Click Tiny",
    "Click Offleft", "Click the Covered button", "Click 'Clipped away'", "Click the Not clickable text",
])
def test_it_never_chooses_hidden_covered_or_inert_elements(targeting_page, description):
    """display:none, visibility:hidden, opacity 0, zero size, off-page, occluded, clipped, inert: never chosen."""
    target = click(targeting_page, description)
    hidden = {"secret-none", "secret-visibility", "phantom", "phantom-child", "tiny", "offleft", "covered",
              "clipped", "plain"}
    assert chosen_id(target) not in hidden


@browser_test
def test_it_counts_listeners_jquery_and_pointer_regions_as_interactive(targeting_page):
    """addEventListener, jQuery (direct and delegated) and a cursor:pointer region make a candidate."""
    assert chosen_id(click(targeting_page, "Click the Summer sale banner")) == "promo"
    assert chosen_id(click(targeting_page, "Click Newsletter signup")) == "jq"
    assert chosen_id(click(targeting_page, "Click the Delegated offer")) == "delegated"
    assert chosen_id(click(targeting_page, "Click the pointer region")) == "pointer"


@browser_test
def test_it_finds_elements_inside_scroll_containers_and_below_the_fold(targeting_page):
    """An item scrolled out of its container and a footer link below the fold are candidates."""
    assert chosen_id(click(targeting_page, "Click Item 8")) == "item8"
    assert click(targeting_page, "Click the Privacy link").chosen["text"] == "Privacy"


@browser_test
def test_it_picks_the_checkbox_its_label_names(targeting_page):
    """A checkbox wrapped in its label: the checkbox (smaller, right role) is chosen."""
    assert chosen_id(click(targeting_page, "Click the I agree to the terms checkbox")) == "terms"


@browser_test
def test_it_fails_below_the_threshold_with_a_reason(targeting_page):
    """Nothing like the description on the page: no element, and the reason says so."""
    target = click(targeting_page, "Click the Unicorn subscription toggle")
    assert not target.found
    assert "no element matches" in target.reason
    assert target.runner_up is not None


@browser_test
def test_it_collects_candidates_in_one_round_trip(targeting_page):
    """One evaluate for all candidates, one evaluate_handle for the chosen element."""
    calls = []

    class Counting:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(targeting_page, name)

    assert find_target(Counting(), Act("Click", "Click the Save button")).found
    assert calls == ["evaluate", "evaluate_handle"]


@browser_test
def test_type_targets_editable_fields_only(form_page):
    """Type chooses among editable fields: labels, placeholders and aria-labels name them."""
    def typed(description, text="x"):
        return chosen_id(find_target(form_page, Act("Type", description, text=text)))

    assert typed("Type 'Ada' into the Full name field", "Ada") == "name"
    assert typed("Enter the email address") == "email"
    assert typed("Type 'shoes' in the search bar", "shoes") == "search"
    assert typed("Write a note in the notes area") == "notes"
    assert typed("Type into the reference code field") != "locked"


@browser_test
def test_type_falls_back_to_element_index(form_page):
    """With nothing matching, element_index picks among editable fields in document order."""
    target = find_target(form_page, Act("Type", "Type it there", text="zzz", element_index=1))
    assert chosen_id(target) == "email"
    assert "element_index" in target.reason


@browser_test
def test_it_tells_look_alikes_apart_by_their_surroundings(targeting_page):
    """"the Add button for the Pear": the Add inside the Pear card, not the first one."""
    pear = click(targeting_page, "Click the Add button for the Pear to put it in the cart")
    first = click(targeting_page, "Click the first Add button")
    assert pear.chosen["box"][1] == first.chosen["box"][1]
    assert pear.chosen["box"][0] > first.chosen["box"][0]


def test_it_separates_anchors_and_purposes_from_the_target():
    """"left of 'Buy milk'" locates the target; "to collapse it" says why; neither names it."""
    desc = parse_description("Click the round checkbox to the left of 'Buy milk' to mark it done")
    assert desc.quotes == [] and desc.anchors == ["Buy milk"]
    assert desc.roles == {"checkbox"} and desc.regions == []
    assert [(r.kind, r.quotes) for r in desc.relations] == [("left", ["Buy milk"])]
    assert desc.appearance == ["round"]
    sort = parse_description("Click on Age to sort the table")
    assert sort.content == ["age"]
    assert parse_description("Click the Terms of Service link").content == ["terms", "service"]


def test_type_text_in_quotes_is_not_the_field_label():
    """The quoted text of a Type action neither labels the field nor heads an anchor phrase."""
    desc = parse_description("Type 'shoes' in the search bar", typed="shoes")
    assert desc.quotes == [] and desc.content == ["search"] and desc.anchors == []


@browser_test
def test_it_finds_a_nameless_control_by_anchor_icon_and_class(targeting_page):
    """A label-less checkbox next to its text, a bell icon with a badge, a classed sidebar toggle."""
    assert chosen_id(click(targeting_page, "Click the round checkbox to the left of 'Walk the dog'")) == "todo-2"
    assert chosen_id(click(targeting_page, "Click the notification bell")) == "alerts"
    assert chosen_id(click(targeting_page, "Click the round toggle button at the bottom of the sidebar")) == (
        "sidebarToggle")


# --------------------------------------------------------------------------- relative position


def test_it_reads_relations_and_their_anchors():
    """"to the left of the input", "next to 'Bob'", "above the table": a direction and what to look for."""
    def relations(text):
        return [(r.kind, r.quotes, r.words, r.role) for r in parse_description(text).relations]

    toggle = parse_description("Click the 'Mark all as complete' checkbox to the left of the input")
    assert toggle.quotes == ["Mark all as complete"] and toggle.roles == {"checkbox"} and toggle.regions == []
    assert relations(toggle.text) == [("left", [], [], "textbox")]
    assert relations("Click the Edit button next to 'Bob'") == [("near", ["Bob"], [], None)]
    assert relations("Click the Export button above the table") == [("above", [], [], "table")]
    assert relations("Click the icon right of the search field") == [("right", [], ["search"], "textbox")]


def test_between_names_two_anchors_not_the_target_under_iwr_det_3():
    """"the 'Blue' button between 'Green' and 'Pink'": Green and Pink place the target, only Blue names it."""
    det3 = TargetingParams.from_dict(get_protocol("iwr-det-3").params)
    desc = parse_description("Click the 'Blue' button between 'Green' and 'Pink'", params=det3)
    assert desc.quotes == ["Blue"] and desc.anchors == ["Green", "Pink"]
    assert [(r.kind, r.quotes) for r in desc.relations] == [("between", ["Green"]), ("between", ["Pink"])]
    menu = parse_description("Click the link between Home and About in the menu", params=det3)
    assert [(r.kind, r.words) for r in menu.relations] == [("between", ["home"]), ("between", ["about"])]
    assert parse_description("Click the 'Blue' button between 'Green' and 'Pink'").quotes == ["Blue", "Green", "Pink"]


def test_between_geometry_wants_the_centre_between_the_facing_edges():
    """In a row of buttons, only the one between the two anchors scores; an anchor is not between itself."""
    green, blue, pink, none = [59, 16, 43, 43], [102, 16, 43, 43], [146, 16, 43, 43], [189, 16, 43, 43]
    assert between_score(blue, ([green], [pink])) == 1.0
    assert between_score(none, ([green], [pink])) == 0.0
    assert between_score(green, ([green], [pink])) == 0.0
    assert between_score([102, 200, 43, 43], ([green], [pink])) < 0.2  # a row further down
    assert between_score(blue, ([green], [])) == relation_score("near", blue, [green])
    assert between_score(blue, ([], [])) is None


def test_a_side_of_the_page_stays_a_region():
    """"on the left of the page" names no anchor to measure from: it is the page's left region."""
    desc = parse_description("Click the button on the left of the page")
    assert desc.relations == [] and desc.regions == ["left"]
    assert parse_description("Click the toggle at the bottom of the sidebar").regions == ["bottom", "sidebar"]


def test_relation_geometry_prefers_the_aligned_close_neighbour():
    """Left of a field: the icon over its padding beats the row below; own content is no neighbour."""
    field = [100, 100, 400, 60]
    over_padding, row_below, far_right = [108, 115, 30, 30], [110, 170, 24, 24], [520, 115, 30, 30]
    assert relation_score("left", over_padding, [field]) > 0.6
    assert relation_score("left", row_below, [field]) < relation_score("left", over_padding, [field]) - 0.2
    assert relation_score("left", far_right, [field]) == 0.0
    assert relation_score("right", far_right, [field]) > 0.9
    assert relation_score("below", row_below, [field]) > relation_score("above", row_below, [field])
    assert relation_score("near", [0, 0, 500, 200], [field]) == 0.0  # the anchor lies inside it
    assert relation_score("near", over_padding, []) is None  # anchor not on the page: no cue


@browser_test
def test_it_finds_an_unlabelled_checkbox_by_role_attributes_and_position(relative_page):
    """A "Mark all as complete" checkbox without any label: the role noun, its id toggle-all and its
    place at the input's left pick it, not the 'Completed' link or the items' checkboxes."""
    target = click(relative_page, "Click the 'Mark all as complete' checkbox to the left of the input")
    assert chosen_id(target) == "toggle-all", target.to_dict()
    assert not target.ambiguous


@browser_test
@pytest.mark.parametrize(("description", "expected"), [
    ("Click the button to the left of the search field", "bar-before"),
    ("Click the button to the right of the search field", "bar-after"),
    ("Click the Edit button next to 'Bob'", "edit-bob"),
    ("Click the Edit button next to 'Alice'", "edit-alice"),
    ("Click the Edit button next to 'Carol Smith'", "edit-carol"),  # the name split by inline markup
    ("Click the Export button above the table", "above-table"),
    ("Click the Export button below the table", "below-table"),
    ("Click the checkbox next to 'Book dentist'", "todo-dentist"),
])
def test_it_picks_among_look_alikes_by_their_position_relative_to_an_anchor(relative_page, description, expected):
    """Unlabelled or same-named controls: the anchor's direction and distance choose, without ambiguity."""
    target = click(relative_page, description)
    assert chosen_id(target) == expected, target.to_dict()
    assert not target.ambiguous, target.to_dict()


@browser_test
@pytest.mark.parametrize(("description", "expected"), [
    ("Click the 'Blue' button between 'Green' and 'Pink'", "f-blue"),
    ("Click the button between 'Blue' and 'None'", "f-pink"),
])
def test_between_picks_the_button_the_two_names_enclose(relative_page, description, expected):
    """Under iwr-det-3 the names after 'between' place the target; iwr-det-2 read them as its labels."""
    det3 = get_protocol("iwr-det-3").params
    target = find_target(relative_page, Act("Click", description), det3)
    assert chosen_id(target) == expected, target.to_dict()
    assert not target.ambiguous, target.to_dict()


@browser_test
def test_type_finds_the_field_below_its_label(relative_page):
    """Fields under plain-text labels (no for=): "below 'Phone'" is the field right under that label."""
    assert chosen_id(find_target(relative_page, Act("Type", "Type into the field below 'Phone'", text="1"))) == "phone"
    below_email = find_target(relative_page, Act("Type", "Type into the field below the 'Email' label", text="a"))
    assert chosen_id(below_email) == "email"


@browser_test
def test_relative_cues_never_choose_hidden_or_covered_elements(relative_page):
    """Transparent, hidden and covered checkboxes closer to the Coupon field are never chosen."""
    target = click(relative_page, "Click the checkbox to the left of the 'Coupon' field")
    assert chosen_id(target) == "coupon-real", target.to_dict()


@browser_test
def test_same_labels_without_a_cue_stay_ambiguous(relative_page):
    """Two Edit buttons and no cue to tell them apart: one is chosen and the choice flagged."""
    target = click(relative_page, "Click the Edit button")
    assert target.found and target.ambiguous
    assert {chosen_id(target), target.runner_up["id"]} == {"edit-alice", "edit-bob"}

"""Named, versioned protocols and their parameter fingerprints."""

import dataclasses
import json

import pytest

from evaluator.protocols import PROTOCOLS, Protocol, get_protocol

# The parameters a released protocol version stands for. A failure here means parameters changed
# without a version bump: bump the protocol's version (and rescore), or, while a version is still
# unreleased, update its fingerprint here in the same change.
PINNED_FINGERPRINTS = {
    "iwr-det-2": "5e057986a1bae5e9",
    "iwr-det-3": "6d7b699ab02ce8b8",
    "iwr-det-4": "43b4d408fa91724d",
    "iwr-det-5": "8969b8e229bbe3b6",
    "iwr-det-6": "cd323ec972021044",
    "iwr-det-7": "079458e870b25ae6",
    "iwr-det-8": "a1cd9b6b694ae215",
    "iwr-det-9": "31f9d414eaa20c58",
    "iwr-det-10": "290597062cf2229d",
    "iwr-det-11": "3409b8d65c38a0ea",
    "iwr-det-12": "6c1c725ff203ef64",
    "iwr-det-13": "abdc811aa2933c15",
    "iwr-det-14": "3ab6e8d55cf9d419",
    "iwr-det-15": "e98493b6fca28c9c",
    "iwr-det-16": "bd89a3b33cd694dd",
    "iwr-det-17": "222b74a62a848b66",
    "iwr-det-18": "8e0af0bf2dfd0e7b",
    "iwr-official-1": "545a2d3b78886e1c",
}


def test_it_defaults_to_iwr_det_17():
    """The default protocol is iwr-det, version 17; versions 2 to 16 stay registered under their full names."""
    protocol = get_protocol()
    assert (protocol.name, protocol.version, protocol.full_name) == ("iwr-det", "17", "iwr-det-17")
    assert [get_protocol(f"iwr-det-{v}").version for v in range(2, 17)] == [str(v) for v in range(2, 17)]
    assert not protocol.requires_llm


def test_iwr_det_3_is_iwr_det_2_plus_named_fixes():
    """iwr-det-3 keeps every iwr-det-2 value and only adds parameters (the issue-14 fixes), each with a reason."""
    old, new = get_protocol("iwr-det-2"), get_protocol("iwr-det-3")
    assert (new.name, new.version, new.full_name) == ("iwr-det", "3", "iwr-det-3")
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    assert ("assertion", "element_state") in added and ("settle", "layout_stable") in added


def test_iwr_det_4_is_iwr_det_3_plus_named_fixes():
    """iwr-det-4 keeps every iwr-det-3 value and only adds the broadened tuning half's fixes."""
    old, new = get_protocol("iwr-det-3"), get_protocol("iwr-det-4")
    assert (new.name, new.version) == ("iwr-det", "4")
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    assert added == {("targeting", "glyph_shapes"), ("targeting", "colour_words"),
                     ("assertion", "unphrased_text_delta")}


def test_iwr_det_5_is_iwr_det_4_plus_textless_terms():
    """iwr-det-5 keeps every iwr-det-4 value and adds one visual setting, which earlier versions read as off."""
    from evaluator.metrics import visual_params
    from evaluator.protocols import VISUAL_LATER_OFF

    old, new = get_protocol("iwr-det-4"), get_protocol("iwr-det-5")
    assert (new.name, new.version) == ("iwr-det", "5")
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    assert added == {("visual", "textless_terms")} and set(VISUAL_LATER_OFF) == {"textless_terms"}
    assert visual_params()["textless_terms"] is True
    assert visual_params(new.params["visual"])["textless_terms"] is True
    assert visual_params(old.params["visual"])["textless_terms"] is False  # not the default's value


def test_iwr_det_6_is_iwr_det_5_plus_named_fixes():
    """iwr-det-6 keeps every iwr-det-5 value and adds six targeting settings and two assertion settings, each
    off for earlier versions (a section without them reads the defaults, which are off)."""
    from evaluator.agents.params import AssertionParams, TargetingParams

    old, new = get_protocol("iwr-det-5"), get_protocol("iwr-det-6")
    assert (new.name, new.version) == ("iwr-det", "6")
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    fixes = {("targeting", k) for k in ("edge_positions", "look_words", "sequence_relations", "glyph_labels",
                                        "header_nouns", "quote_word_bounds")}
    fixes |= {("assertion", "idle_phrases"), ("assertion", "look_needs_reaction")}
    assert added == fixes
    assert all(new.reasons[section][key] for section, key in fixes)
    kinds = {"targeting": TargetingParams, "assertion": AssertionParams}
    assert not any(getattr(kinds[section].from_dict(old.params), key) for section, key in fixes)
    assert all(getattr(kinds[section].from_dict(new.params), key) for section, key in fixes)


def test_iwr_det_7_is_iwr_det_6_plus_named_fixes():
    """iwr-det-7 keeps every iwr-det-6 value and adds four targeting settings found on the off-canvas menu
    pages of the tuning half, each off for earlier versions."""
    from evaluator.agents.params import TargetingParams

    old, new = get_protocol("iwr-det-6"), get_protocol("iwr-det-7")
    assert (new.name, new.version) == ("iwr-det", "7")
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    fixes = {("targeting", k) for k in ("drawn_glyphs", "picture_anchor_words", "placed_look_alikes",
                                        "own_label_icons")}
    assert added == fixes
    assert all(new.reasons[section][key] for section, key in fixes)
    assert not any(getattr(TargetingParams.from_dict(old.params), key) for _, key in fixes)
    assert all(getattr(TargetingParams.from_dict(new.params), key) for _, key in fixes)


def test_iwr_det_8_is_iwr_det_7_plus_named_fixes():
    """iwr-det-8 keeps every iwr-det-7 value and adds two assertion settings found on the tuning half (a toast
    demo's greyed-out option, a phone page's theme thumbnail below the view), each off for earlier versions."""
    from evaluator.agents.params import AssertionParams

    old, new = get_protocol("iwr-det-7"), get_protocol("iwr-det-8")
    assert (new.name, new.version) == ("iwr-det", "8") and get_protocol() is not new
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    fixes = {("assertion", "element_clauses_decide"), ("assertion", "acting_scroll")}
    assert added == fixes
    assert all(new.reasons[section][key] for section, key in fixes)
    assert not any(getattr(AssertionParams.from_dict(old.params), key) for _, key in fixes)
    assert all(getattr(AssertionParams.from_dict(new.params), key) for _, key in fixes)


# Each version from iwr-det-9 on: the settings it adds, found on the tuning half (see evaluator/protocols.py).
ADDED_SETTINGS = {
    # an unstyled toast demo's wide checkbox row, a wizard's wrong tab; a card grid under colour dots, tabs wrapped
    # into two rows
    "9": {("assertion", "place_by_content"), ("assertion", "absent_quotes_decide"), ("targeting", "side_rows"),
          ("targeting", "look_edges"), ("targeting", "one_kind_look_alikes"), ("targeting", "row_edges")},
    # slide-in side menus ('the upper of the two menu icons', 'the same menu icon again') and a widget showcase
    # ("'Cancel' in the dialog", buttons innerText runs together)
    "10": {("targeting", "count_words"), ("targeting", "repeat_targets"), ("targeting", "container_anchors"),
           ("assertion", "block_text_phrases"), ("assertion", "absent_quotes_undrawn")},
    # a radio set drawn as buttons below a phone's first view; a colour picker's documentation
    "11": {("assertion", "reached_states"), ("assertion", "element_min_px"), ("assertion", "merged_view_phrases"),
           ("targeting", "child_fill_colours"), ("targeting", "contained_look_alikes")},
    # a date picker's demo ('the wide empty text box', '14 in the third row of the calendar', 'the text box now
    # shows ...', 'a calendar showing ...')
    "12": {("targeting", "size_words"), ("targeting", "delegated_cells"), ("targeting", "kind_rows"),
           ("assertion", "participle_cues"), ("assertion", "form_value_phrases")},
    # the same colour picker's documentation ('the second one in the second row of colours', 'the colour box under
    # 'Result'', 'below the example code', "'more' under the palette")
    "13": {("targeting", "named_grid_rows"), ("targeting", "swatch_nouns"), ("targeting", "view_anchors"),
           ("targeting", "code_anchors"), ("targeting", "inner_namesakes")},
    # the carousel playground ('the seventh dot below the row of small photos', 'the right arrow next to the big
    # photo', a pager's list item and the button filling it)
    "14": {("targeting", "dot_nouns"), ("targeting", "picture_anchors"), ("targeting", "twin_look_alikes")},
    # the form validation demos ('Type ... into the 'Full Name' field' under a label whose 'for' names no id, 'the 'F'
    # radio button' after 'M: ( ) F:') and a responsive navigation bar ('the plus box next to the first 'Dropdown'',
    # 'the big heading', 'the three-bars button again', "the second 'Dropdown', below 'Fixed bottom'")
    "15": {("targeting", "caption_labels"), ("targeting", "generated_glyphs"), ("targeting", "glyph_boxes"),
           ("targeting", "heading_targets"), ("targeting", "repeat_kinds"), ("targeting", "ordinals_past_placed")},
    # the navigation bar's phone copy ('Tap the minus box next to the first 'Dropdown'': its box, not its link)
    "16": {("targeting", "glyph_points")},
    # the autocomplete site ('the text box under 'Pick a programming language:'', 'the box after 'Type an email:'',
    # fields inside their labels; the words a closing suggestion list uncovers)
    "17": {("targeting", "label_anchors"), ("assertion", "covered_text")},
    # the photo-lightbox site ('the second photo under 'Sample gallery', the bridge lit up at night'; a copy without
    # CSS adding the lightbox's caption at the foot of the page, out of view)
    "18": {("targeting", "depicted_pictures"), ("assertion", "view_appearance")},
}


@pytest.mark.parametrize("version", sorted(ADDED_SETTINGS, key=int))
def test_each_version_keeps_the_one_before_and_adds_named_fixes(version):
    """iwr-det-N keeps every value of iwr-det-(N-1) and adds only its named settings, each with a reason, each off
    for earlier versions."""
    from evaluator.agents.params import AssertionParams, TargetingParams

    old, new = get_protocol(f"iwr-det-{int(version) - 1}"), get_protocol(f"iwr-det-{version}")
    assert (new.name, new.version) == ("iwr-det", version)
    assert (get_protocol() is new) == (version == get_protocol().version)
    for section, values in old.params.items():
        assert {k: new.params[section][k] for k in values} == values, section
    added = {(s, k) for s, values in new.params.items() for k in values if k not in old.params[s]}
    fixes = ADDED_SETTINGS[version]
    assert added == fixes
    assert all(new.reasons[section][key] for section, key in fixes)
    kinds = {"assertion": AssertionParams, "targeting": TargetingParams}
    assert not any(getattr(kinds[section].from_dict(old.params), key) for section, key in fixes)
    assert all(getattr(kinds[section].from_dict(new.params), key) for section, key in fixes)


def test_it_has_every_section_the_evaluator_reads():
    """iwr-det has the targeting, assertion, settle, limits and visual sections."""
    assert set(get_protocol("iwr-det").params) == {"targeting", "assertion", "settle", "limits", "visual"}


def test_it_registers_the_official_protocol_as_needing_an_llm():
    """iwr-official-1 exists so scores can be labelled with it, and says it needs an LLM endpoint."""
    official = get_protocol("iwr-official")
    assert official.full_name == "iwr-official-1"
    assert official.requires_llm


def test_every_parameter_has_a_reason():
    """Each value of each section of each protocol carries a non-empty reason."""
    for protocol in PROTOCOLS.values():
        for section, values in protocol.params.items():
            reasons = protocol.reasons[section]
            assert set(reasons) == set(values), (protocol.name, section)
            assert all(isinstance(r, str) and len(r) > 20 for r in reasons.values()), (protocol.name, section)


def test_params_are_plain_json_data():
    """Parameters survive a JSON round trip unchanged (they are stored beside scores)."""
    for protocol in PROTOCOLS.values():
        assert json.loads(json.dumps(protocol.params)) == protocol.params


def test_changing_returned_params_does_not_change_the_protocol():
    """Callers get a copy: editing it leaves the registered protocol alone."""
    params = get_protocol().params
    params["visual"]["block_weights"]["content"] = 0
    assert get_protocol().params["visual"]["block_weights"]["content"] == 40


@pytest.mark.parametrize("full_name", sorted(PINNED_FINGERPRINTS))
def test_parameters_match_the_pinned_fingerprint_of_their_version(full_name):
    """A protocol version's parameters only change with a version bump."""
    assert get_protocol(full_name).fingerprint() == PINNED_FINGERPRINTS[full_name]


def test_every_protocol_version_is_pinned():
    """Every registered protocol version has a pinned fingerprint."""
    assert {p.full_name for p in PROTOCOLS.values()} == set(PINNED_FINGERPRINTS)


def test_fingerprint_sees_a_changed_value_but_not_key_order():
    """Changing one value changes the fingerprint; reordering keys does not."""
    protocol = get_protocol()
    sections = dict(protocol.sections)
    visual = dict(sections["visual"])
    visual["ssim_long_side"] = (257, visual["ssim_long_side"][1])
    changed = dataclasses.replace(protocol, sections={**sections, "visual": visual})
    reordered = dataclasses.replace(protocol, sections=dict(reversed(list(sections.items()))))
    assert changed.fingerprint() != protocol.fingerprint()
    assert reordered.fingerprint() == protocol.fingerprint()


def test_it_finds_protocols_by_full_name():
    """A stored full name such as iwr-det-17 finds its protocol."""
    assert get_protocol("iwr-det-17") is get_protocol("iwr-det")
    assert get_protocol("iwr-det-16") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-14") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-13") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-12") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-11") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-10") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-9") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-8") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-6") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-5") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-4") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-3") is not get_protocol("iwr-det")
    assert get_protocol("iwr-det-2") is not get_protocol("iwr-det")


def test_it_lists_known_protocols_for_an_unknown_name():
    """An unknown name is a ValueError naming the known protocols."""
    known = ("iwr-det, iwr-det-10, iwr-det-11, iwr-det-12, iwr-det-13, iwr-det-14, iwr-det-15, iwr-det-16, iwr-det-18, "
             "iwr-det-2, iwr-det-3, "
             "iwr-det-4, iwr-det-5, iwr-det-6, iwr-det-7, iwr-det-8, iwr-det-9, iwr-official")
    with pytest.raises(ValueError, match=known):
        get_protocol("iwr-llm")


def test_protocol_is_immutable():
    """Registered protocols cannot be reassigned field by field."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_protocol().version = "2"
    assert isinstance(get_protocol(), Protocol)

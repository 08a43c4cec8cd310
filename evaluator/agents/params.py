"""Thresholds and weights of deterministic targeting and assertion judging.

The defaults here are the values of protocol ``iwr-det`` version 1; the protocol's params
dict (``evaluator.protocols``, sections "targeting" and "assertion") is the place that
versions them. ``from_dict`` accepts the whole params dict, just the section, a value that
is already a params object, or None (defaults). A section value may be plain data or
``{"value": ..., "reason": "..."}``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Self


class ParamsError(ValueError):
    """A params section names an unknown key or holds a value of the wrong kind."""


def _section(data: Any, name: str) -> dict:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParamsError(f"{name} params must be a dict, not {type(data).__name__}")
    inner = data.get(name, data)
    if not isinstance(inner, dict):
        raise ParamsError(f"params section {name!r} must be a dict")
    return {key: value["value"] if isinstance(value, dict) and "value" in value else value
            for key, value in inner.items()}


class _Section:
    """A protocol params section as a frozen dataclass; ``SECTION`` names it in the params dict."""

    SECTION: ClassVar[str] = ""

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """The section from a whole params dict, the section alone, an instance, or None (defaults)."""
        if isinstance(data, cls):
            return data
        values = _section(data, cls.SECTION)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise ParamsError(f"unknown {cls.SECTION} parameter(s): {', '.join(unknown)}")
        return cls(**{key: _coerce(cls.SECTION, key, getattr(cls, key), value) for key, value in values.items()})


def _coerce(section: str, key: str, default: Any, value: Any) -> Any:
    kind = type(default)
    ok = isinstance(value, bool) if kind is bool else isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        raise ParamsError(f"{section}.{key} must be a {kind.__name__}, got {value!r}")
    return kind(value)


@dataclass(frozen=True)
class TargetingParams(_Section):
    """How an action description is matched to an element, and how actions are carried out."""

    SECTION: ClassVar[str] = "targeting"

    # weights of the four feature scores (judge-design: 0.50 text, 0.15 attributes, 0.20 role, 0.15 position)
    w_text: float = 0.50
    w_attributes: float = 0.15
    w_role: float = 0.20
    w_position: float = 0.15
    # below this combined score the element is "not found" and the step fails
    accept_threshold: float = 0.45
    # runner-up within this margin of the best: recorded as ambiguous
    ambiguity_margin: float = 0.05
    # two words count as the same word from this rapidfuzz ratio (plurals, small typos)
    token_match: float = 0.85
    # disabled elements stay candidates but lose to an enabled equal
    disabled_penalty: float = 0.10
    # Type: a field that already has focus (the previous step clicked it) is the natural target
    type_focus_bonus: float = 0.10
    # Type: with no field above the threshold, use the only editable field there is
    type_single_field_fallback: bool = True
    # ordinal words ("second") pick among candidates whose text score is within this of the best
    ordinal_text_margin: float = 0.05
    max_candidates: int = 3000
    click_timeout_ms: int = 2000
    type_timeout_ms: int = 5000
    # Scroll succeeds when the page (or its main scroller) moved more than this many pixels
    scroll_min_px: float = 5.0
    # "to the left of the input": the candidate's centre may reach this share of the anchor's extent
    # past its near edge (an icon drawn over a field's padding is still to its left)
    relation_edge_share: float = 0.2
    # proximity to the anchor halves over a gap of this many times the larger extent along the axis
    relation_reach: float = 2.0
    # "next to": a neighbour above or below counts this much of one on the same row
    relation_near_vertical: float = 0.7
    # iwr-det-3 (each off here, so iwr-det-2 scores as it always did; see evaluator.protocols):
    # glyph characters and glyph words ("the » arrow", "the three-bar icon") match icon-only controls
    glyph_words: bool = False
    # picture nouns ("the first photo") match image-bearing elements (img, svg, CSS background images)
    picture_nouns: bool = False
    # "the second row", "the middle tile", "the third column" rank candidates by laid-out grid position
    grid_ordinals: bool = False
    # data-* attribute values (a square's name, a date) and SVG text name a candidate
    attribute_labels: bool = False
    # tick / untick / check / uncheck are verbs of the instruction, not words of the target's name
    check_verbs: bool = False
    # "the 'Blue' button between 'Green' and 'Pink'": the two names place the target, they are not its label
    between_relation: bool = False
    # iwr-det-4: three bars, three dots and a generic "menu" id or class are different glyphs
    glyph_shapes: bool = False
    # iwr-det-4: colour words ("the blue dot") match the colours an element paints, shape nouns their size
    colour_words: bool = False
    # iwr-det-6: "at the far left of the toolbar", "the rightmost tab": the extreme one of the look-alikes
    edge_positions: bool = False
    # iwr-det-6: "ring", "empty", "hollow", "plain" say how a control looks: look words, never a name
    look_words: bool = False
    # iwr-det-6: "the button right after the pink dot": the next look-alike from an anchor found by its description
    sequence_relations: bool = False
    # iwr-det-6: "the 'Age' column header" names a table's header cell (a th), not the page's header
    header_nouns: bool = False
    # iwr-det-6: a quoted label matched inside another word ('Age' in "Pages") is no partial match
    quote_word_bounds: bool = False
    # iwr-det-6: glyph names also read from data-* values and a short own label ("Desc" under a down
    # chevron); sort words name the arrow that draws them (desc: down, asc: up)
    glyph_labels: bool = False
    # iwr-det-7: an icon drawn in CSS (three thin bars: a span and its ::before / ::after) names its glyph
    drawn_glyphs: bool = False
    # iwr-det-7: "the theme thumbnail under Theme": a word that also places the picture is no label it must show
    picture_anchor_words: bool = False
    # iwr-det-7: "the second picture under Theme": an ordinal counts only the look-alikes the relation places
    placed_look_alikes: bool = False
    # iwr-det-7: "the icon next to 'Toggle Navigation'" may be a control showing that icon beside its own label
    own_label_icons: bool = False
    # iwr-det-9: "the top row", "the bottom row", "the left column" place the target in a grid like "the first row"
    side_rows: bool = False
    # iwr-det-9: "the card with the pink top edge": a side and an edge said of the target's look place nothing
    look_edges: bool = False
    # iwr-det-9: look-alikes counted by an ordinal, an edge, a row or a sequence are of one kind (the tag of the
    # best match by everything but its place)
    one_kind_look_alikes: bool = False
    # iwr-det-9: "the tab at the right end of the second row": an edge word picks in the row a grid position names
    row_edges: bool = False
    # iwr-det-10: "the upper of the two menu icons": a number before a plural noun counts look-alikes, names nothing
    count_words: bool = False
    # iwr-det-10: "tap the same icon again", "tap that icon again": the element the previous action used, when it
    # is still shown and matches the description's words as well as the best does
    repeat_targets: bool = False
    # iwr-det-10: "'Cancel' in the dialog": where the best words match inside an element the anchor names (its tag,
    # role, id or class), candidates outside it lose OUTSIDE_CONTAINER_PENALTY
    container_anchors: bool = False
    # iwr-det-11: a textless control paints the colours of a child that fills most of its box (a colour swatch's
    # inner square)
    child_fill_colours: bool = False
    # iwr-det-11: an ordinal, an edge, a grid row or a sequence counts only the look-alikes inside the container
    # the description names ("the bottom row of the palette")
    contained_look_alikes: bool = False
    # iwr-det-12: words of how wide or long a control is drawn ("the wide empty text box") say how it looks, not a name
    size_words: bool = False
    # iwr-det-12: an element labelled in data-* inside an element listening for clicks is a target (delegated clicks)
    delegated_cells: bool = False
    # iwr-det-12: a grid row the look-alikes by words do not reach is counted among the elements of the best
    # match's kind ("14 in the third row of the calendar": the number names one day only)
    kind_rows: bool = False
    # iwr-det-13: a row said to be "of" something ("the second row of colours") is counted among the elements of the
    # best match's kind even where the look-alikes by words reach it
    named_grid_rows: bool = False
    # iwr-det-13: "the colour box", "the colour square": an element showing a colour sample, not a text box
    swatch_nouns: bool = False
    # iwr-det-13: of the places a relation's anchor is found, those in the viewport when there are any
    view_anchors: bool = False
    # iwr-det-13: "the example code", "the snippet" said of an anchor is a code block (pre, code)
    code_anchors: bool = False
    # iwr-det-13: a candidate whose name is that of a candidate inside its box ranks just below that one
    inner_namesakes: bool = False
    # iwr-det-14: "the seventh dot below the photos": a dot ending the target's noun phrase is its head, and it names a
    # pager dot (a control drawing a bullet or a small round mark, or called a dot, bullet or pager in its classes)
    dot_nouns: bool = False
    # iwr-det-14: "next to the row of small photos", "under the big photo": a picture noun said of an anchor finds the
    # pictures, and a size word said of it keeps the pictures of that size among those found
    picture_anchors: bool = False
    # iwr-det-14: look-alikes drawn in one box (a list item and the button filling it) count once for an ordinal
    twin_look_alikes: bool = False
    # iwr-det-15: a form field nothing names (a label whose 'for' names no id; no placeholder or title) is named by
    # the short text printed right before it, just above it or just left of it on its row ('Full Name * :' over
    # the field, 'F:' before a radio button); for a checkbox or radio button that text, not its block, is its label
    caption_labels: bool = False
    # iwr-det-15: a symbol CSS writes as generated content (::before / ::after holding one character, a collapsible
    # menu's '+' / '-' box) is a glyph the control shows, as a character of its own text would be
    generated_glyphs: bool = False
    # iwr-det-15: "the plus box", "the minus box": a box named by the glyph it shows is a control drawing that glyph,
    # not a text box
    glyph_boxes: bool = False
    # iwr-det-15: "click the big heading 'Welcome'": a heading noun names the page's heading (h1-h6), a target although
    # nothing on it listens (clicking away from an open menu)
    heading_targets: bool = False
    # iwr-det-15: "the three-bars button again" repeats the previous action's element only when that element is the
    # kind of thing named as well as the best match by role is (not the link the previous step tapped)
    repeat_kinds: bool = False
    # iwr-det-15: "the second 'Dropdown', below 'Fixed bottom'": an ordinal past the look-alikes a relation places
    # counts the page's look-alikes instead (the relation then only says where the one meant is)
    ordinals_past_placed: bool = False
    # iwr-det-16: "tap the minus box next to 'Dropdown'": a control named by a glyph that a part of it draws (CSS
    # generated content in a textless span) is clicked on that part, where a person taps, not at its middle
    glyph_points: bool = False
    # iwr-det-17: "the box under 'Pick a language:'": a field's label shows its words where the label prints them,
    # not in the field; an anchor named by a field's label is that printed text, not the field it labels
    label_anchors: bool = False
    # iwr-det-18: "the second photo under 'Sample gallery', the bridge lit up at night": words said of what a photo
    # shows, which a picture without words cannot say, leave it a picture the description may mean, at a discount
    depicted_pictures: bool = False


@dataclass(frozen=True)
class AssertionParams(_Section):
    """When an action counts as having changed the page and done what its assertion says."""

    SECTION: ClassVar[str] = "assertion"

    # fraction of pixels that must differ (compared at diff_scale) for "the page changed"
    pixel_change_fraction: float = 0.002
    # a pixel differs when any channel moved more than this (0-255): ignores anti-aliasing noise
    pixel_tolerance: int = 24
    diff_scale: float = 0.5
    # scroll offsets closer than this (px) count as unchanged
    scroll_epsilon: float = 5.0
    # a DOM mutation without any visible or text change still counts as a change
    dom_mutation_counts: bool = True
    # share of the assertion's checkable phrases that must hold
    phrase_fraction: float = 0.5
    # fuzzy phrase match (rapidfuzz partial ratio, 0-100) for phrases of at least min_fuzzy_len chars
    fuzzy_phrase: float = 90.0
    min_fuzzy_len: int = 5
    # the generated page's word delta agrees with the reference's at this F1
    delta_f1: float = 0.4
    # OCR the generated screenshots when phrases are missing and the page draws on a canvas
    ocr_fallback: bool = True
    # a state phrase shown before and left alone does not hold where the reference changed it
    stale_phrases: bool = True
    # the page's text / DOM must change where the authored reference text changed in place
    text_change_required: bool = True
    # iwr-det-3 (off here, so iwr-det-2 scores as it always did; see evaluator.protocols):
    # a visible-state clause ("'Green' is no longer highlighted") is checked on the named element's
    # state, against the reference's pixel change at that element's place
    element_state: bool = False
    # iwr-det-17: text another element paints over (an open suggestion list over the paragraph under it) is not in
    # the page's visible text, as the recorded reference's visible text never holds it
    covered_text: bool = False
    # iwr-det-18: "the photo opens with the caption 'Midnight City'": a phrase said to appear that the reference shows
    # in its view holds only where the page shows it in view too, not where it adds it out of sight (a copy without
    # CSS appending the lightbox at the foot of the page)
    view_appearance: bool = False
    # the element's place must show in the reference's first checkpoint what the page showed before
    # (share of changed pixels below this at pixel_tolerance) for the reference's pixels there to count
    element_place_check: bool = False
    element_place_fraction: float = 0.2
    # iwr-det-9: that share counts only the box's pixels that show something (differ from the box's commonest
    # colour in either picture, or changed), not the blank background a wide box is mostly made of
    place_by_content: bool = False
    # an element whose own state stayed still holds a visible-state clause when its place changed and now
    # looks as the reference's does there (a highlight set on its parent or by a pseudo-class)
    element_look: bool = False
    # share of the named element's box (reference checkpoints) whose pixels must differ for the
    # reference to have changed that element's look
    element_change_fraction: float = 0.005
    # a pixel of the named element's box differs from this channel difference (a highlight may be a
    # shade or two darker, below the page-wide pixel_tolerance)
    element_pixel_tolerance: int = 2
    # when the reference's two checkpoints are the same, a state assertion checks the described
    # state instead of demanding a change
    unchanged_reference_state: bool = False
    # the reference's checkpoints are the same below this share of changed pixels (and the same text)
    reference_same_fraction: float = 0.0005
    # a Type action's own text is not evidence of its effect (word phrases only)
    typed_text_not_evidence: bool = False
    # the page's change must be commensurate with the reference's visible change
    commensurate_change: bool = False
    # below this share of the reference's pixel change, the page's own pixel change does not count
    commensurate_ratio: float = 0.25
    # channel tolerance the commensurate check counts both pages' changed pixels at (0: pixel_tolerance)
    commensurate_tolerance: int = 0
    # a page whose own scripts changed its DOM where the reference changed in place is commensurate
    dom_reaction_commensurate: bool = False
    # an action with no assertion fails when the reference's text changed in place and the page showed no change
    unasserted_reaction: bool = False
    # iwr-det-4: with nothing checkable, a page whose words changed, none of them as the reference's did, fails
    unphrased_text_delta: bool = False
    # iwr-det-6: where the reference's words changed, a state phrase the page showed before and after alike is
    # no evidence of the action; with every phrase such, the word delta decides
    idle_phrases: bool = False
    # iwr-det-6: the named element only looks like the reference's (element_look) where the page reacted at all:
    # its DOM, URL, focus or form state changed (a hover shade under the pointer is no highlight)
    look_needs_reaction: bool = False
    # iwr-det-8: a named element the reference changed at its place that the page left as it was fails its clause
    # whatever the other phrases say (phrase_fraction does not outvote it)
    element_clauses_decide: bool = False
    # iwr-det-8: a click that had to scroll the view to reach its target is judged from the reached view too: where
    # the assertion claims a change and nothing changed there, the step fails
    acting_scroll: bool = False
    # iwr-det-9: a quoted phrase the reference's words gained, missing from a page whose words changed, fails the
    # step whatever the other phrases or the word delta say
    absent_quotes_decide: bool = False
    # iwr-det-10: a quoted phrase the document's text shows neither before nor after the action is counted in the
    # text blocks in view, where each element's words are their own ("Ok" and "Cancel" of adjacent buttons, which
    # innerText runs together as "OkCancel")
    block_text_phrases: bool = False
    # iwr-det-10: absent_quotes_decide also where the page's words did not change, unless a canvas draws much of it
    absent_quotes_undrawn: bool = False
    # iwr-det-11: where a click scrolled the view to reach its target (acting_scroll), the named elements' states
    # before the click are read in that view, not in the view before the action (where they may lie out of view)
    reached_states: bool = False
    # iwr-det-11: a named element drawn narrower or lower than this (px) shows the eye no state (0: every element)
    element_min_px: float = 0
    # iwr-det-11: a quoted phrase said to appear whose count in the document's text did not change, on a page whose
    # window did not scroll, is counted in the text blocks in view (innerText runs adjacent labels together)
    merged_view_phrases: bool = False
    # iwr-det-12: "a calendar showing 'January 2024'": a participle of show, display, read, list or contain says
    # what the page shows as plainly as the verb does (the clause checks presence, not the sentence's change)
    participle_cues: bool = False
    # iwr-det-12: a quoted phrase said to appear after an action that typed nothing, whose count in the document's
    # text did not change, is counted in the text and the fields' values together ("the text box now shows ...")
    form_value_phrases: bool = False


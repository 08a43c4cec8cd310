"""Reading an action description: quoted labels, role nouns, position words, content words.

"Click the second 'Add' button in the footer" ->
quotes ["Add"], roles {"button"}, regions ["footer"], ordinal 2, labels [["add"]], content ["add"].

A position relative to something else is a relation: "the checkbox to the left of the input"
-> relations [Relation("left", role "textbox")], "the field below 'Email'" -> [Relation("below",
quotes ["Email"])]. "the left of the page" or "the bottom of the sidebar" stay regions.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from evaluator.agents.glyphs import description_concepts, description_glyphs
from evaluator.agents.words import STOPWORDS, quote_spans

# Role nouns -> role category. Two-word nouns are read first; "keep" words stay content words.
ROLE_WORDS = {
    "button": "button", "buttons": "button", "btn": "button",
    "link": "link", "links": "link", "hyperlink": "link",
    "tab": "tab", "tabs": "tab",
    "icon": "icon", "icons": "icon",
    "field": "textbox", "fields": "textbox", "box": "textbox", "input": "textbox", "textbox": "textbox",
    "textfield": "textbox", "searchbox": "textbox", "searchbar": "textbox", "textarea": "textbox",
    "checkbox": "checkbox", "checkboxes": "checkbox", "radio": "radio",
    "dropdown": "combobox", "combobox": "combobox",
    "menu": "menu", "option": "option", "options": "option",
    "card": "card", "cards": "card", "tile": "card", "tiles": "card",
    "item": "item", "items": "item", "entry": "item", "row": "item",
    "image": "image", "images": "image", "picture": "image", "photo": "image", "thumbnail": "image",
    "logo": "image", "avatar": "image", "img": "image",
    "arrow": "arrow", "arrows": "arrow", "chevron": "arrow",
    "toggle": "switch", "switch": "switch", "slider": "slider",
}
ROLE_PAIRS = {
    ("menu", "item"): ("menuitem", []),
    ("check", "box"): ("checkbox", []),
    ("radio", "button"): ("radio", []),
    ("text", "box"): ("textbox", []),
    ("text", "field"): ("textbox", []),
    ("text", "area"): ("textbox", []),
    ("input", "box"): ("textbox", []),
    ("input", "field"): ("textbox", []),
    ("search", "bar"): ("textbox", ["search"]),
    ("search", "box"): ("textbox", ["search"]),
    ("search", "field"): ("textbox", ["search"]),
    ("search", "input"): ("textbox", ["search"]),
    ("drop", "down"): ("combobox", []),
    ("combo", "box"): ("combobox", []),
    ("nav", "link"): ("link", []),
}
REGION_WORDS = {
    "top": "top", "upper": "top", "bottom": "bottom", "lower": "bottom",
    "left": "left", "leftmost": "left", "right": "right", "rightmost": "right",
    "middle": "middle", "center": "middle", "centre": "middle", "central": "middle",
    "header": "header", "navigation": "nav", "nav": "nav", "navbar": "nav", "menubar": "nav",
    "footer": "footer", "sidebar": "sidebar",
}
ORDINALS = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4,
    "fifth": 5, "5th": 5, "sixth": 6, "6th": 6, "seventh": 7, "7th": 7, "eighth": 8, "8th": 8,
    "ninth": 9, "9th": 9, "tenth": 10, "10th": 10, "last": -1, "final": -1,
}
# Verbs and filler of instructions ("click on the ... located in the ...") that name nothing.
ACTION_WORDS = frozenset(
    """click clicks clicked clicking tap taps tapped press presses pressed pressing hit select selects
    selected choose chooses pick picks type types typed typing enter enters entered write fill fills
    go navigate scroll scrolls hover located positioned placed displayed shown found appears beside
    labeled labelled named titled called saying says reading marked text element elements page
    side corner section area part screen website site want wants order please replace""".split()
)
# How an element looks, not what it says: matched against class names only (rounded-circle).
APPEARANCE_WORDS = frozenset(
    """round rounded circular circle square small little tiny big large huge vertical horizontal blue red
    green yellow orange purple pink grey gray black white dark light bold coloured colored floating
    sticky""".split()
)
# iwr-det-10: numbers that count look-alikes ("the two menu icons"), not names
COUNT_WORDS = frozenset("two three four five six seven eight nine ten eleven twelve 2 3 4 5 6 7 8 9 10 11 12".split())
NAMING_ROLE_WORDS = frozenset("logo avatar thumbnail photo picture image menu dropdown checkbox".split())
LABEL_MARKERS = frozenset("labeled labelled named titled called saying says reading marked text".split())
# Words that start a phrase locating the target by something else ("... to the left of 'Buy milk'").
RELATIONAL = frozenset("of beside near below above under beneath inside within in on for at from behind".split())
TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[.,;:!?]")
# "Click Age to sort the table": after "to", these verbs say why, not what.
PURPOSE_VERBS = frozenset(
    """sort open close add remove view see go show hide expand collapse submit save select toggle navigate
    start play continue confirm cancel search filter reveal display load access return move slide switch
    change edit delete create log sign check complete mark clear reset enable disable subscribe download
    upload share send buy purchase learn read visit scroll zoom increase decrease put get make find""".split()
)
DETERMINERS = frozenset("the a an this that its their your".split())
# iwr-det-3 (check_verbs): verbs of ticking a box say what to do, not what the box is called.
CHECK_VERBS = frozenset("tick ticks ticked untick unticks unticked check checks uncheck unchecks".split())
# iwr-det-3 (picture_nouns): nouns that name a picture rather than a label.
PICTURE_WORDS = frozenset("photo photos picture pictures image images thumbnail thumbnails tile tiles logo "
                          "avatar img".split())
# iwr-det-3 (grid_ordinals): "the second row", "the third column".
GRID_NOUNS = {"row": "row", "rows": "row", "column": "col", "columns": "col", "col": "col"}
# Words that place the target beside something else, by the direction they name.
RELATION_WORDS = {"above": "above", "below": "below", "under": "below", "beneath": "below",
                  "underneath": "below", "beside": "near", "near": "near"}
SIDE_LEAD_INS = frozenset("to on at".split())
# Nouns that name a page structure an anchor can be ("above the table"), as anchor roles.
# iwr-det-4 (colour_words): hue words said of the target ("the blue dot") and nouns that name a small
# painted mark rather than a label ("dot", "swatch"); such a noun ending the phrase is its head.
COLOUR_WORDS = {"blue": "blue", "red": "red", "green": "green", "yellow": "yellow", "orange": "orange",
                "purple": "purple", "violet": "purple", "pink": "pink", "magenta": "pink", "grey": "grey",
                "gray": "grey", "black": "black", "white": "white", "cyan": "cyan", "teal": "cyan",
                "turquoise": "cyan", "brown": "brown"}
SHAPE_NOUNS = frozenset("dot dots circle circles square squares swatch swatches disc disk bullet blob".split())
# iwr-det-6 (edge_positions): "at the far left of the toolbar", "the rightmost tab", "at the right end of
# the row": the extreme one, that way, of the look-alikes. A bare "at the left of" stays what it was
# (a region, or a relation with "of"), since people also say it of something outside the anchor.
EDGE_LEADS = frozenset("far very extreme".split())
EDGE_WORDS = {"leftmost": "left", "rightmost": "right", "topmost": "top", "uppermost": "top",
              "bottommost": "bottom", "lowermost": "bottom"}
EDGE_SIDES = frozenset("left right top bottom".split())
EDGE_NOUNS = frozenset("end edge".split())
# iwr-det-9 (look_edges): "the card with the pink top edge": after these (or a colour word) in its noun phrase, a
# side and an edge describe how the target looks, not where it is among its look-alikes.
LOOK_LEADS = frozenset("with having whose".split())
# iwr-det-9 (side_rows): "the top row", "the left column": a grid position like "the first row" ("bottom" and
# "right" the last).
SIDE_ROWS = {("top", "row"): 1, ("bottom", "row"): -1, ("left", "col"): 1, ("leftmost", "col"): 1,
             ("right", "col"): -1, ("rightmost", "col"): -1, ("topmost", "row"): 1, ("bottommost", "row"): -1}
# iwr-det-6 (header_nouns): "the 'Age' column header", "the table heading 'Salary'": a header cell of a table.
HEADER_LEADS = frozenset("column columns col table row".split())
HEADER_NOUNS = frozenset("header headers heading headings".split())
# iwr-det-6 (look_words): more words of how a control looks ("the small ring button", "the dark empty
# button"): like the appearance words above they name nothing, so they are matched against class
# names only and never make a name the page must show.
LOOK_WORDS = frozenset("ring rings hollow outlined outline empty blank plain filled solid".split())
# iwr-det-12 (size_words): how wide or long a control is drawn ("the wide empty text box"): like the look words,
# they say how it looks and name nothing the page must show.
SIZE_WORDS = frozenset("wide narrow long tall thin thick slim".split())
# iwr-det-13 (swatch_nouns): "colour box", "color square", "colour swatch": a sample of a colour
SWATCH_LEADS = frozenset("colour color".split())
SWATCH_HEADS = frozenset("box boxes square squares swatch swatches sample samples chip chips".split())
# iwr-det-6 (sequence_relations): "the button right after the pink dot", "the tab before 'Settings'":
# the next (or previous) look-alike in reading order from an anchor found by its own description.
SEQUENCE_WORDS = {"after": "after", "following": "after", "before": "before", "preceding": "before"}
SEQUENCE_LEADS = frozenset("right just immediately directly".split())
SEQUENCE_KINDS = frozenset(SEQUENCE_WORDS.values())
ANCHOR_NOUNS = {"table": "table", "list": "list", "form": "form", "heading": "heading", "title": "heading",
                "label": "label"}
# iwr-det-13 (code_anchors): "below the example code": a documentation page's code block
CODE_NOUNS = {"code": "code", "snippet": "code"}
# iwr-det-14 (dot_nouns): "the seventh dot below the photos": a pager's dot; "the three dots" is a menu glyph
DOT_NOUNS = frozenset("dot dots".split())
# iwr-det-14 (picture_anchors): size words said of an anchor's pictures ("the row of small photos"), by what they keep
ANCHOR_SIZES = {"small": "small", "little": "small", "tiny": "small", "smaller": "smaller",
                "big": "big", "large": "big", "huge": "big", "bigger": "bigger", "larger": "bigger"}


@dataclass
class Relation:
    """Where the target is relative to an anchor: left, right, above, below or near it."""

    kind: str
    quotes: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)
    role: str | None = None
    named: list[str] = field(default_factory=list)  # its entries in Description.anchors
    # iwr-det-6: the anchor's own words as said ("the pink dot"), for an anchor found by its description
    phrase: str = ""
    # iwr-det-14 (picture_anchors): size words said of the anchor's pictures ("small", "bigger")
    sizes: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.quotes or self.words or self.role or self.kind in SEQUENCE_KINDS and self.phrase)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "quotes": self.quotes, "words": self.words, "role": self.role,
                **({"phrase": self.phrase} if self.kind in SEQUENCE_KINDS else {}),
                **({"sizes": self.sizes} if self.sizes else {})}


@dataclass
class Description:
    """What a description names: see the module docstring."""

    text: str
    quotes: list[str] = field(default_factory=list)
    roles: set[str] = field(default_factory=set)
    regions: list[str] = field(default_factory=list)
    ordinal: int | None = None
    labels: list[list[str]] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    role_words: list[str] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)  # quoted or named things the target is next to / in
    appearance: list[str] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    # iwr-det-3: glyph characters and concepts named, a picture noun as the head, grid position
    glyphs: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    picture: bool = False
    grid_row: int | None = None
    grid_col: int | None = None
    # iwr-det-13: the row is said to be "of" something ("the second row of colours"): the grid's, not the look-alikes'
    grid_of: bool = False
    # iwr-det-13: the target is named as a colour sample ("the colour box", "the colour square")
    swatch: bool = False
    # iwr-det-4: the target's hues and the small-mark nouns naming it
    colours: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    # iwr-det-6: the extreme look-alike that way ("far left")
    edge: str | None = None
    # iwr-det-10: "again" / "the same": the element the previous action used
    again: bool = False

    @property
    def has_text_cue(self) -> bool:
        return bool(self.quotes or self.content or self.labels)

    def to_dict(self) -> dict:
        return {"quotes": self.quotes, "roles": sorted(self.roles), "regions": self.regions,
                "ordinal": self.ordinal, "labels": self.labels, "content": self.content,
                "anchors": self.anchors, "appearance": self.appearance,
                "relations": [r.to_dict() for r in self.relations],
                **({"glyphs": self.glyphs, "concepts": self.concepts} if self.glyphs or self.concepts else {}),
                **({"picture": True} if self.picture else {}),
                **({"grid": [self.grid_row, self.grid_col]} if self.grid_row or self.grid_col else {}),
                **({"grid_of": True} if self.grid_of else {}),
                **({"swatch": True} if self.swatch else {}),
                **({"colours": self.colours, "shapes": self.shapes} if self.colours else {}),
                **({"edge": self.edge} if self.edge else {}),
                **({"again": True} if self.again else {})}


@dataclass
class _Token:
    word: str        # lower case (a quote keeps its text)
    capital: bool    # written with a capital (and not the sentence's first word)
    kind: str = "content"  # content | stop | action | role | region | ordinal | appearance | quote | break
    #                        (and with later protocols: grid | shape | edge | relation)
    phase: str = "target"  # target | anchor (locates the target) | purpose ("to add it to the cart")
    role: str | None = None
    relation: int | None = None  # index of the relation whose anchor this token names
    swatch_of: tuple[str, str | None] | None = None  # iwr-det-13: its kind and role before read as a swatch noun


def parse_description(text: str | None, typed: str | None = None, params=None) -> Description:
    """Split a description into the cues targeting scores against.

    ``typed`` is a Type action's text: quoted, it is what goes into the field, not its label.
    ``params`` (TargetingParams) switches on the iwr-det-3 readings (glyphs, picture nouns, grid
    positions, check verbs); without it the description is read as iwr-det-2 reads it.
    """
    raw = text or ""
    text = unicodedata.normalize("NFKC", raw)
    desc = Description(text=text)
    tokens = _tokens(text)
    skip = " ".join((typed or "").split()).lower()
    tokens = [t for t in tokens if not (skip and t.kind == "quote" and " ".join(t.word.split()).lower() == skip)]
    if params is not None and params.glyph_words:
        desc.glyphs, desc.concepts = description_glyphs(raw), description_concepts(raw, shapes=params.glyph_shapes)
        tokens = [t for t in tokens if not (t.kind == "quote" and all(ch in desc.glyphs for ch in t.word.strip()))]
    _classify(tokens)
    if params is not None:
        _det6_words(tokens, params)
        _swatch_nouns(tokens, params.swatch_nouns)
        _det15_words(tokens, params)
    ticks = False
    if params is not None and params.check_verbs:
        for t in tokens:
            if t.kind == "content" and t.word in CHECK_VERBS and not t.capital:
                t.kind, ticks = "action", True
    if params is not None and params.count_words:
        _counts(tokens)
    if params is not None and params.grid_ordinals:
        _grid_positions(tokens, desc, sides=params.side_rows, named=params.named_grid_rows)
    if params is not None and params.colour_words:
        _shape_heads(tokens)
    if params is not None and params.edge_positions:
        desc.edge = _edges(tokens, looks=params.look_edges)
    _dot_heads(tokens, params is not None and params.dot_nouns)
    kinds = _phases(tokens, between=params is not None and params.between_relation,
                    sequence=params is not None and params.sequence_relations)
    desc.swatch = _target_swatch(tokens)
    _collect(tokens, desc, anchor_sizes=params is not None and params.picture_anchors)
    _name_dot(tokens, desc, params is not None and params.dot_nouns)
    if params is not None and params.repeat_targets:
        desc.again = _repeats(tokens)
    if params is not None and params.colour_words:
        desc.colours = _dedupe(COLOUR_WORDS[t.word] for t in tokens
                               if t.phase == "target" and t.kind == "appearance" and t.word in COLOUR_WORDS)
    _collect_relations(tokens, kinds, desc, code=params is not None and params.code_anchors,
                       pictures=params is not None and params.picture_anchors)
    if not desc.content and not desc.quotes:
        # "Click the logo": a role noun that names a thing is also its label; "the round toggle
        # button" names none (matching "button" to a "Buttons" link would mislead)
        desc.content = _dedupe(w for w in desc.role_words if w in NAMING_ROLE_WORDS)
    if ticks and not desc.roles:  # "Untick 'Green'": what is ticked is a checkbox
        desc.roles.add("checkbox")
    if params is not None and params.picture_nouns:
        desc.picture = any(w in PICTURE_WORDS for w in desc.role_words) and not desc.quotes
    return desc


def _det15_words(tokens: list[_Token], params) -> None:
    """iwr-det-15's readings of role nouns: a glyph's box (glyph_boxes), a heading (heading_targets)."""
    if params.glyph_boxes:
        _glyph_boxes(tokens)
    if params.heading_targets:
        _heading_nouns(tokens)


# iwr-det-15 (glyph_boxes): words naming a glyph a small box can show ("the plus box", "the × box").
GLYPH_BOX_WORDS = frozenset("plus minus cross close".split())


def _glyph_boxes(tokens: list[_Token]) -> None:
    """iwr-det-15: "the plus box next to 'Dropdown'": a box named by the glyph it shows is a control drawing that
    glyph (an icon), not a text box; "the search box" or "the text box" stay text boxes."""
    for before, token in zip(tokens, tokens[1:], strict=False):
        if (token.kind == "role" and token.role == "textbox" and token.word in ("box", "boxes")
                and before.kind == "content" and before.word in GLYPH_BOX_WORDS and not before.capital):
            token.role = "icon"


# iwr-det-15 (heading_targets): nouns naming a heading of the page.
HEADING_WORDS = frozenset("heading headings headline headlines".split())


def _heading_nouns(tokens: list[_Token]) -> None:
    """iwr-det-15: "click the big heading 'SmartMenus'": a heading noun is the target's role, not a word of its name."""
    for token in tokens:
        if token.kind == "content" and token.word in HEADING_WORDS and not token.capital:
            token.kind, token.role = "role", "heading"


def _counts(tokens: list[_Token]) -> None:
    """iwr-det-10: "the upper of the two menu icons", "one of the 3 tabs": a number before a plural noun
    (across the words of its noun phrase) says how many look-alikes there are; it is no word of the
    target's name. "The 2 button" or "Dummy 2" keep their number."""
    for i, token in enumerate(tokens):
        if token.kind not in ("content", "stop") or token.capital or token.word not in COUNT_WORDS:
            continue
        for after in tokens[i + 1:i + 4]:
            if after.kind not in ("content", "role", "appearance") or after.capital:
                break
            if _plural(after.word):
                token.kind = "stop"
                break


def _repeats(tokens: list[_Token]) -> bool:
    """iwr-det-10: the target is the element the previous action used: "again", or "the same" before the
    target's role noun ("the same menu icon"; "the same password" or "under the same carousel" are not)."""
    for i, token in enumerate(tokens):
        if token.phase != "target" or token.kind == "quote":
            continue
        if token.word == "again":
            return True
        if token.word == "same":
            for after in tokens[i + 1:i + 4]:
                if after.kind == "role":
                    return True
                if after.kind != "appearance":
                    break
    return False


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith("ss")


def _shape_heads(tokens: list[_Token]) -> None:
    """iwr-det-4: "the blue dot in the toolbar": a shape noun after a hue and ending its noun phrase
    (no role or content word follows) is the target's head, like a role noun. Without a hue ("the
    fourth dot in the row of dots") or before a noun ("the square button") it stays as it was."""
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.word not in SHAPE_NOUNS or token.capital or token.kind not in ("content", "appearance"):
            continue
        if nxt is not None and nxt.kind in ("content", "role", "appearance", "quote"):
            continue
        j = i - 1
        while j >= 0 and tokens[j].kind == "appearance" and tokens[j].word not in COLOUR_WORDS:
            j -= 1  # "the blue little dot"
        if j >= 0 and tokens[j].kind == "appearance" and tokens[j].word in COLOUR_WORDS:
            token.kind = "shape"


def _dot_heads(tokens: list[_Token], on: bool) -> None:
    """iwr-det-14: "the seventh dot below the photos", "the first of the two dots": a dot ending its noun phrase (no
    role, content or look word follows) is the target's head, like a role noun, with or without a hue; the relation
    after it then places it. "The three dots" (a menu glyph) and "the dot button" stay as they were."""
    for i, token in enumerate(tokens if on else []):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.word not in DOT_NOUNS or token.capital or token.kind not in ("content", "appearance", "shape"):
            continue
        if nxt is not None and nxt.kind in ("content", "role", "appearance", "quote"):
            continue
        if i > 0 and tokens[i - 1].word in ("three", "3"):
            continue
        token.kind = "shape"


def _name_dot(tokens: list[_Token], desc: Description, on: bool) -> None:
    """iwr-det-14: a target whose head is a dot names the pager dot glyph (evaluator.agents.glyphs.DOT_CONCEPT)."""
    if on and any(t.kind == "shape" and t.word in DOT_NOUNS and t.phase == "target" for t in tokens):
        desc.concepts = _dedupe([*desc.concepts, "dot"])


def _swatch_nouns(tokens: list[_Token], on: bool) -> None:
    """iwr-det-13: "the small colour box with an arrow", "the colour square": 'colour' before a box, square or swatch
    names a sample of a colour (a swatch), not a text box and not a word the element says."""
    for token, nxt in zip(tokens, tokens[1:] if on else [], strict=False):
        if token.word in SWATCH_LEADS and nxt.word in SWATCH_HEADS and not (token.capital or nxt.capital):
            for t in (token, nxt):
                t.swatch_of = (t.kind, t.role)  # an anchor's words keep their reading ("below the colour box")
                t.kind, t.role = "swatch", None


def _target_swatch(tokens: list[_Token]) -> bool:
    """Whether the target is named as a swatch; an anchor's swatch words get their reading back."""
    for t in tokens:
        if t.kind == "swatch" and t.phase != "target":
            t.kind, t.role = t.swatch_of
    return any(t.kind == "swatch" for t in tokens)


def _det6_words(tokens: list[_Token], params) -> None:
    """iwr-det-6's readings of single words: table header nouns and look words (iwr-det-12: size words too)."""
    if params.header_nouns:
        _header_cells(tokens)
    looks = (LOOK_WORDS if params.look_words else frozenset()) | (SIZE_WORDS if params.size_words else frozenset())
    for t in tokens:
        if t.kind == "content" and t.word in looks and not t.capital:
            t.kind = "appearance"


def _header_cells(tokens: list[_Token]) -> None:
    """iwr-det-6: "column header" / "table heading" is one role noun, a table's header cell; "header" alone
    stays the page's header region."""
    for lead, noun in zip(tokens, tokens[1:], strict=False):
        if lead.word in HEADER_LEADS and noun.word in HEADER_NOUNS and not (lead.capital or noun.capital) \
                and lead.kind != "quote" and noun.kind != "quote":
            for t in (lead, noun):
                t.kind, t.role = "role", "columnheader"


def _edges(tokens: list[_Token], looks: bool = False) -> str | None:
    """iwr-det-6: "the far left", "the rightmost", "the right end": the side named, its words marked
    as a position (they name nothing, and "far left of" starts no relation). With ``looks`` (iwr-det-9),
    "with the pink top edge" is how the target looks: its words are appearance words and place nothing."""
    edge = None
    for i, token in enumerate(tokens):
        if token.capital or token.kind == "quote":
            continue
        before = tokens[i - 1] if i > 0 else None
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        side, marked = None, [token]
        if token.word in EDGE_WORDS:
            side = EDGE_WORDS[token.word]
        elif token.word in EDGE_SIDES:
            if before is not None and before.word in EDGE_LEADS and not before.capital:
                side, marked = token.word, [before, token]
            elif after is not None and after.word in EDGE_NOUNS:
                side, marked = token.word, [token, after]
                if looks and _said_of_look(tokens, i):
                    token.kind = after.kind = "appearance"
                    continue
        if side is not None:
            edge = edge or side
            for t in marked:
                t.kind, t.role = "edge", None
    return edge


def _said_of_look(tokens: list[_Token], i: int) -> bool:
    """iwr-det-9: the side at ``i`` (before "edge" / "end") follows a colour word, or "with" / "having" /
    "whose" within its noun phrase: "the card with the pink top edge", "a tile having a red left edge"."""
    for token in reversed(tokens[max(0, i - 4):i]):
        if token.kind in ("quote", "break", "role") or token.word in RELATIONAL:
            return False
        if token.word in LOOK_LEADS or token.word in COLOUR_WORDS:
            return True
    return False


def _grid_positions(tokens: list[_Token], desc: Description, sides: bool = False, named: bool = False) -> None:
    """"the second row" / "the third column" set a grid position; their words name nothing else. With
    ``sides`` (iwr-det-9), so do "the top row", "the bottom row", "the left column". With ``named``
    (iwr-det-13) a row followed by "of" and a word ("the second row of colours", "of the calendar") is the
    row of the grid that word names: ``grid_of``."""
    for i, token in enumerate(tokens[:-1]):
        noun = GRID_NOUNS.get(tokens[i + 1].word)
        if noun is None or token.capital or tokens[i + 1].capital:
            continue
        if token.word in ORDINALS and token.kind == "ordinal":
            place = ORDINALS[token.word]
        elif sides and (token.word, noun) in SIDE_ROWS and token.kind != "quote":
            place = SIDE_ROWS[(token.word, noun)]
        else:
            continue
        if noun == "row":
            desc.grid_row = place
            after = tokens[i + 2:i + 4]
            desc.grid_of = desc.grid_of or named and len(after) == 2 and after[0].word == "of" \
                and after[1].kind not in ("quote", "break")
        else:
            desc.grid_col = place
        token.kind = tokens[i + 1].kind = "grid"
        token.role = tokens[i + 1].role = None


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    cursor = 0
    for start, end, inner in quote_spans(text):
        out += _word_tokens(text[cursor:start], first=not out)
        out.append(_Token(inner, capital=False, kind="quote"))
        cursor = end
    return out + _word_tokens(text[cursor:], first=not out)


def _word_tokens(text: str, first: bool) -> list[_Token]:
    out = []
    for match in TOKEN_RE.finditer(text):
        raw = match.group(0).replace("’", "'")
        if not raw[0].isalnum():
            out.append(_Token(raw, capital=False, kind="break"))
            continue
        word = raw.lower()
        word = word[:-2] if word.endswith("'s") else word
        out.append(_Token(word, capital=not (first and not out) and raw[:1].isupper()))
    return out


def _classify(tokens: list[_Token]) -> None:
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.kind in ("quote", "break"):
            i += 1
            continue
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        pair = (token.word, after.word) if after is not None and after.kind == "content" else None
        if pair in ROLE_PAIRS:
            role, keep = ROLE_PAIRS[pair]
            for t in (token, after):
                t.kind, t.role = ("content", None) if t.word in keep else ("role", role)
            i += 2
            continue
        token.kind = _kind(token)
        i += 1


def _kind(token: _Token) -> str:
    word, capital = token.word, token.capital
    if word in ROLE_WORDS and not capital:
        token.role = ROLE_WORDS[word]
        return "role"
    if word in REGION_WORDS and not capital:
        return "region"
    if word in ORDINALS and not capital:
        return "ordinal"
    if word in STOPWORDS and not (capital and len(word) > 1):
        return "stop"  # a capitalised "More" or "About" is a label, not filler
    if word in ACTION_WORDS and not capital:
        return "action"
    if word in APPEARANCE_WORDS and not capital:
        return "appearance"
    return "content"


def _phases(tokens: list[_Token], between: bool = False, sequence: bool = False) -> list[str]:
    """Mark anchor phrases ("in the 'Dropdown' card") and purpose phrases ("to collapse it").

    Both start only once the target's head (a role noun, a quoted label, a shape or swatch noun) has been read, so
    "the Add to cart button" and "the Terms of Service link" stay whole. A relation ("to the
    left of", "next to", "below") also starts an anchor phrase, whose tokens it owns; the
    kinds of the relations read are returned in order.

    With ``between`` (iwr-det-3), "between 'Green' and 'Pink'" reads as two relations of kind
    "between", one per side, the "and" joining them naming nothing. With ``sequence`` (iwr-det-6),
    "(right) after" and "(just) before" start relations of kind "after" and "before".
    """
    phase, headed, relation, skip, open_between, mate_named = "target", False, None, 0, False, False
    relations: list[str] = []
    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        trigger = (_relation_at(tokens, i, between, sequence) if headed and phase != "purpose" and not skip
                   and token.kind != "edge" else None)
        if token.kind == "break":
            phase, relation, open_between = "target", None, False
        elif open_between and phase == "anchor" and token.word in ("and", "&") and token.kind == "stop":
            relations.append("between_and")
            relation, open_between, token.kind, mate_named = len(relations) - 1, False, "relation", False
        elif mate_named and token.word in RELATIONAL:  # "... and About in the menu": the rest is context
            relation, mate_named = None, False
        elif trigger:
            open_between = trigger[0] == "between"
            kind, skip = trigger
            relations.append(kind)
            phase, relation = "anchor", len(relations) - 1
        elif phase != "purpose" and _starts_purpose(token, nxt, headed):
            phase, relation = "purpose", None
        elif headed and phase == "target" and (token.word in RELATIONAL or _is_next_to(token, nxt)):
            phase = "anchor"
        if skip:  # the relation's own words ("to the left of") name nothing
            token.kind, token.role, skip = "relation", None, skip - 1
        token.phase, token.relation = phase, relation
        if token.kind in ("role", "quote", "shape", "swatch"):
            headed = True
        if relation is not None and relations[relation] == "between_and" and token.kind in ("quote", "content", "role"):
            mate_named = True
    return relations


def _relation_at(tokens: list[_Token], i: int, between: bool = False,
                 sequence: bool = False) -> tuple[str, int] | None:
    """(kind, number of tokens) of a relation starting at token ``i``: "to the left of", "next to", "below",
    with ``between`` (iwr-det-3) "between", with ``sequence`` (iwr-det-6) "(right) after", "(just) before"."""
    ahead = [t.word if t.kind != "quote" else "" for t in tokens[i:i + 4]] + [""] * 4
    if sequence:
        lead = 1 if ahead[0] in SEQUENCE_LEADS and ahead[1] in SEQUENCE_WORDS else 0
        if ahead[lead] in SEQUENCE_WORDS and not tokens[i + lead].capital:
            return SEQUENCE_WORDS[ahead[lead]], lead + 1
    side = 1 if ahead[0] in SIDE_LEAD_INS else 0
    side += 1 if ahead[side] == "the" else 0
    if ahead[side] in ("left", "right") and ahead[side + 1] == "of":
        return ahead[side], side + 2
    if ahead[0] in ("next", "adjacent") and ahead[1] == "to":
        return "near", 2
    if ahead[0] in RELATION_WORDS:
        return RELATION_WORDS[ahead[0]], 1
    if between and ahead[0] == "between":
        return "between", 1
    return None


def _starts_purpose(token: _Token, nxt: _Token | None, headed: bool) -> bool:
    if nxt is None:
        return False
    if token.word == "to" and (nxt.word in PURPOSE_VERBS or headed and nxt.word not in DETERMINERS
                               and nxt.kind not in ("region", "quote")):
        return True
    return headed and (token.word == "in" and nxt.word == "order" or token.word == "so" and nxt.word == "that")


def _is_next_to(token: _Token, nxt: _Token | None) -> bool:
    return token.word == "next" and nxt is not None and nxt.word == "to"


def _collect(tokens: list[_Token], desc: Description, anchor_sizes: bool = False) -> None:
    """The target's cues from its tokens; with ``anchor_sizes`` (iwr-det-14) a size word said of an anchor ("next to
    the small photos") is the anchor's, not how the target looks."""
    for token in tokens:
        if anchor_sizes and token.phase == "anchor" and token.relation is not None and token.word in ANCHOR_SIZES:
            continue
        if token.phase == "purpose":
            continue
        target = token.phase == "target"
        if token.kind == "quote":
            (desc.quotes if target else desc.anchors).append(token.word)
        elif token.kind == "content":
            (desc.content if target else desc.anchors).append(token.word)
        elif token.kind == "role" and target:
            desc.roles.add(token.role)
            desc.role_words.append(token.word)
        elif token.kind == "region":
            desc.regions.append(REGION_WORDS[token.word])
        elif token.kind == "ordinal":
            desc.ordinal = ORDINALS[token.word]
        elif token.kind == "appearance":
            desc.appearance.append(token.word)
        elif token.kind == "shape" and target:
            desc.shapes.append(token.word)
    desc.content = _dedupe(desc.content)
    desc.anchors = _dedupe(desc.anchors)
    desc.labels = _label_phrases([t for t in tokens if t.phase == "target"])


def _collect_relations(tokens: list[_Token], kinds: list[str], desc: Description, code: bool = False,
                       pictures: bool = False) -> None:
    """Each relation's anchor: its quotes, content words and role noun. A side without an anchor
    on the page ("to the left of the page") is a region again."""
    relations = [Relation(kind) for kind in kinds]
    _anchor_words(tokens, relations, {**ANCHOR_NOUNS, **CODE_NOUNS} if code else ANCHOR_NOUNS)
    if pictures:
        _picture_anchors(tokens, relations)
    for i, relation in enumerate(relations):
        if relation.kind == "between":  # its other side follows it ("and 'Pink'")
            mate = relations[i + 1] if i + 1 < len(relations) and relations[i + 1].kind == "between_and" else None
            if mate is None or mate.empty or relation.empty:
                relation.kind = "near"  # one side named only ("between the cards"): next to it
                if mate is not None:
                    mate.kind = "near"
        elif relation.kind == "between_and":
            relation.kind = "between" if relations[i - 1].kind == "between" else "near"
        if not relation.empty:
            desc.relations.append(relation)
        elif relation.kind in ("left", "right"):
            desc.regions.append(relation.kind)


def _anchor_words(tokens: list[_Token], relations: list[Relation], nouns: dict[str, str] = ANCHOR_NOUNS) -> None:
    """Each anchor token's word into its relation: quotes, role, content words, and the phrase as said."""
    for token in tokens:
        if token.relation is None or token.phase != "anchor":
            continue
        relation = relations[token.relation]
        if token.kind not in ("relation", "break"):
            said = f'"{token.word}"' if token.kind == "quote" else token.word
            relation.phrase = f"{relation.phrase} {said}".strip()
        if token.kind in ("quote", "content"):
            relation.named.append(token.word)
        if token.kind == "quote":
            relation.quotes.append(token.word)
        elif token.kind == "role" and relation.role is None:
            relation.role = token.role
        elif token.kind == "content" and token.word in nouns and relation.role is None:
            relation.role = nouns[token.word]
        elif token.kind == "content":
            relation.words.append(token.word)


def _picture_anchors(tokens: list[_Token], relations: list[Relation]) -> None:
    """iwr-det-14: an anchor named by a picture noun without quotes ("the row of small photos", "the big photo") is
    found among the pictures, whatever row or list holds them, and its size words ("small", "larger") are kept to
    choose among the pictures found; the picture and size words are no text the anchor must say."""
    for index, relation in enumerate(relations):
        own = [t for t in tokens if t.relation == index and t.phase == "anchor"]
        if relation.quotes or not any(t.word in PICTURE_WORDS and not t.capital for t in own):
            continue
        relation.role = "image"
        relation.sizes = _dedupe(ANCHOR_SIZES[t.word] for t in own if t.word in ANCHOR_SIZES and not t.capital)
        relation.words = [w for w in relation.words if w not in PICTURE_WORDS and w not in ANCHOR_SIZES]


def _label_phrases(tokens: list[_Token]) -> list[list[str]]:
    """Words right before a role noun ("the Add to cart button") or after "labeled"/"named"."""
    phrases = []
    for i, token in enumerate(tokens):
        if token.kind == "role":
            phrase = _walk(tokens, range(i - 1, -1, -1))[::-1]
        elif token.word in LABEL_MARKERS:
            phrase = _walk(tokens, range(i + 1, len(tokens)))
        else:
            continue
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    return phrases


def _walk(tokens: list[_Token], indices, limit: int = 4) -> list[str]:
    """Content words along ``indices``, across "to"/"of"/"and" ("add to cart"), up to ``limit``."""
    words: list[str] = []
    for j in indices:
        t = tokens[j]
        if t.kind == "content":
            words.append(t.word)
        elif not (t.kind == "stop" and words and t.word in {"to", "of", "and", "&"}):
            break
        if len(words) >= limit:
            break
    return words


def _dedupe(items) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)

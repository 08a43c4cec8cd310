"""What an icon-only control shows, and the words people use for it (protocol iwr-det-3).

"Tap the double right arrow (»)", "the three-bar menu icon", "the small square button with an
upward arrow", "the × in the corner": the description names a glyph, by its character or by
words. Each glyph *concept* lists the characters that draw it and the tokens icon fonts, class
names and aria-labels use for it; :func:`description_concepts` reads the concepts a description
names and :func:`glyph_score` says how well a candidate shows one of them.
"""

from __future__ import annotations

import re
import unicodedata

from evaluator.agents.words import split_identifier

# concept -> (characters that draw it, tokens naming it in classes / icon names / aria-labels)
CONCEPTS: dict[str, tuple[str, frozenset[str]]] = {
    "right": ("›»→❯▶▸⟩>⇨➔➜⟶⇒⏵⮞", frozenset("next right forward forwards chevronright arrowright angleright "
                                          "caretright".split())),
    "left": ("‹«←❮◀◂⟨<⇦⟵⇐⏴⮜", frozenset("prev previous left back backward backwards chevronleft arrowleft "
                                       "angleleft caretleft".split())),
    "up": ("↑▲⬆︿˄^⌃△⏶⮝", frozenset("up top totop scrolltop backtotop upward chevronup arrowup angleup "
                                  "caretup".split())),
    "down": ("↓▼⬇﹀˅⌄▽⏷⮟", frozenset("down downward chevrondown arrowdown angledown caretdown".split())),
    "menu": ("☰≡⋮⋯", frozenset("menu hamburger bars burger toggler navicon navtoggle offcanvas".split())),
    "close": ("×✕✖✗╳", frozenset("close times dismiss cross xmark".split())),
    "search": ("🔍🔎⌕", frozenset("search magnifier magnify magnifying loupe".split())),
    "settings": ("⚙", frozenset("gear cog cogs settings".split())),
    "plus": ("+＋➕", frozenset("plus add".split())),
    "minus": ("−➖", frozenset("minus subtract".split())),
}
# iwr-det-4 (glyph_shapes): the menu concept above is three shapes. "The three-bar button" is the ☰
# drawn by a bars icon; a ⋮ (ellipsis, "more") is another control, and an id or class that merely
# says "menu" or "dropdown" draws neither. Each shape is its own concept, scored 0.9 by its own names;
# the generic menu tokens, "menu" being what a bars icon usually opens, count only GENERIC_MATCH.
SHAPE_CONCEPTS: dict[str, tuple[str, frozenset[str]]] = {
    **{name: value for name, value in CONCEPTS.items() if name != "menu"},
    "bars": ("☰≡", frozenset("hamburger bars burger navicon".split())),
    "more": ("⋮⋯", frozenset("ellipsis ellipsisv ellipsish kebab meatball meatballs".split())),
    "menu": ("", frozenset("menu toggler navtoggle offcanvas".split())),
}
# iwr-det-14 (dot_nouns): a pager's dot, named only by a description whose head is a dot (never from a character
# the description shows, so no earlier protocol reads it): the bullet it draws, or the names its classes give it.
DOT_CONCEPT = ("•●○◦∙⚫⚪", frozenset("dot dots bullet bullets pager pagination indicator indicators".split()))
# iwr-det-15 (generated_glyphs): a lone hyphen written by CSS beside a '+' state is a minus sign, not a dash.
GENERATED_CONCEPT = {"-": "minus", "+": "plus"}
GENERATED_MATCH = 0.9
# iwr-det-6 (glyph_labels): a sort control's arrow is named by the order it sorts in (Font Awesome's
# sort-desc is its down caret): these words name the arrow when read from a label or a data-* value.
LABEL_CONCEPT_TOKENS = {"down": frozenset("desc descending".split()), "up": frozenset("asc ascending".split())}
# A label this short is a control's name ("Desc", "Next"), not a sentence that happens to say "up".
LABEL_MAX_CHARS = 24
GENERIC_CONCEPTS = frozenset({"menu"})
GENERIC_MATCH = 0.6
_CHAR_CONCEPT = {ch: name for name, (chars, _tokens) in CONCEPTS.items() for ch in chars}
_SHAPE_CHAR_CONCEPT = {ch: name for name, (chars, _tokens) in SHAPE_CONCEPTS.items() for ch in chars}
# Words of a description that name a glyph without a direction.
DIRECTIONAL_NOUNS = frozenset("arrow arrows chevron chevrons caret triangle pointer angle".split())
DIRECTIONS = {"right": "right", "rightward": "right", "rightwards": "right", "forward": "right", "next": "right",
              "left": "left", "leftward": "left", "leftwards": "left", "back": "left", "backward": "left",
              "up": "up", "upward": "up", "upwards": "up", "down": "down", "downward": "down",
              "downwards": "down"}
NAMED = {"hamburger": "menu", "burger": "menu", "magnifier": "search", "magnifying": "search",
         "loupe": "search", "gear": "settings", "cog": "settings", "plus": "plus", "minus": "minus",
         "cross": "close"}
SHAPE_NAMED = {**NAMED, "hamburger": "bars", "burger": "bars", "kebab": "more", "ellipsis": "more"}
BARS = re.compile(r"\b(three|3)[\s-]*(bars?|lines?|stripes?)\b", re.I)
DOTS = re.compile(r"\b(three|3)[\s-]*(dots?|points?)\b", re.I)
WORD = re.compile(r"[a-z]+")
# Typographic quotes are punctuation of the description, never a glyph it names.
NOT_GLYPHS = frozenset("'\"‘’“”`´")


def description_glyphs(text: str) -> list[str]:
    """Symbol characters the description itself shows ("the » arrow", "(×)")."""
    out = []
    for ch in unicodedata.normalize("NFC", text or ""):
        if ch in NOT_GLYPHS or ch.isalnum() or ch.isspace():
            continue
        if ch in _CHAR_CONCEPT or unicodedata.category(ch) in ("So", "Sm", "Pi", "Pf"):
            if ch not in out:
                out.append(ch)
    return out


def description_concepts(text: str, shapes: bool = False) -> list[str]:
    """Glyph concepts the description names by character or by words (``shapes``: iwr-det-4's
    finer concepts, where three bars, three dots and a generic menu are told apart)."""
    char_concept, named = (_SHAPE_CHAR_CONCEPT, SHAPE_NAMED) if shapes else (_CHAR_CONCEPT, NAMED)
    concepts: list[str] = []

    def add(name: str) -> None:
        if name not in concepts:
            concepts.append(name)

    for ch in description_glyphs(text):
        if ch in char_concept:
            add(char_concept[ch])
    lowered = (text or "").lower()
    tokens = WORD.findall(lowered)
    for j, t in enumerate(tokens):  # "the double right arrow", "an upward arrow", "the arrow pointing left"
        if t in DIRECTIONAL_NOUNS or t == "pointing":
            for near in tokens[max(0, j - 2):j] + tokens[j + 1:j + 3]:
                if near in DIRECTIONS:
                    add(DIRECTIONS[near])
    if BARS.search(lowered):
        add("bars" if shapes else "menu")
    if shapes and DOTS.search(lowered):
        add("more")
    for t in tokens:
        if t in named:
            add(named[t])
    if shapes and "bars" in concepts:
        add("menu")  # what three bars usually open, matched at GENERIC_MATCH only
    return concepts


def glyph_score(chars: list[str], concepts: list[str], cand: dict, attribute_tokens: set[str],
                shapes: bool = False, labels: bool = False) -> float:
    """1 when the candidate's own short text is a glyph the description shows or names; 0.9 when its
    icon names, aria-label or classes name a concept the description names; else 0. With ``shapes``
    (iwr-det-4) a generic concept (a "menu" id or class) scores only GENERIC_MATCH. With ``labels``
    (iwr-det-6) its short own label and data-* values name concepts too, sort words included."""
    if not (chars or concepts):
        return 0.0
    table, char_concept = (SHAPE_CONCEPTS, _SHAPE_CHAR_CONCEPT) if shapes else (CONCEPTS, _CHAR_CONCEPT)
    if "dot" in concepts:
        table = {**table, "dot": DOT_CONCEPT}
    own = "".join((cand.get("text") or "").split())
    # iwr-det-15 (generated_glyphs): symbols CSS writes in the control: the very character the description shows
    # scores like its own text, another of the glyph it names like an icon's name (a ◀ is no «, a button showing
    # « is the better match)
    generated = cand.get("generated") or []
    if any(ch in chars for ch in generated):
        return 1.0
    written = GENERATED_MATCH if any(GENERATED_CONCEPT.get(ch, char_concept.get(ch)) in concepts
                                     for ch in generated) else 0.0
    if own and len(own) <= 3:
        if any(ch in own for ch in chars) or "dot" in concepts and any(ch in DOT_CONCEPT[0] for ch in own):
            return 1.0
        if any(char_concept.get(ch) in concepts for ch in own):
            return 1.0
    if not concepts:
        return written
    pool, compact = _glyph_names(cand, attribute_tokens)
    if labels:
        pool = pool | _label_names(cand)
    best = 0.0
    for concept in concepts:
        wanted = table[concept][1] | (LABEL_CONCEPT_TOKENS.get(concept, frozenset()) if labels else frozenset())
        if wanted & pool or any(w in c for c in compact for w in wanted if len(w) > 5):
            best = max(best, GENERIC_MATCH if shapes and concept in GENERIC_CONCEPTS else 0.9)
    return max(best, written)


def glyph_point(chars: list[str], concepts: list[str], points: list | None) -> tuple[float, float] | None:
    """iwr-det-16 (glyph_points): where the part drawing the glyph the description shows or names sits in the
    control (``points``: [glyph, x, y] from the candidate collector), the first such part; None when no part
    draws it."""
    for ch, x, y in points or ():
        named = GENERATED_CONCEPT.get(ch) or _CHAR_CONCEPT.get(ch) or _SHAPE_CHAR_CONCEPT.get(ch)
        if ch in chars or named in concepts:
            return float(x), float(y)
    return None


def _label_names(cand: dict) -> set[str]:
    """Tokens of the candidate's short own label and of its data-* values ("default:desc")."""
    names: set[str] = set()
    text = " ".join((cand.get("text") or "").split())
    for value in ([text] if len(text) <= LABEL_MAX_CHARS else []) + list(cand.get("data_labels", [])):
        names.update(split_identifier(value))
    return names


def _glyph_names(cand: dict, attribute_tokens: set[str]) -> tuple[set[str], set[str]]:
    """Tokens naming what the candidate shows (attributes, aria-label, title, icon names), with
    neighbouring pairs joined (chevron-right), and its icon and class names run together."""
    names = set(attribute_tokens) | set(cand.get("drawn", ()))  # drawn: iwr-det-7's CSS-drawn icons only
    for value in (cand.get("aria_label"), cand.get("title"), cand.get("svg_title"), cand.get("alt")):
        names.update(split_identifier(value))
    joined = {a + b for a, b in zip(sorted(names), sorted(names)[1:], strict=False)}  # chevron-right
    compact = {"".join(split_identifier(v)) for v in [*cand.get("icons", []), cand.get("cls", "")] if v}
    compact = {c for c in compact if c}
    return names | joined | compact, compact

"""Scoring collected candidates against a parsed description (pure Python, no browser).

score = w_text * text + w_attributes * attributes + w_role * role + w_position * position
(judge-design "Finding the element an action describes"); each part is in [0, 1].
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rapidfuzz import fuzz

from evaluator.agents.colours import LOOK_MATCH, WITH_WORDS, look_score
from evaluator.agents.description import PICTURE_WORDS, SEQUENCE_KINDS, Description, parse_description
from evaluator.agents.glyphs import glyph_score
from evaluator.agents.params import TargetingParams
from evaluator.agents.relations import between_score, relation_score, resolved_anchors
from evaluator.agents.words import (
    best_token_match,
    canonical,
    content_words,
    label_words,
    normalize,
    split_identifier,
    token_f1,
)

# Class-name fragments of icon fonts and CSS frameworks that say nothing about the element.
NOISE_TOKENS = frozenset(
    """fa fas far fab fal fad fw sm lg xs xl bi mdi material icons glyphicon ion la svg i el com www http
    https html htm php js css png jpg jpeg gif webp index assets asset placeholder base dir flex items
    center justify between around start end text font medium semibold bold px py mx my mt mb ml mr pt pb pl pr
    w h bg border shadow hover focus grid col cols row gap space inline block relative absolute fixed z
    overflow cursor pointer transition duration ease opacity container wrapper inner outer d md none auto
    full screen""".split()
)
NAMELESS_DISCOUNT = 0.8
NAMED_ATTRIBUTE_DISCOUNT = 0.5
# Role categories that can stand in for one another when a page uses generic clickables.
CLICKABLE = frozenset("button link tab menuitem option item card icon arrow image switch generic label menu "
                      "columnheader".split())
FIELDS = frozenset("textbox combobox".split())
CHECKS = frozenset("checkbox radio switch".split())
# A described role is satisfied exactly by any of these candidate roles.
SATISFIES = {
    "button": {"button"}, "link": {"link"}, "tab": {"tab"},
    "icon": {"icon", "image"}, "image": {"image", "icon"}, "arrow": {"arrow", "icon"},
    "textbox": {"textbox"}, "checkbox": {"checkbox"}, "radio": {"radio"}, "combobox": {"combobox"},
    "menu": {"menu", "menuitem", "button", "combobox"}, "menuitem": {"menuitem", "link", "option"},
    "option": {"option", "menuitem", "radio"}, "card": {"card", "item"}, "item": {"item", "card", "option", "menuitem"},
    "switch": {"switch", "checkbox"}, "slider": {"slider"}, "columnheader": {"columnheader"},
}
CLASS_ROLES = {
    "btn": "button", "button": "button", "tab": "tab", "tabs": "tab", "card": "card", "link": "link",
    "icon": "icon", "menu": "menuitem", "nav": "menuitem", "dropdown": "combobox", "toggle": "switch",
    "switch": "switch", "item": "item", "arrow": "arrow", "chevron": "arrow", "caret": "arrow", "next": "arrow",
    "prev": "arrow", "logo": "image", "thumb": "image", "thumbnail": "image", "checkbox": "checkbox",
    "check": "checkbox", "radio": "radio", "tile": "card", "product": "card", "slider": "slider",
}
INPUT_ROLES = {"submit": "button", "button": "button", "reset": "button", "image": "button",
               "checkbox": "checkbox", "radio": "radio", "range": "slider"}
ARIA_ROLES = {"searchbox": "textbox", "spinbutton": "textbox", "menuitemcheckbox": "menuitem",
              "menuitemradio": "menuitem", "treeitem": "item", "gridcell": "item", "listitem": "item",
              "img": "image", "listbox": "combobox"}
REGION_TOKENS = {
    "header": {"header", "banner", "masthead", "topbar", "top", "navbar"},
    "nav": {"nav", "navigation", "navbar", "menubar", "menu", "topnav"},
    "footer": {"footer", "contentinfo", "bottom"},
    "sidebar": {"aside", "sidebar", "complementary", "side", "sidenav", "drawer"},
}


@dataclass
class Scored:
    """One candidate with its feature scores."""

    index: int
    cand: dict
    parts: dict = field(default_factory=dict)
    score: float = 0.0

    @property
    def area(self) -> float:
        box = self.cand["box"]
        return box[2] * box[3]

    def summary(self) -> dict:
        c = self.cand
        text = c.get("aria_label") or c.get("labelledby") or c.get("label") or c.get("text") or c.get("alt") \
            or c.get("title") or c.get("placeholder") or c.get("value") or ""
        return {"index": self.index, "tag": c["tag"], "text": text[:120], "id": c.get("id", ""),
                "box": [round(v, 1) for v in c["box"]], "score": round(self.score, 4),
                "parts": {k: round(v, 4) for k, v in self.parts.items()}}


# --------------------------------------------------------------------------- features


def name_fields(cand: dict) -> list[str]:
    """Every string that can name the candidate (accessible name sources and inner text)."""
    keys = ("aria_label", "labelledby", "label", "text", "alt", "svg_title", "title", "placeholder", "value")
    return [cand[k] for k in keys if cand.get(k)]


# iwr-det-3 (attribute_labels): a label held in an attribute counts this much of a visible name.
ATTRIBUTE_LABEL_DISCOUNT = 0.9
# iwr-det-3 (picture_nouns): "the photo" said of an element showing an image matches like its name.
PICTURE_MATCH = 1.0
# iwr-det-13 (swatch_nouns): "the colour box" said of an element showing a colour sample, as a hue matches a mark
SWATCH_MATCH = LOOK_MATCH


def shows_picture(cand: dict) -> bool:
    """The candidate shows an image: an img / picture / svg, one inside it, or a CSS background image."""
    return bool(cand.get("images") or cand.get("bg_image") or cand["tag"] in ("img", "picture", "svg"))


def attribute_tokens(cand: dict) -> frozenset[str]:
    """Tokens of id, class, name, type, href/src basename and icon class names (read once per candidate)."""
    if "_attributes" not in cand:
        cand["_attributes"] = _attribute_tokens(cand)
    return cand["_attributes"]


def _attribute_tokens(cand: dict) -> frozenset[str]:
    raw = [cand.get("id"), cand.get("cls"), cand.get("name"), cand.get("type"), *cand.get("icons", [])]
    for url in (cand.get("href"), cand.get("src")):
        if url and not url.startswith(("javascript:", "data:")):
            path, _, fragment = url.partition("#")
            raw += [PurePosixPath(path.split("?")[0]).stem, fragment]
    tokens = set()
    for value in raw:
        tokens.update(t for t in split_identifier(value) if len(t) > 1 and t not in NOISE_TOKENS)
    return frozenset(tokens)


def candidate_roles(cand: dict) -> set[str]:
    """Role categories the candidate can play (implicit ARIA role, explicit role, class hints)."""
    tag, explicit = cand["tag"], cand.get("role", "")
    roles = set()
    if explicit:
        roles.add(ARIA_ROLES.get(explicit, explicit))
    roles |= _tag_roles(cand, tag)
    for token in split_identifier(cand.get("cls")):
        if token in CLASS_ROLES:
            roles.add(CLASS_ROLES[token])
    if cand.get("images") or cand.get("bg_image"):
        roles.add("image" if len(cand.get("text", "")) > 2 or cand.get("bg_image") else "icon")
    if cand.get("icons") and len(cand.get("text", "")) <= 2:
        roles.add("icon")
    if cand.get("drawn"):  # iwr-det-7 (drawn_glyphs): it draws an icon in CSS beside whatever it says
        roles.add("icon")
    if cand.get("generated"):  # iwr-det-15 (generated_glyphs): CSS writes a symbol in it beside whatever it says
        roles.add("icon")
    if not roles:
        roles.add("generic")
    # iwr-det-6 (header_nouns): a th is what "the column header" names. Added after the generic fallback, so
    # a th keeps the roles earlier versions gave it and no role score of theirs changes.
    if tag == "th":
        roles.add("columnheader")
    if "heading" in cand.get("reasons", ()):  # iwr-det-15 (heading_targets): collected because a heading is named
        roles.add("heading")
    return roles


def _tag_roles(cand: dict, tag: str) -> set[str]:
    if tag == "a":
        return {"link"}
    if tag in ("button", "summary"):
        return {"button"}
    if tag == "input":
        return {INPUT_ROLES.get(cand.get("type") or "text", "textbox")}
    if tag == "select":
        return {"combobox"}
    if tag == "textarea" or "contenteditable" in cand.get("reasons", []):
        return {"textbox"}
    if tag == "img":
        return {"image"}
    if tag == "label":
        return {"label"}
    if tag == "li":
        return {"item"}
    return set()


# --------------------------------------------------------------------------- part scores


def text_score(desc: Description, cand: dict, params: TargetingParams) -> float:
    """Best match of the description's quotes, label phrases or content words to a name field.

    Attribute tokens ("sidebarToggle", "fa-bell") also count as a name, at a discount: fully for
    an element whose own name is empty or a badge ("3+"), which a model shown the page would
    read by its icon, less for a named element.
    """
    fields = name_fields(cand)
    caption = cand.get("caption") if params.caption_labels else ""
    if caption:
        fields.append(caption)  # iwr-det-15: the words printed right before an unlabelled field name it
    elif params.check_verbs and _unlabelled_check(cand):
        fields.append(cand["container"])  # the text beside a checkbox is its label to a reader
    best = 0.0
    for value in fields:
        best = max(best, _value_score(desc, value, params))
        if best >= 1.0:
            return 1.0
    iconic = max((len(v.strip()) for v in fields), default=0) <= 3
    discount = NAMELESS_DISCOUNT if iconic else NAMED_ATTRIBUTE_DISCOUNT
    best = max(best, discount * _attribute_text_score(desc, attribute_tokens(cand), params))
    if params.attribute_labels and best < 1.0:
        best = max(best, ATTRIBUTE_LABEL_DISCOUNT * _attribute_label_score(desc, cand, params))
    if params.glyph_words:
        best = max(best, glyph_score(desc.glyphs, desc.concepts, cand, attribute_tokens(cand), params.glyph_shapes,
                                       params.glyph_labels))
    if params.picture_nouns and desc.picture and shows_picture(cand):
        if _only_picture_words(desc, params):
            best = max(best, PICTURE_MATCH)
        elif params.depicted_pictures and not desc.quotes:
            best = max(best, PICTURE_MATCH * WITH_WORDS)
    if params.colour_words and desc.colours:
        best = max(best, look_score(desc, cand))
    if params.swatch_nouns and desc.swatch and cand.get("swatch") and not desc.quotes:
        best = max(best, SWATCH_MATCH * (WITH_WORDS if desc.content else 1.0))
    return best


def _unlabelled_check(cand: dict) -> bool:
    """A checkbox or radio button without a label of its own, in a block of a few words."""
    return (cand["tag"] == "input" and cand.get("type") in ("checkbox", "radio") and not cand.get("label")
            and not cand.get("aria_label") and 0 < len(cand.get("container") or "") <= 40)


def _attribute_label_score(desc: Description, cand: dict, params: TargetingParams) -> float:
    """The description's quotes and phrases against labels held in data-* attributes and SVG text."""
    return max((_value_score(desc, value, params) for value in cand.get("data_labels", [])), default=0.0)


def _value_score(desc: Description, value: str, params: TargetingParams) -> float:
    """The description's quotes, labels and content phrase against one text value of a candidate."""
    norm = normalize(value)
    value_words = content_words(value)
    best = 0.0
    for q in desc.quotes:
        best = max(best, quote_match(normalize(q), norm, params.quote_word_bounds))
    for label in desc.labels:
        best = max(best, phrase_match(label, value_words, norm, params))
    if desc.content:
        best = max(best, phrase_match(desc.content, value_words, norm, params))
    return best


def _only_picture_words(desc: Description, params: TargetingParams) -> bool:
    """The description names the picture and nothing else the element would have to say. With
    ``picture_anchor_words`` (iwr-det-7) a word the description also places the picture by ("the
    theme thumbnail under Theme") is said of its surroundings, not by the picture."""
    around = {w for a in desc.anchors for w in content_words(a)} if params.picture_anchor_words else set()
    return not desc.quotes and all(w in PICTURE_WORDS or w in around for w in desc.content)


def _attribute_text_score(desc: Description, tokens: set[str], params: TargetingParams) -> float:
    """Share of a phrase's words found among the attribute tokens (synonyms folded), best phrase."""
    if not tokens:
        return 0.0
    pool = {canonical(t) for t in tokens}
    phrases = [label_words(q) for q in desc.quotes] + desc.labels + ([desc.content] if desc.content else [])
    best = 0.0
    for phrase in phrases:
        wanted = {canonical(w) for w in phrase if len(w) > 1}
        if wanted:
            best = max(best, sum(best_token_match(w, pool, params.token_match) for w in wanted) / len(wanted))
    return best


def quote_match(quote: str, name: str, word_bounds: bool = False) -> float:
    """1 for an exact name; high when the quote is a whole-word part of a short name; else fuzzy.

    A quote longer than the name is compared word by word: "Mark all as complete" must not
    match a "Completed" link just because that word occurs in it. With ``word_bounds`` (iwr-det-6)
    the partial match is taken over runs of whole words of the name: 'Age' is not found in "Pages"
    (iwr-det-5 scored that 0.82, above the acceptance threshold), 'Add to cart' still in "Add to cart!".
    """
    quote, name = quote.strip(" .,:;!?"), name.strip(" .,:;!?")
    if not quote or not name:
        return 0.0
    if quote == name:
        return 1.0
    coverage = min(len(quote), len(name)) / max(len(quote), len(name))
    if _whole_word_in(quote, name):
        return 0.6 + 0.4 * math.sqrt(coverage)
    ratio = fuzz.ratio(quote, name) / 100.0
    if len(quote) > len(name):
        return 0.9 * max(ratio, token_f1(content_words(quote), content_words(name)))
    if len(quote) < 3:
        partial = 0.0
    elif word_bounds:
        partial = _word_run_ratio(quote, name) * (0.6 + 0.4 * math.sqrt(coverage))
    else:
        partial = fuzz.partial_ratio(quote, name) / 100.0 * (0.6 + 0.4 * math.sqrt(coverage))
    return 0.9 * max(ratio, partial)


def _word_run_ratio(quote: str, name: str) -> float:
    """Best fuzzy ratio of the quote against a run of as many whole words of the name as it has."""
    size, words = len(quote.split()), name.split()
    if len(words) <= size:
        return fuzz.ratio(quote, name) / 100.0
    return max(fuzz.ratio(quote, " ".join(words[i:i + size])) for i in range(len(words) - size + 1)) / 100.0


def phrase_match(phrase: list[str], value_words: list[str], norm: str, params: TargetingParams) -> float:
    """Soft token F1 between description words and a name, or a fuzzy partial string match."""
    if not phrase or not value_words:
        return 0.0
    f1 = token_f1(phrase, value_words, params.token_match)
    joined = " ".join(phrase)
    if len(joined) < 3 or len(norm) < 3:
        return f1
    coverage = min(len(joined), len(norm)) / max(len(joined), len(norm))
    partial = fuzz.partial_ratio(joined, norm) / 100.0 * (0.6 + 0.4 * math.sqrt(coverage))
    return max(f1, 0.9 * partial if partial >= 0.8 else 0.0)


def _whole_word_in(quote: str, name: str) -> bool:
    start = name.find(quote)
    while start >= 0:
        end = start + len(quote)
        before_ok = start == 0 or not name[start - 1].isalnum()
        after_ok = end == len(name) or not name[end].isalnum()
        if before_ok and after_ok:
            return True
        start = name.find(quote, start + 1)
    return False


def attribute_score(desc: Description, tokens: set[str], params: TargetingParams) -> float:
    """Share of the description's words (up to two) found among the attribute tokens, synonyms folded."""
    wanted = set(desc.content) | set(desc.role_words) | set(desc.appearance)
    for q in desc.quotes:
        wanted |= set(label_words(q))
    wanted = {canonical(w) for w in wanted if len(w) > 1}
    if not wanted or not tokens:
        return 0.0
    pool = {canonical(t) for t in tokens}
    matched = sum(best_token_match(w, pool, params.token_match) for w in wanted)
    return min(1.0, matched / min(len(wanted), 2))


def role_score(desc: Description, roles: set[str]) -> float:
    """1 when a described role is played exactly, 0.7 by a stand-in of the same family, 0 otherwise."""
    if not desc.roles:
        return 0.5
    best = 0.0
    for wanted in desc.roles:
        if roles & SATISFIES.get(wanted, {wanted}):
            return 1.0
        for family in (CLICKABLE, FIELDS, CHECKS):
            if wanted in family and roles & family:
                best = max(best, 0.7)
    return best


def region_score(region: str, cand: dict, geometry: dict) -> float:
    """How well the candidate sits in a named region: landmark ancestors first, else geometry."""
    nx, ny, ny_doc = geometry["nx"], geometry["ny"], geometry["ny_doc"]
    if region in REGION_TOKENS:
        context = set()
        for value in cand.get("context", []):
            context.update(split_identifier(value))
        if context & REGION_TOKENS[region]:
            return 1.0
        fallback = {"header": 1 - min(1.0, ny * 4), "nav": 1 - min(1.0, ny * 4),
                    "footer": max(0.0, (ny_doc - 0.8) * 5), "sidebar": 1 - min(1.0, 2 * min(nx, 1 - nx) * 4)}
        return 0.6 * max(0.0, fallback[region])
    return {"top": 1 - ny, "bottom": max(ny, ny_doc), "left": 1 - nx, "right": nx,
            "middle": 1 - abs(nx - 0.5) - abs(ny - 0.5)}[region]


def geometry_of(cand: dict, page: dict) -> dict:
    """Candidate centre as fractions of the viewport (clipped) and of the document height."""
    x, y, w, h = cand["box"]
    vw, vh = page["viewport"]
    doc_h = max(page["document"][1], vh, 1)
    cx, cy = x + w / 2, y + h / 2
    clip = lambda v: min(1.0, max(0.0, v))  # noqa: E731
    return {"nx": clip(cx / max(vw, 1)), "ny": clip(cy / max(vh, 1)),
            "ny_doc": clip((cy + page["scroll"][1]) / doc_h), "cx": cx + page["scroll"][0],
            "cy": cy + page["scroll"][1]}


# --------------------------------------------------------------------------- all together


def score_candidates(desc: Description, page: dict, params: TargetingParams, focus_bonus: bool = False) -> list[Scored]:
    """Every candidate scored, best first (ties: smaller area, then document order)."""
    scored = [_score_one(desc, i, cand, page, params, focus_bonus) for i, cand in enumerate(page["candidates"])]
    containers = _container_members(desc, scored, params) if params.container_anchors and desc.anchors and scored \
        else []
    within = set.intersection(*containers) if params.contained_look_alikes and containers else None
    sequence = [r for r in desc.relations if r.kind in SEQUENCE_KINDS] if params.sequence_relations else []
    if sequence:
        _apply_sequence(desc, sequence[0], scored, page, params, within)
    elif params.grid_ordinals and (desc.grid_row or desc.grid_col):
        _apply_grid(desc, scored, params, within)
    elif desc.ordinal is not None:
        _apply_ordinal(desc, scored, params, within)
    elif params.edge_positions and desc.edge:
        _apply_edge(desc, scored, params, within)
    for s in scored:
        s.score = _combine(s.parts, params) - (params.disabled_penalty if s.cand.get("disabled") else 0.0)
        if focus_bonus and s.cand.get("focused") and not desc.has_text_cue:
            s.score += params.type_focus_bonus
    if params.repeat_targets and desc.again:
        _apply_repeat(scored, kinds=params.repeat_kinds)
    for inside in containers:
        for s in scored:
            if id(s) not in inside:
                s.score -= OUTSIDE_CONTAINER_PENALTY
    if params.inner_namesakes:
        _inner_namesakes_first(scored, params)
    return sorted(scored, key=lambda s: (-round(s.score, 6), s.area, s.cand["order"]))


# iwr-det-13 (inner_namesakes): how far below its inner namesake an outer one is ranked
NAMESAKE_STEP = 1e-4


def _inner_namesakes_first(scored: list[Scored], params: TargetingParams) -> None:
    """"Click 'more' under the palette": a picker's panel listens for clicks and its only words are its 'more'
    button's, so the panel says 'more' too, and its larger box sat nearer the anchor. A click on the button reaches
    the panel as well; the button is the control named. A candidate whose name is that of a candidate inside its
    box is ranked just below the best such inner one, when that one would be accepted on its own."""
    by_name: dict[str, list[Scored]] = {}
    for s in scored:
        name = normalize(_own_name(s.cand))
        if name:
            by_name.setdefault(name, []).append(s)
    for group in by_name.values():
        if len(group) < 2:
            continue
        for outer in group:
            inner = [s for s in group
                     if s is not outer and s.area < outer.area and _within(s.cand["box"], outer.cand["box"])]
            best = max(inner, key=lambda s: s.score, default=None)
            if best is not None and best.score >= params.accept_threshold and outer.score >= best.score:
                outer.score = best.score - NAMESAKE_STEP


def _own_name(cand: dict) -> str:
    return cand.get("aria_label") or cand.get("labelledby") or cand.get("label") or cand.get("text") or ""


def _within(inner: list[float], outer: list[float], slack: float = 1.0) -> bool:
    """The box ``inner`` lies inside ``outer`` (both [x, y, width, height]), to a pixel."""
    (x, y, w, h), (ox, oy, ow, oh) = inner, outer
    return x >= ox - slack and y >= oy - slack and x + w <= ox + ow + slack and y + h <= oy + oh + slack


def _score_one(desc, index, cand, page, params, focus_bonus) -> Scored:
    geometry = geometry_of(cand, page)
    cand["_geometry"] = geometry
    parts = {
        "text": text_score(desc, cand, params) if desc.has_text_cue or _shown_cue(desc, params) else 0.5,
        "attributes": attribute_score(desc, attribute_tokens(cand), params),
        "role": role_score(desc, candidate_roles(cand)),
        "position": position_score(desc, cand, geometry, params, page.get("anchors")),
    }
    return Scored(index, cand, parts)


def _shown_cue(desc: Description, params: TargetingParams) -> bool:
    """iwr-det-3: a glyph or a picture noun is a text cue too ("the » arrow", "the first photo")."""
    return bool(params.glyph_words and (desc.glyphs or desc.concepts) or params.picture_nouns and desc.picture
                or params.colour_words and desc.colours or params.swatch_nouns and desc.swatch)


def position_score(desc: Description, cand: dict, geometry: dict, params: TargetingParams,
                   anchors: list | None = None) -> float:
    """Mean of the region cues, the relative position cues whose anchor is on the page ("to the
    left of the input"), and the enclosing block's text when it names what the element does not."""
    cues = [region_score(r, cand, geometry) for r in desc.regions]
    pairs = list(zip(desc.relations, anchors or [], strict=False))
    own_label = _draws_named_icon(desc, cand, params)
    i = 0
    while i < len(pairs):
        relation, boxes = pairs[i]
        if relation.kind in SEQUENCE_KINDS:  # placed by reading order (_apply_sequence), not by geometry
            i += 1
            continue
        if relation.kind == "between" and i + 1 < len(pairs) and pairs[i + 1][0].kind == "between":
            cue = between_score(cand["box"], (boxes, pairs[i + 1][1]), params)  # the two sides, read together
            i += 2
        else:
            cue = relation_score(relation.kind, cand["box"], boxes, params, own_label=own_label)
            i += 1
        if cue is not None:
            cues.append(cue)
    context = context_score(desc, cand, params, resolved_anchors(desc, anchors))
    if context is not None:
        cues.append(context)
    return _mean(cues) if cues else 0.5


def _draws_named_icon(desc: Description, cand: dict, params: TargetingParams) -> bool:
    """iwr-det-7 (own_label_icons): the description names an icon or glyph and the candidate shows one."""
    return (params.own_label_icons and bool(desc.glyphs or desc.concepts or "icon" in desc.roles)
            and bool(cand.get("drawn") or cand.get("icons") or cand.get("images") or cand.get("generated")))


def context_score(desc: Description, cand: dict, params: TargetingParams,
                  placed: set[str] = frozenset()) -> float | None:
    """Anchors ("for the Pear") and unexplained description words found in the text around the
    element (not in its own name or attributes) raise the score; None when nothing to check.
    Anchors already ``placed`` by a relation's geometry ("left of 'Buy milk'") are not counted twice."""
    own = set()
    for value in name_fields(cand):
        own.update(content_words(value))
    explained = own | attribute_tokens(cand)
    extra = [w for w in desc.content if not best_token_match(w, explained, params.token_match)]
    items = [content_words(a) for a in desc.anchors if a not in placed] + [[w] for w in extra]
    items = [item for item in items if item]
    container = content_words(cand.get("container"))
    if params.grid_ordinals:  # iwr-det-3: "in the portfolio grid" also names the block by its id or class
        container = container + [t for value in cand.get("context", []) for t in split_identifier(value)
                                 if len(t) > 2 and t not in NOISE_TOKENS]
    if not items or not container:
        return None
    found = sum(1 for item in items if _all_in(item, container, params) and not _all_in(item, own, params))
    return 0.5 + 0.5 * min(1.0, found / min(len(items), 2))


def _all_in(words: list[str], pool, params: TargetingParams) -> bool:
    return bool(pool) and all(best_token_match(w, pool, params.token_match) for w in words)


def _combine(parts: dict, params: TargetingParams) -> float:
    return (params.w_text * parts["text"] + params.w_attributes * parts["attributes"]
            + params.w_role * parts["role"] + params.w_position * parts["position"])


# iwr-det-10 (repeat_targets): what "the same icon again" adds to the element the previous action used
REPEAT_BONUS = 0.25


def _apply_repeat(scored: list[Scored], kinds: bool = False) -> None:
    """"Tap the same menu icon again, now pushed to the right of the panel": the element the previous
    action used, still shown, is the target when the description's words and role fit it as well as
    they fit the best match ("click the menu icon again" after a link in that menu is no repeat)."""
    previous = next((s for s in scored if s.cand.get("previous")), None)
    if previous is None or previous.parts["role"] < 0.7:
        return
    if kinds and previous.parts["role"] < max(s.parts["role"] for s in scored):
        return  # iwr-det-15 (repeat_kinds): "the three-bars button again" after a link: an earlier button is meant
    if previous.parts["text"] < max(s.parts["text"] for s in scored) - 0.05:
        return
    previous.score += REPEAT_BONUS


# iwr-det-10 (container_anchors): what a candidate outside the container the description names loses
OUTSIDE_CONTAINER_PENALTY = 0.1


def _container_members(desc: Description, scored: list[Scored], params: TargetingParams) -> list[set[int]]:
    """"Tap 'Cancel' in the dialog": the dialog's button says 'Cancel'; an icon far below, titled
    '.ui-icon-cancel', matched the word in its title and its class name too and won. An anchor word no relation
    places ("in the dialog", "in the toolbar") names a container when some candidates lie inside an element
    whose tag, role, id or class says it; where the best match by words is among those, the candidates outside
    lose OUTSIDE_CONTAINER_PENALTY. A word no ancestor says, or said around every candidate, changes nothing.
    Returns, for each word that names a container, the ids of the candidates inside it (each costs the
    candidates outside it the penalty)."""
    placed = {w for relation in desc.relations for w in relation.named}
    top_text = max(s.parts["text"] for s in scored)
    members = []
    for word in desc.anchors:
        if word in placed or len(word) < 3 or word in NOISE_TOKENS:
            continue
        inside = [s for s in scored if best_token_match(word, _ancestor_tokens(s.cand), params.token_match)]
        if not inside or len(inside) == len(scored):
            continue
        if max(s.parts["text"] for s in inside) < top_text - 0.05:
            continue
        members.append({id(s) for s in inside})
    return members


def _ancestor_tokens(cand: dict) -> set[str]:
    if "_ancestors" not in cand:
        cand["_ancestors"] = {t for value in cand.get("context", []) for t in split_identifier(value) if len(t) > 2}
    return cand["_ancestors"]


def _apply_ordinal(desc: Description, scored: list[Scored], params: TargetingParams, within=None) -> None:
    """"the second Add button": the n-th, in reading order, of the candidates that match best otherwise."""
    if not scored:
        return
    pick = _nth(_ordered_look_alikes(desc, scored, params, within), desc.ordinal)
    if pick is None and desc.ordinal > 0 and params.placed_look_alikes and params.ordinals_past_placed:
        # iwr-det-15: "the second 'Dropdown', below 'Fixed bottom'": the relation places one 'Dropdown', so "second"
        # counts the page's look-alikes and the relation only says where that one is
        unplaced = dataclasses.replace(params, placed_look_alikes=False)
        pick = _nth(_ordered_look_alikes(desc, scored, unplaced, within), desc.ordinal)
    for s in scored:
        ordinal = 1.0 if s is pick or params.twin_look_alikes and pick is not None and _twins(s, pick) else 0.0
        s.parts["position"] = ordinal if not desc.regions else (ordinal + s.parts["position"]) / 2


def _ordered_look_alikes(desc: Description, scored: list[Scored], params: TargetingParams, within) -> list[Scored]:
    """The look-alikes an ordinal counts, in reading order, each box once under ``twin_look_alikes``."""
    group = reading_order(_look_alikes(desc, scored, params, within=within))
    return _one_per_box(group) if params.twin_look_alikes else group


def _one_per_box(group: list[Scored]) -> list[Scored]:
    """iwr-det-14 (twin_look_alikes): look-alikes drawn in one box (a pager's list item and the button filling it) are
    one thing on the screen, counted once (the first in reading order stands for them)."""
    out: list[Scored] = []
    for s in group:
        if not any(_twins(s, kept) for kept in out):
            out.append(s)
    return out


def _twins(a: Scored, b: Scored) -> bool:
    """One box within the other and of nearly its size (within 2 px each way): one element on the screen."""
    (ax, ay, aw, ah), (bx, by, bw, bh) = a.cand["box"], b.cand["box"]
    return all(abs(u - v) <= TWIN_PX for u, v in ((ax, bx), (ay, by), (ax + aw, bx + bw), (ay + ah, by + bh)))


# iwr-det-14 (twin_look_alikes): how far apart two boxes' edges may lie for the boxes to be one on the screen
TWIN_PX = 2.0


def _apply_sequence(desc: Description, relation, scored: list[Scored], page: dict, params: TargetingParams,
                    within=None) -> None:
    """"the dark button right after the pink dot": the anchor is the element its own words describe best
    (scored like a target, and only if it would be accepted as one); the target is the look-alike that
    comes next after it (or last before it) in reading order. Like an ordinal, this decides the
    position part (0 for all when no look-alike is on that side). An anchor not on the page leaves the
    cue unused, as a relation's missing anchor does."""
    if not scored:
        return
    ranked = score_candidates(parse_description(relation.phrase, params=params), page, params)
    if not ranked or ranked[0].score < params.accept_threshold:
        return
    anchor = ranked[0].cand
    if params.label_anchors:
        at = desc.relations.index(relation)
        anchor = _printed_label(anchor, relation, (page.get("anchors") or [])[at:at + 1], page) or anchor
    group = [s for s in _look_alikes(desc, scored, params, within=within) if s.cand is not anchor]
    ordered = reading_order([*group, Scored(-1, anchor)])
    at = next(i for i, s in enumerate(ordered) if s.cand is anchor)
    side = ordered[at + 1:] if relation.kind == "after" else ordered[:at][::-1]
    pick = side[0] if side else None
    for s in scored:
        s.parts["position"] = 1.0 if s is pick else 0.0


FIELD_TAGS = frozenset({"input", "textarea", "select"})


def _printed_label(anchor: dict, relation, boxes: list, page: dict) -> dict | None:
    """iwr-det-17 (label_anchors): "the box after 'Type an email:'": when the element the anchor's words find best is
    a field those words name only through its label, the anchor is where the label prints them (the printed text
    nearest that field, as the page's anchor search found it), and the field itself may be the one after it."""
    printed = boxes[0] if boxes else []
    if anchor.get("tag") not in FIELD_TAGS or not printed:
        return None
    said = normalize(" ".join(relation.quotes or relation.words))
    own = normalize(" ".join(str(anchor.get(key) or "") for key in ("aria_label", "labelledby", "text")))
    if not said or said not in normalize(anchor.get("label") or "") or said in own:
        return None
    x, y, w, h = anchor["box"]
    box = min(printed, key=lambda b: (b[0] + b[2] / 2 - x - w / 2) ** 2 + (b[1] + b[3] / 2 - y - h / 2) ** 2)
    label = {"box": list(box), "order": anchor["order"]}
    label["_geometry"] = geometry_of(label, page)
    return label


# iwr-det-6 (edge_positions): the extreme look-alike that way: smallest or largest centre along the axis,
# then the other axis in reading order ("the far left" of a two-row toolbar is its top-left control).
_EDGE_KEYS = {"left": lambda g: (g["cx"], g["cy"]), "right": lambda g: (-g["cx"], g["cy"]),
              "top": lambda g: (g["cy"], g["cx"]), "bottom": lambda g: (-g["cy"], g["cx"])}


def _apply_edge(desc: Description, scored: list[Scored], params: TargetingParams, within=None) -> None:
    """"the small button at the far left of the toolbar": among the candidates that match best otherwise,
    the one furthest that way; like an ordinal, it decides the position part (halved with regions)."""
    if not scored:
        return
    group = _look_alikes(desc, scored, params, within=within)
    key = _EDGE_KEYS[desc.edge]
    pick = min(group, key=lambda s: (*key(s.cand["_geometry"]), s.cand["order"])) if group else None
    for s in scored:
        edge = 1.0 if s is pick else 0.0
        s.parts["position"] = edge if not desc.regions else (edge + s.parts["position"]) / 2


def _apply_grid(desc: Description, scored: list[Scored], params: TargetingParams, within=None) -> None:
    """"the middle tile of the second row": row, then column (an ordinal, "middle", "left" / "right"
    or a column ordinal) among the look-alikes that match best otherwise, by their laid-out rows."""
    if not scored:
        return
    group = _look_alikes(desc, scored, params, regions=False, within=within)
    rows = laid_out_rows(group)
    if desc.grid_row:
        rows = [_nth(rows, desc.grid_row)] if _nth(rows, desc.grid_row) else []
    # iwr-det-13 (named_grid_rows): "the bright red square, the second one in the second row of colours" counts the
    # rows of the colours, not of the red squares
    row = _kind_row(desc, scored, group, within, majority=True) if params.named_grid_rows and desc.grid_of and group \
        else None
    pick = None
    if rows and not row:
        pick = _pick_in_rows(desc, rows, params)
    elif (params.kind_rows or row) and desc.grid_row and group:
        row = row or _kind_row(desc, scored, group, within)
        if row and not (desc.grid_col or desc.ordinal is not None):
            inside = {id(s) for s in row}  # the row is placed; the words choose in it ("the 14 in the third row")
            for s in scored:
                s.parts["position"] = 1.0 if id(s) in inside else 0.0
            return
        pick = _pick_in_rows(desc, [row], params) if row else None
    for s in scored:
        s.parts["position"] = 1.0 if s is pick else 0.0


def _kind_row(desc: Description, scored: list[Scored], group: list[Scored], within=None,
              majority: bool = False) -> list[Scored] | None:
    """iwr-det-12 (``kind_rows``): "14 in the third row of the calendar": a day's number names it alone, so its
    look-alikes by words are itself and the third row is not among them. The rows are then those of the elements
    of its kind: the best match's tag, a class it shares (or none on either), a like size, inside the container
    the description names. None when that grid has no such row. With ``majority`` (iwr-det-13's
    ``named_grid_rows``), the kind is the one most of the best matches by words share, the first of them in the
    document standing for it."""
    best = max(group, key=lambda s: (s.parts["text"], -s.cand["order"]))
    if majority:  # iwr-det-13: the kind most of the best matches share (a red 'cancel' link ties with the red squares)
        top = [s for s in group if s.parts["text"] >= best.parts["text"] - 1e-9]
        kinds = Counter((s.cand["tag"], s.cand.get("cls") or "") for s in top)
        best = next(s for s in top if (s.cand["tag"], s.cand.get("cls") or "") == kinds.most_common(1)[0][0])
    classes = set((best.cand.get("cls") or "").split())
    area = best.area
    kind = [s for s in scored
            if s.cand["tag"] == best.cand["tag"] and (within is None or id(s) in within)
            and (classes & set((s.cand.get("cls") or "").split()) if classes else not s.cand.get("cls"))
            and area / LIKE_SIZE <= s.area <= area * LIKE_SIZE]
    return _nth(laid_out_rows(kind), desc.grid_row)


def _pick_in_rows(desc: Description, rows: list[list[Scored]], params: TargetingParams) -> Scored | None:
    if desc.grid_col:
        column = [_nth(row, desc.grid_col) for row in rows]
        column = [s for s in column if s is not None]
        return _nth(column, desc.ordinal or 1)
    row = rows[0] if len(rows) == 1 else [s for r in rows for s in r]
    if desc.ordinal is not None:
        return _nth(row, desc.ordinal)
    if "middle" in desc.regions:
        return row[(len(row) - 1) // 2] if len(row) % 2 else row[len(row) // 2 - 1]
    if "right" in desc.regions or params.row_edges and desc.edge == "right":
        return row[-1]  # iwr-det-9 (row_edges): "the tab at the right end of the second row"
    return row[0]


def _nth(items: list, n: int):
    if n == -1:
        return items[-1] if items else None
    return items[n - 1] if 0 < n <= len(items) else None


def _look_alikes(desc: Description, scored: list[Scored], params: TargetingParams, regions: bool = True,
                 within: set[int] | None = None) -> list:
    """The candidates that match best otherwise, among which an ordinal, an edge, a grid row or a sequence picks;
    ``within`` (iwr-det-11, ``contained_look_alikes``): only those inside the container the description names
    ("the bottom row of the palette" counts the palette's rows, not the page's)."""
    if within:
        scored = [s for s in scored if id(s) in within] or scored
    top_text = max(s.parts["text"] for s in scored)
    top_role = max(s.parts["role"] for s in scored)
    top_pos = max(s.parts["position"] for s in scored)
    placed = regions and desc.regions
    group = [s for s in scored if s.parts["text"] >= top_text - params.ordinal_text_margin
             and s.parts["role"] >= top_role and (not placed or s.parts["position"] >= 0.99 * top_pos)]
    if params.placed_look_alikes and not placed and _placed_by_relation(desc):
        # iwr-det-7: "the second picture under Theme" counts the pictures under Theme, not the page's
        group = [s for s in group if s.parts["position"] >= PLACED_SHARE * top_pos] or group
    if params.one_kind_look_alikes and group:
        group = _one_kind(group, params)
    return group


def _one_kind(group: list[Scored], params: TargetingParams) -> list[Scored]:
    """iwr-det-9: "the card with the pink top edge in the top row": the pink filter button above the grid
    shows the hue too, but look-alikes are elements of one kind. They keep the tag of the best match by
    everything but its place (its words, attributes and role); when the best are of several tags, all stay."""
    unplaced = {id(s): _combine({**s.parts, "position": 0.0}, params) for s in group}
    best = max(unplaced.values())
    tags = {s.cand["tag"] for s in group if unplaced[id(s)] >= best - 1e-9}
    if len(tags) == 1:
        group = [s for s in group if s.cand["tag"] in tags]
    return _like_sized(group)


# iwr-det-9 (one_kind_look_alikes): look-alikes are of a like size, their area within this factor of the median's
# (a tab twice as wide as the next is a look-alike; a 26 px scroll hint under 222 px photos is not).
LIKE_SIZE = 4.0


def _like_sized(group: list[Scored]) -> list[Scored]:
    """"The photo in the middle of the bottom row": a photo grid's bottom row is its photos', not that of the
    small picture (a scroll hint drawn by an image) below the grid. With three or more look-alikes, those whose
    area is far from the median's are left out (when that leaves any)."""
    if len(group) < 3:
        return group
    areas = sorted(s.area for s in group)
    median = areas[len(areas) // 2]
    if median <= 0:
        return group
    return [s for s in group if median / LIKE_SIZE <= s.area <= median * LIKE_SIZE] or group


# iwr-det-7 (placed_look_alikes): a look-alike counts as placed by the description's relation when its
# position part reaches this share of the best one's (the farther of two thumbnails under a heading
# scores lower on proximity than the nearer, yet both sit under it).
PLACED_SHARE = 0.5


def _placed_by_relation(desc: Description) -> bool:
    return any(r.kind not in SEQUENCE_KINDS for r in desc.relations)


def laid_out_rows(items: list[Scored]) -> list[list[Scored]]:
    """Rows of a grid, top to bottom, each left to right (centres within half a height share a row)."""
    by_y = sorted(items, key=lambda s: (s.cand["_geometry"]["cy"], s.cand["order"]))
    rows: list[list[Scored]] = []
    for s in by_y:
        g = s.cand["_geometry"]
        if rows and g["cy"] - rows[-1][0].cand["_geometry"]["cy"] <= max(10.0, s.cand["box"][3] / 2):
            rows[-1].append(s)
        else:
            rows.append([s])
    return [sorted(row, key=lambda s: (s.cand["_geometry"]["cx"], s.cand["order"])) for row in rows]


def reading_order(items: list[Scored]) -> list[Scored]:
    """Top to bottom in rows (centres within half a height share a row), then left to right."""
    return [s for row in laid_out_rows(items) for s in row]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.5

"""Visible-state clauses judged on the element they name (protocol iwr-det-3).

"'Green' is no longer highlighted", "'Seventh' is highlighted and the 'Next' button is greyed
out", "the 'Green' box is ticked": the words were on the page before the action and stay
there, so counting them says nothing. What the clause describes is the state of the element
that carries the name: its classes, ARIA states, checked and disabled flags and colours
(``PageState.elements``). The clause holds when that state changed where the reference's pixels
at the element's place changed, and stayed where they did not.
"""

from __future__ import annotations

import re
from collections import Counter

from evaluator.agents.words import normalize
from evaluator.judges.phrases import CLAUSE_SPLIT, PLACEHOLDER_RE, _capital_phrases, _mask_quotes
from evaluator.judges.pixels import region_change_fraction, region_content_change_fraction

STATE_WORDS = re.compile(
    r"\b(highlighted|highlight|active|selected|greyed|grayed|disabled|enabled|ticked|unticked|checked|"
    r"unchecked|current|expanded|collapsed|pressed|marked|dimmed|bold|underlined|empty)\b",
    re.I,
)


# A clause saying its element keeps its state ("'Tab 1' stays highlighted"): no change is claimed of it.
STEADY_WORDS = re.compile(r"\b(still|stays?|remains?|keeps?|unchanged|as before)\b", re.I)


def state_clause_names(assertion: str, steady: bool = True) -> set[str]:
    """Normalised names (quoted or capitalised) that a visible-state clause of ``assertion`` is about;
    ``steady=False`` leaves out the clauses that say the element keeps its state."""
    masked, quotes = _mask_quotes(assertion or "")
    names: set[str] = set()
    for clause in CLAUSE_SPLIT.split(masked):
        plain = PLACEHOLDER_RE.sub(" ", clause)
        if not STATE_WORDS.search(plain) or not steady and STEADY_WORDS.search(plain):
            continue
        names.update(normalize(quotes[int(m.group(1))]) for m in PLACEHOLDER_RE.finditer(clause))
        names.update(normalize(text) for text, _start in _capital_phrases(PLACEHOLDER_RE.sub(" , ", clause)))
    return {n for n in names if n}


def element_check(name: str, before, after, reference, params, reached: bool = False) -> dict | None:
    """The clause about the element named ``name``: did its state do what the reference's did there?

    None when the page has no element of that name (the phrase is then checked as text). ``reached``
    (iwr-det-11): ``before`` is the view a click scrolled to before pressing, and the assertion claims a change;
    where the reference's change there cannot be measured (it scrolled), an element whose state and pixels the
    click left alone is marked ``still_after_reaching``.
    """
    smallest = params.element_min_px
    was, now = _named(before.elements, name, smallest), _named(after.elements, name, smallest)
    if not now:
        return None
    changed = Counter(e["state"] for e in was) != Counter(e["state"] for e in now)
    boxes = [e["box"] for e in now]
    if params.element_place_check:  # only where the element stands where the reference shows it
        boxes = [b for b in boxes if _same_place(before, reference, b, params)]
    ref_fraction = _reference_change_at(reference, boxes, params)
    expected = None if ref_fraction is None else ref_fraction >= params.element_change_fraction
    look = None
    if expected and not changed and params.element_look:
        look = _looks_like_reference(before, after, reference, boxes, params)
        if look and params.look_needs_reaction and not _reacted(before, after):
            look = False
    holds = (changed or bool(look)) if expected is None or expected else not changed
    out = {"phrase": name, "kind": "element", "mode": "appearance" if expected is not False else "state",
           "element_changed": changed, "reference_change": None if ref_fraction is None else round(ref_fraction, 4),
           "before": len(was), "after": len(now), "holds": holds}
    if look is not None:
        out["looks_like_reference"] = look
    if reached and expected is None and not changed and _still(before, after, [e["box"] for e in now], params):
        out["still_after_reaching"] = True
    return out


def _still(before, after, boxes: list, params) -> bool:
    """No pixel of the element's boxes changed (at the element tolerance) between the two screenshots: a
    highlight set on a parent, a sibling or by a pseudo-class, which leaves the element's own state alone,
    shows here; so does the pointer's hover shade on the element it pressed."""
    if not boxes:
        return False
    shares = [region_change_fraction(before.screenshot, after.screenshot, box, params.diff_scale,
                                     params.element_pixel_tolerance) for box in boxes[:6]]
    return all(share is not None and share < params.element_change_fraction for share in shares)


def _looks_like_reference(before, after, reference, boxes: list, params) -> bool:
    """The element's own state did not change, but its place on the page did, and it now looks as
    the reference's does there: a highlight set on a parent (``li.active > a``), by a sibling or by a
    pseudo-class leaves the named element's classes alone."""
    if reference is None or reference.images is None or reference.scrolled:
        return False
    for box in boxes[:6]:
        moved = region_change_fraction(before.screenshot, after.screenshot, box, params.diff_scale,
                                       params.element_pixel_tolerance)
        differs = region_change_fraction(after.screenshot, reference.images[1], box, params.diff_scale,
                                         params.element_pixel_tolerance)
        if moved is not None and differs is not None and moved >= params.element_change_fraction \
                and differs < params.element_change_fraction:
            return True
    return False


def _reacted(before, after) -> bool:
    """iwr-det-6 (``look_needs_reaction``): the page did something besides being pointed at: its DOM (a class
    on a parent), URL (a :target highlight), form state or the focus of a field changed. The pointer resting on
    a clicked control shades it by :hover, and the click focuses it, which a page that ignored the click shows
    as much as one that did not."""
    return (before.dom_hash != after.dom_hash or before.url != after.url or before.values != after.values
            or before.checked != after.checked or before.focus != after.focus and after.focus_editable)


def _same_place(before, reference, box: list, params) -> bool:
    """The reference's first checkpoint shows what the page showed before the action at ``box``
    (page-wide tolerance): otherwise the element stands elsewhere in the reference (another
    layout, an unstyled copy) and the reference's pixels there are about something else. Under
    ``place_by_content`` (iwr-det-9) the share counts only the pixels that show something in either
    picture, so a wide box's blank background does not make different content the same place."""
    if reference is None or reference.images is None or before.screenshot is None:
        return True
    compare = region_content_change_fraction if params.place_by_content else region_change_fraction
    share = compare(before.screenshot, reference.images[0], box, params.diff_scale, params.pixel_tolerance)
    return share is None or share < params.element_place_fraction


def _named(elements: list, name: str, smallest: float = 0) -> list[dict]:
    """The elements called ``name``; under ``element_min_px`` (iwr-det-11) only those drawn at least that many
    pixels wide and high: a radio button clipped to 1x1 under its label, drawn as a button, shows no state to the
    eye, though its checked flag changes with any click on the label."""
    return [e for e in elements or [] if normalize(e.get("name")) == name
            and (not smallest or min(e["box"][2], e["box"][3]) >= smallest)]


def _reference_change_at(reference, boxes: list, params) -> float | None:
    """Largest changed share of the reference checkpoints over the element's boxes."""
    if reference is None or reference.images is None or reference.scrolled:
        return None
    shares = [region_change_fraction(reference.images[0], reference.images[1], box, params.diff_scale,
                                     params.element_pixel_tolerance) for box in boxes[:6]]
    shares = [s for s in shares if s is not None]
    return max(shares) if shares else None

"""Colours an element paints, named as people name them (protocol iwr-det-4, ``colour_words``).

"Click the blue dot in the toolbar", "the card with the pink top edge": the description names the
target by a hue, and maybe by a small mark ("dot", "swatch"). The candidate collector returns the
colours each element paints, with the size of the part painting them (background, thick borders,
text or icon colour, ::before / ::after marks, SVG fill and stroke); :func:`look_score` says how
well one of them is the look described.
"""

from __future__ import annotations

import colorsys

from evaluator.agents.description import Description

# A hue named and the named mark drawn: scored like a name seen on the element.
LOOK_MATCH = 0.9
# The hue is there, but not as the small mark the description names (a card's blue edge for "the blue dot").
HUE_ONLY = 0.45
# A description that also says other words (not about the look) lets the look count this share.
WITH_WORDS = 0.75
# A "dot", "swatch" or "square" is a small mark: at most this many CSS pixels each way, and not much longer than wide.
MARK_MAX_PX = 40
MARK_MAX_ASPECT = 2.5

# Hue bands in degrees -> names; a band may carry two names where people use both (teal is called
# blue or green, a light red pink).
_HUES = [(15, {"red"}), (40, {"orange"}), (70, {"yellow"}), (165, {"green"}), (180, {"cyan", "green"}),
         (200, {"cyan", "blue"}), (255, {"blue"}), (290, {"purple"}), (330, {"pink", "purple"}),
         (345, {"pink"}), (361, {"red"})]


def colour_names(r: int, g: int, b: int) -> set[str]:
    """The names people give an sRGB colour: hue bands, greys, black and white, brown, light reds as pink."""
    hue, light, sat = colorsys.rgb_to_hls(r / 255, g / 255, b / 255)
    chroma = (max(r, g, b) - min(r, g, b)) / 255
    if light >= 0.93:
        return {"white"}
    if light <= 0.13:
        return {"black"}
    if chroma < 0.12 or sat < 0.12:
        return {"grey"} | ({"white"} if light > 0.85 else {"black"} if light < 0.22 else set())
    degrees = hue * 360
    names = next(set(band) for limit, band in _HUES if degrees < limit)
    if names & {"orange", "red"} and light < 0.35:
        names.add("brown")
    if "red" in names and light > 0.7:
        names.add("pink")
    return names


def is_mark(width: float, height: float) -> bool:
    """A small mark, as a dot or a swatch is: small both ways, roughly as wide as high."""
    small, large = sorted((width, height))
    return 0 < large <= MARK_MAX_PX and large <= MARK_MAX_ASPECT * max(small, 1)


def look_score(desc: Description, cand: dict) -> float:
    """How well the candidate paints the hue the description names (and the mark, when it names one)."""
    if not desc.colours or desc.quotes:
        return 0.0
    wanted = set(desc.colours)
    best = 0.0
    for r, g, b, width, height in cand.get("colours", []):
        if not colour_names(r, g, b) & wanted:
            continue
        best = max(best, LOOK_MATCH if not desc.shapes or is_mark(width, height) else HUE_ONLY)
    return best * (WITH_WORDS if desc.content else 1.0)

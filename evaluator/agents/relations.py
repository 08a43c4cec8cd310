"""Relative position cues: "the checkbox to the left of the input", "the field below 'Email'".

A relation names an anchor by quoted text, words or a role noun. ``anchor_specs`` turns each
relation of a description into what ``candidates.js`` looks for on the page (a phrase and a
CSS selector); ``relation_score`` rates a candidate's box against the anchor boxes it found.
Boxes are ``[x, y, width, height]`` in viewport pixels, candidates and anchors alike.
"""

from __future__ import annotations

from evaluator.agents.description import Description
from evaluator.agents.params import TargetingParams
from evaluator.agents.words import normalize

_TEXT_INPUTS = ("input:not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit])"
                ":not([type=reset]):not([type=hidden]):not([type=image]):not([type=range]):not([type=color])"
                ":not([type=file])")
# What an anchor named by a role noun can be on the page.
ROLE_SELECTORS = {
    "textbox": f"{_TEXT_INPUTS}, textarea, [contenteditable=''], [contenteditable=true], [role=textbox], "
               "[role=searchbox]",
    "button": "button, input[type=button], input[type=submit], input[type=reset], [role=button], .btn",
    "link": "a[href], [role=link]",
    "checkbox": "input[type=checkbox], [role=checkbox], [role=switch]",
    "switch": "input[type=checkbox], [role=checkbox], [role=switch]",
    "radio": "input[type=radio], [role=radio]",
    "combobox": "select, [role=combobox], [role=listbox]",
    "image": "img, svg, picture, canvas, [role=img]",
    "icon": "svg, i, [role=img], [class*=icon]",
    "item": "li, tr, [role=listitem], [role=option], [role=row]",
    "card": "article, .card, [class*=card]",
    "tab": "[role=tab], .tab, .nav-link",
    "menu": "[role=menu], [role=menubar], nav, .menu, .dropdown-menu",
    "table": "table, [role=table], [role=grid]",
    "list": "ul, ol, [role=list], [role=listbox]",
    "form": "form",
    "heading": "h1, h2, h3, h4, h5, h6, [role=heading]",
    "label": "label",
    "code": "pre, code",  # iwr-det-13 (code_anchors): "below the example code"
}
# How far past the anchor's near edge a candidate's centre may reach (the protocol's
# relation_edge_share of the anchor's extent), kept within these bounds: a few pixels for a
# small anchor, never deep into a wide one.
EDGE_MIN_PX, EDGE_MAX_PX = 10.0, 80.0
# The proximity factor halves over relation_reach times the larger extent, at least this gap:
# one row further down a stack of fields is far, a button across a table row is not.
REACH_MIN_PX = 40.0
# An anchor lying this much inside the candidate is the candidate's own content, not a neighbour.
OWN_CONTENT = 0.8


def resolved_anchors(desc: Description, anchors: list | None) -> set[str]:
    """The anchor phrases (as in ``desc.anchors``) of relations whose anchor was found on the page."""
    out: set[str] = set()
    for relation, boxes in zip(desc.relations, anchors or [], strict=False):
        if boxes:
            out.update(relation.named)
    return out


def anchor_specs(desc: Description) -> list[dict]:
    """One ``{"text", "selector"}`` per relation, as ``candidates.js`` takes them (in order)."""
    return [{"text": normalize(" ".join(r.quotes or r.words)), "selector": ROLE_SELECTORS.get(r.role or "", "")}
            for r in desc.relations]


# iwr-det-14 (picture_anchors): of the pictures an anchor's picture noun finds, those its size word means. "small" keeps
# the smallest ones (up to twice the smallest area), "big" the largest (from half the largest), and the comparatives
# all but the other extreme ("the larger photos" beside a row of small ones need not be the largest on the page).
SIZE_SPREAD = 2.0


def sized_anchors(desc: Description, anchors: list | None) -> list | None:
    """``anchors`` (one list of boxes per relation) with each picture anchor's boxes narrowed by its size words."""
    if not anchors:
        return anchors
    return [_of_size(boxes, relation.sizes) if relation.sizes else boxes
            for relation, boxes in zip(desc.relations, anchors, strict=False)] + list(anchors[len(desc.relations):])


def _of_size(boxes: list[list[float]], sizes: list[str]) -> list[list[float]]:
    areas = [b[2] * b[3] for b in boxes]
    if len(boxes) < 2 or min(areas) <= 0:
        return boxes
    low, high = min(areas), max(areas)
    keep = {"small": lambda a: a <= SIZE_SPREAD * low, "big": lambda a: a >= high / SIZE_SPREAD,
            "smaller": lambda a: a < high / SIZE_SPREAD, "bigger": lambda a: a > SIZE_SPREAD * low}
    kept = [b for b, a in zip(boxes, areas, strict=True) if all(keep[s](a) for s in sizes if s in keep)]
    return kept or boxes


def relation_score(kind: str, box: list[float], anchors: list[list[float]],
                   params: TargetingParams | None = None, own_label: bool = False) -> float | None:
    """How well ``box`` sits ``kind`` (left, right, above, below, near) of the nearest fitting
    anchor, in [0, 1]; None when no anchor was found on the page (the cue is then unused).

    An anchor inside the candidate is its own content, never beside it; with ``own_label``
    (iwr-det-7: the candidate draws the icon the description names) "the icon next to 'Toggle
    Navigation'" is the control whose icon sits beside that label of its own, so it fits."""
    if not anchors:
        return None
    p = params or TargetingParams()
    if own_label and kind == "near" and any(_inside_share(a, box) >= OWN_CONTENT for a in anchors):
        return 1.0
    return max((_fit(kind, box, a, p) for a in anchors if _inside_share(a, box) < OWN_CONTENT), default=0.0)


def between_score(box: list[float], sides: tuple[list[list[float]], list[list[float]]],
                  params: TargetingParams | None = None) -> float | None:
    """How well ``box`` sits between an anchor of each side ("the 'Blue' button between 'Green' and
    'Pink'"), in [0, 1]: its centre between their facing edges along the line joining them, and in
    line with both across it. With one side found it is "next to" that side; None with neither."""
    first, second = sides
    if not first or not second:
        return relation_score("near", box, first or second, params)
    p = params or TargetingParams()
    fits = [_between(box, a, b, p) for a in first for b in second
            if _inside_share(a, box) < OWN_CONTENT and _inside_share(b, box) < OWN_CONTENT]
    return max(fits, default=0.0)


def _between(box: list[float], a: list[float], b: list[float], p: TargetingParams) -> float:
    ca, cb = (a[0] + a[2] / 2, a[1] + a[3] / 2), (b[0] + b[2] / 2, b[1] + b[3] / 2)
    axis = 0 if abs(ca[0] - cb[0]) >= abs(ca[1] - cb[1]) else 1
    near, far = (a, b) if ca[axis] <= cb[axis] else (b, a)
    lo, hi = near[axis] + near[axis + 2], far[axis]  # the facing edges
    if hi <= lo:  # the two anchors touch or overlap: nothing lies between them
        return 0.0
    centre = box[axis] + box[axis + 2] / 2
    edge = min(EDGE_MAX_PX, max(EDGE_MIN_PX, p.relation_edge_share * box[axis + 2]))
    along = _clip(1 - _outside(centre, lo, hi - lo) / edge)
    return along * min(_aligned(box, a, 1 - axis), _aligned(box, b, 1 - axis))


def _fit(kind: str, box: list[float], anchor: list[float], p: TargetingParams) -> float:
    if kind == "near":  # "next to" / "beside" mean the same row in a page's language
        across = max(_side(side, box, anchor, p) for side in ("above", "below"))
        return max(_side("left", box, anchor, p), _side("right", box, anchor, p), p.relation_near_vertical * across)
    return _side(kind, box, anchor, p)


def _side(kind: str, box: list[float], anchor: list[float], p: TargetingParams) -> float:
    """Beyond the anchor's edge on that side, aligned with it across, and close to it."""
    axis = 0 if kind in ("left", "right") else 1
    lo, size = box[axis], box[axis + 2]
    a_lo, a_size = anchor[axis], anchor[axis + 2]
    centre = lo + size / 2
    if kind in ("left", "above"):
        beyond, gap = a_lo - centre, a_lo - (lo + size)
    else:
        beyond, gap = centre - (a_lo + a_size), lo - (a_lo + a_size)
    edge = min(EDGE_MAX_PX, max(EDGE_MIN_PX, p.relation_edge_share * a_size))
    along = _clip(1 + beyond / edge)
    proximity = 1 / (1 + max(0.0, gap) / max(REACH_MIN_PX, p.relation_reach * max(size, a_size)))
    return along * _aligned(box, anchor, 1 - axis) * proximity


def _aligned(box: list[float], anchor: list[float], axis: int) -> float:
    """1 while either centre lies within the other's extent across (a wide field under a short
    label, a small icon beside a tall field), then falling off over one extent (a row further
    down is not beside a label)."""
    lo, size, a_lo, a_size = box[axis], box[axis + 2], anchor[axis], anchor[axis + 2]
    centre, a_centre = lo + size / 2, a_lo + a_size / 2
    off = min(_outside(centre, a_lo, a_size), _outside(a_centre, lo, size))
    return _clip(1 - off / max(a_size, size, 20.0))


def _outside(value: float, lo: float, size: float) -> float:
    return max(0.0, lo - value, value - (lo + size))


def _inside_share(inner: list[float], outer: list[float]) -> float:
    """Share of ``inner``'s area that lies inside ``outer``."""
    w = min(inner[0] + inner[2], outer[0] + outer[2]) - max(inner[0], outer[0])
    h = min(inner[1] + inner[3], outer[1] + outer[3]) - max(inner[1], outer[1])
    area = inner[2] * inner[3]
    return max(0.0, w) * max(0.0, h) / area if area > 0 else 0.0


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))

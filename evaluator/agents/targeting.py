"""Finding the element an action describes, without a language model.

One ``page.evaluate`` collects every visible, unoccluded, interactive element with its
features (``candidates.js``); scoring happens in Python (``evaluator.agents.scoring``);
a handle to the chosen element is taken by its index in the collected list.

``LISTENER_TRACKER_JS`` must be added to every page with ``add_init_script`` (before page
scripts run): it remembers which elements got click-like listeners through
``addEventListener`` so that such elements count as interactive.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from evaluator.agents.description import SEQUENCE_KINDS, Description, parse_description
from evaluator.agents.glyphs import glyph_point
from evaluator.agents.params import TargetingParams
from evaluator.agents.relations import anchor_specs, sized_anchors
from evaluator.agents.scoring import Scored, score_candidates
from evaluator.agents.words import quoted

LISTENER_TRACKER_JS = r"""
(() => {
  if (window.__iwrHasClickListener) return;
  const CLICK = new Set(["click", "dblclick", "mousedown", "mouseup", "pointerdown", "pointerup",
                         "touchstart", "touchend"]);
  const byElement = new WeakMap();  // element -> Map(type -> Set(listener))
  const proto = EventTarget.prototype;
  const add = proto.addEventListener, remove = proto.removeEventListener;
  const tracked = (target, type, listener) => listener && target && target.nodeType === 1 &&
    target !== document.documentElement && target !== document.body && CLICK.has(String(type).toLowerCase());
  proto.addEventListener = function (type, listener, options) {
    try {
      if (tracked(this, type, listener)) {
        let types = byElement.get(this);
        if (!types) { types = new Map(); byElement.set(this, types); }
        const key = String(type).toLowerCase();
        if (!types.has(key)) types.set(key, new Set());
        types.get(key).add(listener);
      }
    } catch (e) { /* never break the page */ }
    return add.call(this, type, listener, options);
  };
  proto.removeEventListener = function (type, listener, options) {
    try {
      const types = byElement.get(this);
      const set = types && types.get(String(type).toLowerCase());
      if (set) set.delete(listener);
    } catch (e) { /* never break the page */ }
    return remove.call(this, type, listener, options);
  };
  const has = (el) => {
    const types = byElement.get(el);
    if (!types) return false;
    for (const set of types.values()) if (set.size) return true;
    return false;
  };
  Object.defineProperty(window, "__iwrHasClickListener", {value: has, enumerable: false});
})();
"""

# The chosen element; with ``remember`` (iwr-det-10's repeat_targets) also kept as the one the next description
# may call "the same icon" or "that icon again".
HANDLE_JS = """([i, remember]) => {
  const el = (window.__iwrTargets || [])[i] || null;
  if (remember && el) window.__iwrPreviousTarget = el;
  return el;
}"""


@cache
def candidates_js() -> str:
    """The collection script (read once from the package)."""
    return (Path(__file__).with_name("candidates.js")).read_text(encoding="utf-8")


@dataclass
class Target:
    """The element chosen for an action, or why none was."""

    handle: Any = None  # Playwright ElementHandle
    chosen: dict | None = None
    runner_up: dict | None = None
    ambiguous: bool = False
    reason: str = ""
    candidates: int = 0
    description: dict = field(default_factory=dict)
    # iwr-det-16 (glyph_points): where to click, from the top-left corner of the element's padding box (None: middle)
    point: tuple[float, float] | None = None

    @property
    def found(self) -> bool:
        return self.handle is not None

    def to_dict(self) -> dict:
        """JSON-safe record for the step's evidence (everything except the handle)."""
        record = {"found": self.found, "chosen": self.chosen, "runner_up": self.runner_up,
                  "ambiguous": self.ambiguous, "reason": self.reason, "candidates": self.candidates,
                  "description": self.description}
        if self.point is not None:
            record["point"] = [round(self.point[0], 1), round(self.point[1], 1)]
        return record


def typed_text(action) -> str | None:
    """The text a Type action enters: its ``text``, else the first quoted string of its description."""
    text = getattr(action, "text", None)
    if text:
        return str(text)
    quotes = quoted(getattr(action, "description", "") or "")
    return quotes[0] if quotes else None


# iwr-det-15 (heading_targets): a control whose words match the description this well is meant before any heading
NAMED_TEXT = 0.9


def find_target(page, action, params=None) -> Target:
    """Choose the element ``action`` describes on ``page`` (Click and Type; others need none)."""
    p = TargetingParams.from_dict(params)
    kind = getattr(action, "type", "Click")
    if kind not in ("Click", "Type"):
        return Target(reason=f"{kind} needs no target")
    desc = _description_for(action, kind, p)
    if p.heading_targets and "heading" in desc.roles:
        # "the last heading in the menu, 'Header 4'" is the menu's link: a heading, which listens to nothing, is
        # the target only when no control shows the words named (read as iwr-det-14 reads them)
        plain = dataclasses.replace(p, heading_targets=False)
        target = _find(page, kind, _description_for(action, kind, plain), action, plain)
        if target.found and target.chosen["parts"]["text"] >= NAMED_TEXT:
            return target
    return _find(page, kind, desc, action, p)


def _find(page, kind: str, desc: Description, action, p: TargetingParams) -> Target:
    try:
        data = page.evaluate(candidates_js(), {"editableOnly": kind == "Type", "maxCandidates": p.max_candidates,
                                               "anchors": anchor_specs(desc), "attributeLabels": p.attribute_labels,
                                               "pictures": p.picture_nouns, "shownValues": p.check_verbs,
                                               "drawnGlyphs": p.drawn_glyphs and _names_icon(desc),
                                               "generatedGlyphs": p.generated_glyphs and _names_icon(desc),
                                               "glyphPoints": p.glyph_points and kind == "Click",
                                               "headings": p.heading_targets and "heading" in desc.roles,
                                               "repeat": p.repeat_targets and desc.again,
                                               "childFill": p.child_fill_colours,
                                               "delegatedCells": p.delegated_cells,
                                               "swatches": p.swatch_nouns and desc.swatch,
                                               "viewAnchors": p.view_anchors,
                                               "dots": p.dot_nouns and "dot" in desc.concepts,
                                               "pictureAnchors": p.picture_anchors,
                                               "captions": p.caption_labels,
                                               "labelAnchors": p.label_anchors,
                                               "colours": p.colour_words and bool(desc.colours or _sequence(desc, p))})
    except Exception as exc:  # a crashed or navigating page: the step fails with the reason
        return Target(reason=f"could not read the page: {_first_line(exc)}", description=desc.to_dict())
    if p.picture_anchors:
        data["anchors"] = sized_anchors(desc, data.get("anchors"))
    ranked = score_candidates(desc, data, p, focus_bonus=kind == "Type")
    choice, reason = _choose(ranked, action, kind, p)
    target = Target(candidates=len(ranked), description=desc.to_dict(), reason=reason)
    if ranked:
        target.runner_up = _runner_up(ranked, choice)
    if choice is None:
        target.chosen = None
        return target
    target.chosen = choice.summary()
    target.ambiguous = bool(target.runner_up and choice.score - target.runner_up["score"] <= p.ambiguity_margin)
    target.handle = _handle(page, choice.index, p.repeat_targets)
    if target.handle is None:
        target.reason = "the chosen element left the page before it could be used"
    elif p.glyph_points:
        target.point = glyph_point(desc.glyphs, desc.concepts, choice.cand.get("glyph_points"))
    return target


def _names_icon(desc: Description) -> bool:
    """The description names a glyph or an icon: only then are icons drawn in CSS looked for (iwr-det-7)."""
    return bool(desc.glyphs or desc.concepts or {"icon", "image"} & set(desc.roles))


def _sequence(desc: Description, p: TargetingParams) -> bool:
    """iwr-det-6: a relation whose anchor is found by its own description, which may name a colour."""
    return p.sequence_relations and any(r.kind in SEQUENCE_KINDS for r in desc.relations)


def _description_for(action, kind: str, p: TargetingParams) -> Description:
    typed = typed_text(action) if kind == "Type" else None
    return parse_description(getattr(action, "description", "") or "", typed=typed, params=p)


def _choose(ranked: list[Scored], action, kind: str, p: TargetingParams) -> tuple[Scored | None, str]:
    if not ranked:
        what = "editable field" if kind == "Type" else "visible interactive element"
        return None, f"no {what} on the page"
    best = ranked[0]
    if best.score >= p.accept_threshold:
        return best, f"best match scored {best.score:.3f}"
    if kind == "Type":
        fallback = _type_fallback(ranked, action, p)
        if fallback:
            return fallback
    return None, f"no element matches the description (best {best.score:.3f} < {p.accept_threshold})"


def _type_fallback(ranked: list[Scored], action, p: TargetingParams) -> tuple[Scored, str] | None:
    """Type with no convincing match: the field ``element_index`` names, or the only field there is."""
    in_order = sorted(ranked, key=lambda s: s.cand["order"])
    index = getattr(action, "element_index", None)
    if isinstance(index, int) and 0 <= index < len(in_order):
        return in_order[index], f"element_index {index} among {len(in_order)} editable fields"
    if p.type_single_field_fallback and len(in_order) == 1:
        return in_order[0], "the only editable field on the page"
    return None


def _runner_up(ranked: list[Scored], choice: Scored | None) -> dict | None:
    for s in ranked:
        if s is not choice:
            return s.summary()
    return None


def _handle(page, index: int, remember: bool = False):
    try:
        return page.evaluate_handle(HANDLE_JS, [index, remember]).as_element()
    except Exception:  # the page navigated away between collection and use
        return None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__

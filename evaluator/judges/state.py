"""What the page looks like at one moment: taken before and after every action.

``capture_state(page)`` reads, in one ``page.evaluate``: URL, scroll offsets (window and
scroll containers), the focused element, form values and checked states, the visible text
of the document, the text blocks in the viewport (box, colour, background; the same shape
as the reference extension's ``blocks``), a hash of the DOM, and whether a canvas draws a
large part of the view. The screenshot (viewport PNG) is passed in or taken here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Re-exported: the judge's callers know it from here.
from evaluator.judges.pixels import pixel_change_fraction as pixel_change_fraction

STATE_JS = r"""
({maxBlocks, maxText, elementStates, elementsOnly, coveredHidden}) => {
  const vw = innerWidth, vh = innerHeight;
  const keyOf = (el, i) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : el.name ? "[" + el.name + "]" : ":" + i);

  function describeFocus() {
    const el = document.activeElement;
    if (!el || el === document.body || el === document.documentElement) return ["", false];
    const all = document.getElementsByTagName("*");
    const type = (el.type || "").toLowerCase();
    const editable = el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && !/^(button|submit|reset|checkbox|radio|image|file|range|color)$/.test(type));
    return [keyOf(el, Array.prototype.indexOf.call(all, el)), editable];
  }

  function forms() {
    const values = {}, checked = {};
    const fields = document.querySelectorAll("input, select, textarea");
    for (let i = 0; i < fields.length && i < 500; i++) {
      const el = fields[i], key = keyOf(el, i), type = (el.type || "").toLowerCase();
      if (type === "checkbox" || type === "radio") checked[key] = !!el.checked;
      else if (type !== "password" && type !== "hidden") values[key] = String(el.value || "").slice(0, 500);
    }
    return {values, checked};
  }

  function scrollers() {
    const out = {};
    let n = 0;
    for (const el of document.querySelectorAll("*")) {
      if (n >= 30) break;
      if (el.scrollTop === 0 && el.scrollLeft === 0) continue;
      out[keyOf(el, n)] = [el.scrollLeft, el.scrollTop];
      n++;
    }
    return out;
  }

  function rgb(value) {
    const m = /rgba?\(([^)]+)\)/.exec(value || "");
    if (!m) return null;
    const parts = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
    if (parts.length > 3 && parts[3] === 0) return null;
    return parts.slice(0, 3).map(Math.round);
  }

  function background(el) {
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c) return c;
    }
    return [255, 255, 255];
  }

  // iwr-det-17 (coveredHidden): text something painted over is hidden, by the rule the reference's recorded
  // visible text follows (evaluator/authoring/covered_text.js), tried at the centre of its first line in the viewport.
  /* covered_text.js */
  function uncovered(el, range) {
    const rects = [...range.getClientRects()].map((r) => [Math.max(0, r.left), Math.max(0, r.top),
      Math.min(vw, r.right), Math.min(vh, r.bottom)]).filter((b) => b[2] - b[0] >= 1 && b[3] - b[1] >= 1);
    return !rects.length || !coveredText(el, rects[0]);
  }

  function blocks() {
    const byParent = new Map();
    const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.replace(/\s+/g, " ").trim();
      if (!text) continue;
      const parent = node.parentElement;
      if (!parent || /^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|TITLE)$/.test(parent.tagName)) continue;
      range.selectNodeContents(node);
      const r = range.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) continue;
      if (r.right <= 0 || r.bottom <= 0 || r.left >= vw || r.top >= vh) continue;
      const style = getComputedStyle(parent);
      if (style.visibility !== "visible" || parseFloat(style.opacity) === 0) continue;
      if (coveredHidden && !uncovered(parent, range)) continue;
      let entry = byParent.get(parent);
      if (!entry) {
        if (byParent.size >= maxBlocks) break;
        entry = {parts: [], box: [r.left, r.top, r.right, r.bottom], el: parent, style};
        byParent.set(parent, entry);
      }
      entry.parts.push(text);
      entry.box = [Math.min(entry.box[0], r.left), Math.min(entry.box[1], r.top),
                   Math.max(entry.box[2], r.right), Math.max(entry.box[3], r.bottom)];
    }
    const out = [];
    for (const entry of byParent.values()) {
      const [x0, y0, x1, y1] = entry.box;
      out.push({text: entry.parts.join(" ").slice(0, 1000),
                box: [x0, y0, x1 - x0, y1 - y0].map((v) => Math.round(v * 10) / 10),
                color: rgb(entry.style.color) || [0, 0, 0], bg: background(entry.el)});
    }
    return out;
  }

  // Hash of tags, attributes and text, open shadow roots included (web components keep their
  // content there, out of innerText). Empty style attributes are skipped: screenshots with a
  // hidden caret leave style="" on inputs, which is not the page reacting.
  function domHash() {
    let h = 0x811c9dc5, n = 0;
    const feed = (str) => {
      for (let i = 0; i < str.length; i++) { h ^= str.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
      n += str.length;
    };
    const walk = (root) => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
      for (let node = walker.currentNode; node; node = walker.nextNode()) {
        if (node.nodeType === 3) { feed("#" + node.data); continue; }
        if (node.nodeType !== 1) continue;  // a shadow root itself
        feed("<" + node.tagName);
        for (const attr of node.attributes) {
          if (attr.name === "style" && !attr.value) continue;
          feed(" " + attr.name + "=" + attr.value);
        }
        if (node.shadowRoot) { feed("<#shadow"); walk(node.shadowRoot); }
      }
    };
    if (!document.documentElement) return "";
    walk(document.documentElement);
    return h.toString(16) + ":" + n;
  }

  function canvasShare() {
    let area = 0;
    for (const c of document.querySelectorAll("canvas")) {
      const r = c.getBoundingClientRect();
      const w = Math.max(0, Math.min(r.right, vw) - Math.max(r.left, 0));
      const h = Math.max(0, Math.min(r.bottom, vh) - Math.max(r.top, 0));
      area += w * h;
    }
    return area / Math.max(1, vw * vh);
  }

  // iwr-det-3: each visible element with a short name and the state a highlight, a tick or a
  // greying-out changes (classes, ARIA states, checked, disabled, colours), keyed by that name.
  const STATE_ATTRS = ["aria-current", "aria-selected", "aria-expanded", "aria-pressed", "aria-checked",
                       "aria-disabled", "disabled", "data-active", "data-selected", "data-state", "open"];
  function nameOf(el) {
    const tag = el.tagName;
    if (tag === "INPUT" && /^(checkbox|radio)$/i.test(el.type || "")) {
      const labels = el.labels && el.labels.length ? Array.from(el.labels).map((l) => l.innerText).join(" ") : "";
      return labels || (el.parentElement ? el.parentElement.innerText || "" : "");
    }
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return el.getAttribute("aria-label") || "";
    return el.innerText || el.getAttribute("aria-label") || el.getAttribute("title") || "";
  }
  function elementStatesOf() {
    const out = [];
    const all = document.body ? document.body.getElementsByTagName("*") : [];
    for (let i = 0; i < all.length && out.length < 600; i++) {
      const el = all[i];
      if (/^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|BR|svg)$/i.test(el.tagName)) continue;
      if ((el.textContent || "").length > 400) continue;  // a container, not a named control (and costly)
      const name = nameOf(el).replace(/\s+/g, " ").trim();
      if (!name || name.length > 40) continue;
      const r = el.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0 || r.right <= 0 || r.bottom <= 0 || r.left >= vw || r.top >= vh) continue;
      const s = getComputedStyle(el);
      if (s.visibility !== "visible") continue;
      const attrs = STATE_ATTRS.map((a) => el.hasAttribute(a) ? a + "=" + el.getAttribute(a) : "").join("|");
      // Set by the page, not by the pointer: computed colours also follow :hover and :focus, which
      // a click leaves behind on any button.
      const state = [el.getAttribute("class") || "", attrs, el.checked === true ? "checked" : "",
        el.disabled === true ? "disabled" : "", el.getAttribute("style") || "", s.visibility].join(";");
      out.push({name, box: [r.left, r.top, r.width, r.height].map((v) => Math.round(v)), state});
    }
    return out;
  }

  if (elementsOnly) return {elements: elementStatesOf()};
  const body = document.body;
  return {
    elements: elementStates ? elementStatesOf() : [],
    url: location.href, title: document.title || "",
    scroll: [scrollX, scrollY], scrollers: scrollers(), viewport: [vw, vh],
    focus: describeFocus(), ...forms(),
    text: body ? (body.innerText || "").slice(0, maxText) : "",
    blocks: blocks(), dom_hash: domHash(), canvas_share: canvasShare(),
  };
}
"""
# The rule for text painted over is the recorder's own file, so the reference's recorded text and the judge's
# reading of a page cannot drift apart (and a change to it rebuilds the sample: the build key hashes authoring/).
COVERED_TEXT_JS = Path(__file__).resolve().parents[1] / "authoring" / "covered_text.js"


def with_covered_text(script: str) -> str:
    """``script`` with its ``/* covered_text.js */`` line replaced by the rule for text painted over (the judge's
    page reading and the recorder's visible text both use it)."""
    if "/* covered_text.js */" not in script:
        raise ValueError("the script has no /* covered_text.js */ line")
    return script.replace("/* covered_text.js */", COVERED_TEXT_JS.read_text(encoding="utf-8"), 1)


STATE_JS = with_covered_text(STATE_JS)


@dataclass(frozen=True)
class Reached:
    """iwr-det-8 (``acting_scroll``): the view a click scrolled to before pressing its target, when reaching
    the target moved the window: its screenshot, the window's scroll there and the target's box in it."""

    screenshot: bytes
    scroll: tuple[float, float]
    box: tuple[float, float, float, float]
    # iwr-det-11 (``reached_states``): {name, box, state} of the short-named elements in that view, as
    # ``PageState.elements``; None when not read
    elements: list | None = None


@dataclass
class PageState:
    """One snapshot of the page (see the module docstring)."""

    url: str = ""
    title: str = ""
    scroll: tuple[float, float] = (0.0, 0.0)
    scrollers: dict = field(default_factory=dict)
    viewport: tuple[int, int] = (0, 0)
    focus: str = ""
    focus_editable: bool = False  # a field has focus: caret and focus ring are visible
    values: dict = field(default_factory=dict)
    checked: dict = field(default_factory=dict)
    text: str = ""
    blocks: list = field(default_factory=list)
    dom_hash: str = ""
    canvas_share: float = 0.0
    elements: list = field(default_factory=list)  # iwr-det-3: {name, box, state} of short-named elements
    screenshot: bytes | None = None
    error: str | None = None

    @property
    def viewport_text(self) -> str:
        """Text of the blocks in the viewport, in document order (what a screenshot shows)."""
        return "\n".join(block["text"] for block in self.blocks)

    @property
    def form_text(self) -> str:
        """What form fields hold: typed text is on screen, though not in ``innerText``."""
        return "\n".join(v for v in self.values.values() if v)

    def to_dict(self) -> dict:
        """JSON-safe summary (no screenshot bytes, long text cut) for step evidence."""
        return {"url": self.url, "scroll": list(self.scroll), "focus": self.focus,
                "focus_editable": self.focus_editable, "values": self.values,
                "checked": self.checked, "text_chars": len(self.text), "blocks": len(self.blocks),
                "dom_hash": self.dom_hash, "canvas_share": round(self.canvas_share, 4), "error": self.error}


def capture_state(page, screenshot: bytes | str | Path | None = None, take_screenshot: bool = True,
                  max_blocks: int = 600, max_text: int = 200_000, element_states: bool = False,
                  covered_hidden: bool = False) -> PageState:
    """Snapshot ``page``; ``screenshot`` is PNG bytes or a path when the caller already took one.
    ``element_states`` also reads the state of every short-named element (iwr-det-3); with ``covered_hidden``
    (iwr-det-17) text another element paints over is not among the viewport's blocks."""
    try:
        data = page.evaluate(STATE_JS, {"maxBlocks": max_blocks, "maxText": max_text,
                                        "elementStates": element_states, "coveredHidden": covered_hidden})
    except Exception as exc:  # crashed or navigating page: an empty state that says why
        return PageState(screenshot=_png(screenshot), error=f"could not read the page: {_first_line(exc)}")
    state = PageState(
        url=data["url"], title=data["title"], scroll=tuple(data["scroll"]), scrollers=data["scrollers"],
        viewport=tuple(data["viewport"]), focus=data["focus"][0], focus_editable=data["focus"][1],
        values=data["values"], checked=data["checked"],
        text=data["text"], blocks=data["blocks"], dom_hash=data["dom_hash"], canvas_share=data["canvas_share"],
        elements=data.get("elements") or [],
    )
    state.screenshot = _png(screenshot)
    if state.screenshot is None and take_screenshot:
        state.screenshot = _take_screenshot(page)
    return state


def element_states(page) -> list | None:
    """The state of every short-named element in view ({name, box, state}, as ``PageState.elements``), or None
    when the page could not be read."""
    try:
        return page.evaluate(STATE_JS, {"maxBlocks": 0, "maxText": 0, "elementStates": True,
                                        "elementsOnly": True})["elements"]
    except Exception:  # detached, navigating: the judge falls back to the states before the action
        return None


def _png(screenshot: bytes | str | Path | None) -> bytes | None:
    if screenshot is None or isinstance(screenshot, bytes):
        return screenshot
    return Path(screenshot).read_bytes()


def _take_screenshot(page) -> bytes | None:
    try:
        return page.screenshot(animations="disabled", caret="hide", timeout=10000)
    except Exception:  # the judge can still use the DOM signals
        return None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else type(exc).__name__

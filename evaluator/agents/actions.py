"""Carrying out one action on the page: Click, Type, Press, Scroll.

``perform(page, action, target, params) -> (executed, reason)``. ``target`` is the
:class:`~evaluator.agents.targeting.Target` found for Click and Type; Press sends its key
to whatever has focus and Scroll moves the page, so both ignore it.
Failures never raise: they come back as ``(False, reason)`` so the step can be recorded.
"""

from __future__ import annotations

import re

from evaluator.agents.params import TargetingParams
from evaluator.agents.targeting import typed_text
from evaluator.agents.words import normalize

# Spoken key names -> Playwright key names.
KEY_ALIASES = {
    "enter": "Enter", "return": "Enter", "esc": "Escape", "escape": "Escape", "tab": "Tab",
    "space": "Space", "spacebar": "Space", "space bar": "Space", "backspace": "Backspace",
    "delete": "Delete", "del": "Delete", "home": "Home", "end": "End",
    "pageup": "PageUp", "page up": "PageUp", "pagedown": "PageDown", "page down": "PageDown",
    "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight",
    "arrowup": "ArrowUp", "arrowdown": "ArrowDown", "arrowleft": "ArrowLeft", "arrowright": "ArrowRight",
    "up arrow": "ArrowUp", "down arrow": "ArrowDown", "left arrow": "ArrowLeft", "right arrow": "ArrowRight",
    "arrow up": "ArrowUp", "arrow down": "ArrowDown", "arrow left": "ArrowLeft", "arrow right": "ArrowRight",
    "ctrl": "Control", "control": "Control", "cmd": "Meta", "command": "Meta", "alt": "Alt", "shift": "Shift",
}
# Key names a description may mention, longest first so "up arrow" wins over "up".
DESCRIBED_KEYS = [
    ("arrow up", "ArrowUp"), ("arrow down", "ArrowDown"), ("arrow left", "ArrowLeft"), ("arrow right", "ArrowRight"),
    ("up arrow", "ArrowUp"), ("down arrow", "ArrowDown"), ("left arrow", "ArrowLeft"), ("right arrow", "ArrowRight"),
    ("arrowup", "ArrowUp"), ("arrowdown", "ArrowDown"), ("arrowleft", "ArrowLeft"), ("arrowright", "ArrowRight"),
    ("page up", "PageUp"), ("page down", "PageDown"), ("space bar", "Space"), ("spacebar", "Space"),
    ("enter", "Enter"), ("return", "Enter"), ("escape", "Escape"), ("esc", "Escape"), ("tab", "Tab"),
    ("backspace", "Backspace"), ("delete", "Delete"), ("space", "Space"),
]
ARROW_WORDS = {"up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight"}

VALUE_JS = "(el) => el.isContentEditable ? el.innerText : (el.value ?? '')"
SCROLL_JS = r"""
() => {
  const before = window.scrollY;
  window.scrollBy({top: window.innerHeight / 2, left: 0, behavior: "instant"});
  const result = {window: [before, window.scrollY], element: null};
  if (Math.abs(window.scrollY - before) > %(min)f) return result;
  // The page itself does not scroll: try its main scroll container (largest visible one).
  let best = null, bestArea = 0;
  for (const el of document.querySelectorAll("*")) {
    if (el.scrollHeight <= el.clientHeight + %(min)f) continue;
    const s = getComputedStyle(el);
    if (!/(auto|scroll|overlay)/.test(s.overflowY)) continue;
    const r = el.getBoundingClientRect();
    const w = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0));
    const h = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
    if (w * h > bestArea) { best = el; bestArea = w * h; }
  }
  if (!best) return result;
  const top = best.scrollTop;
  best.scrollBy({top: Math.min(window.innerHeight, best.clientHeight) / 2, left: 0, behavior: "instant"});
  result.element = [top, best.scrollTop, best.tagName.toLowerCase() + (best.id ? "#" + best.id : "")];
  return result;
}
"""


def perform(page, action, target=None, params=None) -> tuple[bool, str]:
    """Carry out ``action``; return whether it was executed and a one-line reason."""
    p = TargetingParams.from_dict(params)
    kind = getattr(action, "type", None)
    handlers = {"Click": _click, "Type": _type, "Press": _press, "Scroll": _scroll}
    if kind not in handlers:
        return False, f"unknown action type {kind!r}"
    try:
        return handlers[kind](page, action, target, p)
    except Exception as exc:  # the page crashed or closed mid-action: record, never raise
        return False, f"{kind} failed: {_first_line(exc)}"


def _click(page, action, target, p: TargetingParams) -> tuple[bool, str]:
    handle = getattr(target, "handle", None)
    if handle is None:
        return False, getattr(target, "reason", "") or "no element found for the description"
    try:
        point = getattr(target, "point", None)  # iwr-det-16 (glyph_points): on the part drawing the glyph named
        if point is None:
            handle.click(timeout=p.click_timeout_ms)
        else:
            handle.click(timeout=p.click_timeout_ms, position={"x": point[0], "y": point[1]})
    except Exception as exc:
        return False, f"click failed: {_click_problem(exc)}"
    return True, "clicked"


def _click_problem(exc: BaseException) -> str:
    """The useful line of Playwright's error: who intercepted the click, or what was wrong."""
    text = str(exc)
    match = re.search(r"(<[^\n]*?> (?:from <[^\n]*?> subtree )?intercepts pointer events)", text)
    if match:
        return "intercepted: " + match.group(1)[:300]
    for needle in ("not visible", "not enabled", "not stable", "detached", "outside of the viewport"):
        if needle in text:
            return f"element {needle}"
    return _first_line(exc)


def _type(page, action, target, p: TargetingParams) -> tuple[bool, str]:
    text = typed_text(action)
    if text is None:
        return False, "no text to type: the action has no text and its description quotes none"
    handle = getattr(target, "handle", None)
    if handle is None:
        return False, getattr(target, "reason", "") or "no editable field found for the description"
    try:
        # Clear, then type key by key: pages often listen to keydown/keyup, not only to input.
        handle.fill("", timeout=p.type_timeout_ms)
        handle.type(text, timeout=p.type_timeout_ms)
    except Exception as exc:
        return False, f"typing failed: {_first_line(exc)}"
    if _holds(handle, text):
        return True, "typed"
    try:  # a key handler ate keys: set the value directly
        handle.fill(text, timeout=p.type_timeout_ms)
    except Exception:  # the field refuses this text outright (a number field and letters)
        return False, f"the field holds {_value(handle)[:80]!r}, not the typed text"
    if _holds(handle, text):
        return True, "typed (value set after key-by-key typing did not stick)"
    return False, f"the field holds {_value(handle)[:80]!r}, not the typed text"


def _holds(handle, text: str) -> bool:
    return normalize(text) in normalize(_value(handle))


def _value(handle) -> str:
    try:
        return str(handle.evaluate(VALUE_JS))
    except Exception:
        return ""


def _press(page, action, target, p: TargetingParams) -> tuple[bool, str]:
    key = press_key(action)
    if key is None:
        return False, "no key given and none named in the description"
    try:
        page.keyboard.press(key)  # like the official judge: to whatever has focus
    except Exception as exc:
        return False, f"pressing {key} failed: {_first_line(exc)}"
    return True, f"pressed {key}"


def press_key(action) -> str | None:
    """The Playwright key for a Press action: its ``key`` (normalised), else one its description names."""
    key = getattr(action, "key", None)
    if key:
        return normalize_key(str(key))
    return key_from_description(getattr(action, "description", "") or "")


def normalize_key(key: str) -> str:
    """"enter" -> "Enter", "ctrl+a" -> "Control+a", "up arrow" -> "ArrowUp"; others unchanged."""
    parts = [part.strip() for part in key.split("+")] if len(key) > 1 else [key]
    return "+".join(KEY_ALIASES.get(part.lower(), part) if len(part) > 1 else part for part in parts)


def key_from_description(description: str) -> str | None:
    """A key named in the description ("Press Enter to search", "press the up arrow key")."""
    text = " " + " ".join(re.findall(r"[a-z]+", description.lower())) + " "
    for phrase, key in DESCRIBED_KEYS:
        if f" {phrase} " in text:
            return key
    match = re.search(r" (up|down|left|right) (?:key|arrow)", text)
    return ARROW_WORDS[match.group(1)] if match else None


def _scroll(page, action, target, p: TargetingParams) -> tuple[bool, str]:
    """Official rule: always half a page down; success when the page moved more than scroll_min_px."""
    result = page.evaluate(SCROLL_JS % {"min": p.scroll_min_px})
    before, after = result["window"]
    if abs(after - before) > p.scroll_min_px:
        return True, f"scrolled the page from {before:.0f} to {after:.0f}"
    element = result.get("element")
    if element and abs(element[1] - element[0]) > p.scroll_min_px:
        return True, f"scrolled {element[2]} from {element[0]:.0f} to {element[1]:.0f}"
    return False, f"nothing scrolled (page at {after:.0f}; the page is too short or does not scroll)"


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else type(exc).__name__

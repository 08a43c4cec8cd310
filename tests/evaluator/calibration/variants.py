"""Pages whose place in the ranking is known, made from a task's reference page.

- ``unstyled``: the reference with every stylesheet, ``<style>`` element and ``style``
  attribute removed; scripts untouched (it works, it looks wrong).
- ``broken``: the reference with one interaction disabled at a known action ``k``: the
  events that action needs are swallowed before any page handler sees them (clicks on its
  element or on a label of it, its key, input into its field), or the page ends before its scroll. A sound judge
  passes actions 1..k-1 and stops at k.
- ``text_list``: every text the task ever shows (the reference's ``step_k.json`` texts), as
  a plain list. It holds the right words and does nothing.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from evaluator.authoring import load_script
from evaluator.sample.build import load_manifest

# --------------------------------------------------------------------------- unstyled


class _Unstyler(HTMLParser):
    """Re-emits a document verbatim except style elements, stylesheet links and style attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, self.get_starttag_text(), closed=False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, self.get_starttag_text(), closed=True)

    def _start(self, tag, attrs, raw, closed):
        if tag == "style":
            self._in_style = not closed
            return
        if tag == "link" and any(k == "rel" and v and "stylesheet" in v.lower() for k, v in attrs):
            return
        if any(k == "style" for k, _ in attrs):
            raw = _tag(tag, [(k, v) for k, v in attrs if k != "style"], closed)
        self.out.append(raw)

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        elif not self._in_style:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self._in_style:
            self.out.append(data)

    def handle_entityref(self, name):
        self.out.append(f"&{name};")

    def handle_charref(self, name):
        self.out.append(f"&#{name};")

    def handle_comment(self, data):
        self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")

    def handle_pi(self, data):
        self.out.append(f"<?{data}>")

    def unknown_decl(self, data):
        self.out.append(f"<![{data}]>")


def _tag(tag: str, attrs, closed: bool) -> str:
    parts = [tag] + [k if v is None else f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs]
    return "<" + " ".join(parts) + (" />" if closed else ">")


def unstyled(page: str) -> str:
    """``page`` without any CSS: no ``<style>``, no stylesheet ``<link>``, no ``style`` attribute."""
    parser = _Unstyler()
    parser.feed(page)
    parser.close()
    return "".join(parser.out)


# --------------------------------------------------------------------------- text list


def task_texts(task) -> list[str]:
    """Every line of visible text the reference shows at any step, first appearance order, no repeats."""
    seen: dict[str, None] = {}
    for k in range(len(task.actions) + 1):
        reference = task.load_reference(k) or {}
        for line in str(reference.get("text", "")).splitlines():
            line = " ".join(line.split())
            if line:
                seen.setdefault(line, None)
    return list(seen)


def text_list(task) -> str:
    """A page listing ``task_texts(task)``: the right words, no layout, no behaviour."""
    items = "\n".join(f"<li>{html.escape(text)}</li>" for text in task_texts(task))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Texts</title></head>\n"
            f"<body><ul>\n{items}\n</ul></body></html>\n")


# --------------------------------------------------------------------------- broken at step k


@dataclass(frozen=True)
class Break:
    """Action ``k`` (1-based) is disabled: its ``kind`` of event, from its ``occurrence``-th use on."""

    k: int
    kind: str  # "click" | "key" | "input" | "scroll"
    selector: str | None
    key: str | None
    occurrence: int  # the k-th action is the n-th action of its kind on this selector / key

    def script(self, viewport_height: int) -> str:
        spec = {"kind": self.kind, "selector": self.selector, "key": self.key, "from": self.occurrence,
                "half": viewport_height / 2}
        return "<script>\n(" + _BREAK_JS.strip() + ")(" + json.dumps(spec) + ");\n</script>\n"


# Registered first (top of <head>) on window in the capture phase, so no page handler runs
# before it. Counting uses the first event of each gesture: pointerdown for a click,
# keydown for a key press, focus for a typing session.
_BREAK_JS = r"""
function (spec) {
  let seen = 0, blocking = false;
  // The action's element, or a label of it: clicking a form control's label is clicking the control.
  const labelled = (el) => { const label = el.closest("label"); return !!(label && label.control
    && label.control.matches(spec.selector)); };
  const hit = (e) => !spec.selector || (e.target instanceof Element
    && (e.target.closest(spec.selector) || (spec.kind === "click" && labelled(e.target))));
  const swallow = (e) => { e.preventDefault(); e.stopImmediatePropagation(); };
  const count = (type, test) => window.addEventListener(type, (e) => {
    if (test(e)) { seen += 1; blocking = seen >= spec.from; }
  }, true);
  const block = (types, test) => types.forEach((type) => window.addEventListener(type, (e) => {
    if (blocking && test(e)) swallow(e);
  }, true));
  if (spec.kind === "click") {
    count("pointerdown", hit);
    block(["pointerdown", "mousedown", "pointerup", "mouseup", "click", "dblclick"], hit);
  } else if (spec.kind === "key") {
    const isKey = (e) => e.key === spec.key && hit(e);
    count("keydown", isKey);
    block(["keydown", "keypress", "keyup"], isKey);
  } else if (spec.kind === "input") {
    count("focusin", hit);
    block(["keydown", "keypress", "beforeinput", "paste"], hit);
    window.addEventListener("input", (e) => { if (blocking && hit(e)) { e.target.value = ""; } }, true);
  } else if (spec.kind === "scroll") {
    // The page ends where scroll number `from` would start: it cannot move any further.
    const cut = () => {
      const height = (innerHeight + (spec.from - 1) * spec.half) + "px";
      for (const el of [document.documentElement, document.body]) {
        el.style.setProperty("height", height, "important");
        el.style.setProperty("max-height", height, "important");
        el.style.setProperty("overflow", "hidden", "important");
      }
    };
    document.addEventListener("DOMContentLoaded", cut);
  }
}
"""

_KIND = {"Click": "click", "Press": "key", "Type": "input", "Scroll": "scroll"}


def script_actions(task_key: str) -> list:
    """The authoring script's actions (with their recording selectors) of a sample task."""
    _, tasks = load_manifest()
    for sample in tasks:
        if sample.script.stem == task_key:
            return load_script(sample.script).actions
    raise KeyError(f"{task_key} is not a sample task")


def break_step(actions) -> int:
    """The action to break: one the judge can see fail (it carries an assertion or types text).

    The one nearest the middle of the task, later on a tie, so that the broken page keeps
    the credit of the actions before it; action 1 only when nothing else qualifies.
    """
    n = len(actions)
    checkable = [k for k, a in enumerate(actions, 1)
                 if (a.logical_assertion or a.type == "Type") and _breakable(actions, k)]
    later = [k for k in checkable if k > 1] or checkable
    return min(later, key=lambda k: (abs(k - (n + 1) / 2), -k))


def _breakable(actions, k: int) -> bool:
    """Typing is counted by focus, which only the first typing session into a field reliably gives."""
    action = actions[k - 1]
    if action.type in ("Click", "Type") and not action.selector:
        return False
    return action.type != "Type" or plan_break(actions, k).occurrence == 1


def plan_break(actions, k: int) -> Break:
    """How to disable action ``k`` of ``actions`` (authoring script actions, selectors included)."""
    action = actions[k - 1]
    kind = _KIND[action.type]
    key = action.parameters.get("key") if kind == "key" else None
    selector = None if kind in ("key", "scroll") else action.selector
    if kind in ("click", "input") and not selector:
        raise ValueError(f"action {k} ({action.type}) has no selector to break")
    same = [a for a in actions[:k] if a.type == action.type and _same_target(a, action, kind)]
    return Break(k, kind, selector, key, len(same))


def _same_target(a, b, kind: str) -> bool:
    if kind == "key":
        return a.parameters.get("key") == b.parameters.get("key")
    if kind == "scroll":
        return True
    return a.selector == b.selector


def broken(page: str, plan: Break, viewport_height: int) -> str:
    """``page`` with the breaking script inserted before everything else in the document."""
    script = plan.script(viewport_height)
    lower = page.lower()
    head = lower.find("<head")
    if head >= 0:
        at = lower.index(">", head) + 1
        return page[:at] + "\n" + script + page[at:]
    return script + page


def reference_html(task) -> str:
    return (Path(task.root) / "reference" / "site" / "index.html").read_text(encoding="utf-8")

"""Step-level truth for the calibration pages, from the builder's own replay (never from the judge).

Each page (the reference and every variant) is replayed the way the recorder played the
authoring script: same page session (fake origin, fixed clock, seeded randomness), same
selectors, same settle / clock step / settle after each action. After every step the page's
*state* is read:

- ``words``: the words of the document's text, leaving out what the page itself hides with
  the ``hidden`` attribute, ``aria-hidden`` or an inline ``display: none`` / ``visibility:
  hidden`` that its scripts set (no stylesheet is consulted: an unstyled copy has the same text),
  and what is laid out wholly beside the page, where no scrolling reaches it (a slide-in menu parked
  left of the window until it opens: its words appear when it slides in);
- ``scroll``: the window's scroll position;
- ``elements`` (compared between pages made from the same document): every element's state
  that is not styling: tag, classes, its place (among its siblings, and its parent's and
  grandparent's among theirs), ``aria-*``, ``checked``,
  ``disabled``, ``open``, ``selected`` and ``value``. The elements the action names (its
  selector) and the assertion names (its quoted phrases) are part of this set; carousels, tabs
  and highlighted items show up here as moved classes.

A step's *change* is the difference between its state and the one before (words and element
states as multisets; scroll as the direction it moved on each axis, since an unstyled page has
other heights). A variant does step ``k`` like the reference when its change at ``k`` equals
the reference's and its action could be performed. The first step where it does not is the
step a sound judge must fail; every step before it must pass. A page is read once it has come to
rest (see ``_state``), the reference as every variant.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Reads the state described above; returns {"words": [...], "scroll": [x, y], "elements": [...]}.
STATE_JS = r"""
() => {
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "TITLE", "HEAD"]);
  const hiddenByPage = (el) => el.hidden || el.getAttribute("aria-hidden") === "true"
    || el.style.display === "none" || el.style.visibility === "hidden";
  const words = [], elements = [];
  // An element's place: its index among its parent's rendered children, and its parent's and
  // grandparent's the same way, so that a class moving between cousins (one item of one submenu
  // to one of another) is a change. Scripts, styles and <link>s are not counted: a scripts-stripped
  // snapshot has the same places as the page it was taken from.
  const UNCOUNTED = new Set([...SKIP, "LINK"]);
  const indexAmongRendered = (el) => {
    let index = 0;
    for (let sib = el.previousElementSibling; sib; sib = sib.previousElementSibling)
      if (!UNCOUNTED.has(sib.tagName)) index += 1;
    return index;
  };
  const PLACE_LEVELS = 3;
  const placeOf = (el) => {
    const parts = [];
    for (let node = el, level = 0; node && node !== document.body && level < PLACE_LEVELS;
         node = node.parentElement, level += 1)
      parts.push(indexAmongRendered(node));
    return parts.reverse().join("/");
  };
  const describe = (el) => {
    const place = placeOf(el);
    const cls = [...el.classList].sort().join(".");
    const attrs = [...el.attributes].filter((a) => a.name.startsWith("aria-") && a.name !== "aria-hidden")
      .map((a) => a.name + "=" + a.value).sort();
    for (const prop of ["checked", "disabled", "open", "selected"]) if (el[prop] === true) attrs.push(prop);
    if (typeof el.value === "string" && el.tagName !== "BUTTON" && el.tagName !== "OPTION" && el.tagName !== "LI")
      attrs.push("value=" + el.value);
    const state = attrs.length ? "{" + attrs.join(",") + "}" : "";
    return el.tagName.toLowerCase() + "[" + place + "]" + (cls ? "." + cls : "") + state;
  };
  // Laid out wholly left of the page or right of its scrollable width: no scrolling shows it.
  const pageWidth = Math.max(document.documentElement.scrollWidth, innerWidth);
  const besideThePage = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 && r.height <= 0) return false;
    return r.right + scrollX <= 0 || r.left + scrollX >= pageWidth;
  };
  const walk = (node, shown) => {
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        if (shown) for (const w of child.textContent.split(/\s+/)) if (w) words.push(w);
      } else if (child.nodeType === Node.ELEMENT_NODE && !SKIP.has(child.tagName)) {
        if (hiddenByPage(child)) continue;
        elements.push(describe(child));
        walk(child, shown && !besideThePage(child));
      }
    }
  };
  if (document.body) walk(document.body, true);
  return {words, scroll: [Math.round(scrollX), Math.round(scrollY)], elements};
}
"""


@dataclass(frozen=True)
class Change:
    """What one step changed: words and element states gained and lost, scroll direction per axis."""

    words_added: tuple
    words_removed: tuple
    scroll: tuple[int, int]
    elements_added: tuple
    elements_removed: tuple

    @property
    def empty(self) -> bool:
        return not (self.words_added or self.words_removed or any(self.scroll)
                    or self.elements_added or self.elements_removed)


def change(before: dict, after: dict) -> Change:
    """The change from state ``before`` to state ``after``."""
    def diff(key):
        old, new = Counter(before[key]), Counter(after[key])
        return tuple(sorted((new - old).elements())), tuple(sorted((old - new).elements()))

    words_added, words_removed = diff("words")
    elements_added, elements_removed = diff("elements")
    scroll = tuple(_sign(b - a) for a, b in zip(before["scroll"], after["scroll"], strict=True))
    return Change(words_added, words_removed, scroll, elements_added, elements_removed)


def _sign(value: int, tolerance: int = 2) -> int:
    return 0 if abs(value) <= tolerance else (1 if value > 0 else -1)


@dataclass
class Replay:
    """One page replayed: its state after each step (index 0: loaded) and the steps whose action failed."""

    states: list[dict]
    failed: dict[int, str]  # step -> why its action could not be performed

    def changes(self) -> list[Change]:
        return [change(self.states[k - 1], self.states[k]) for k in range(1, len(self.states))]


def first_divergence(reference: Replay, variant: Replay, same_document: bool = True) -> int | None:
    """The first step (1-based) the variant does not do like the reference; None when it does all.

    ``same_document``: the variant is made from the reference's own document (unstyled, broken,
    snapshot, ...), so element states correspond one to one and are compared too. An independent
    implementation has its own elements: only its words and scroll are compared, and its actions
    must be performable with the authoring selectors.
    """
    ours, theirs = variant.changes(), reference.changes()
    for k, (mine, wanted) in enumerate(zip(ours, theirs, strict=True), start=1):
        if k in variant.failed and k not in reference.failed:
            return k
        if not same_document:
            mine, wanted = _without_elements(mine), _without_elements(wanted)
        if mine != wanted:
            return k
    return None


def _without_elements(step: Change) -> Change:
    return Change(step.words_added, step.words_removed, step.scroll, (), ())


def replay_page(browser, index: Path, assets: Path | None, script) -> Replay:
    """Replay ``script`` (an authoring Script) on the page ``index`` exactly as the recorder plays it."""
    from evaluator.authoring.recorder import perform, recording_settle
    from evaluator.authoring.script import AuthoringError
    from evaluator.bundle import read_page
    from evaluator.page_session import SiteMap, page_session

    site = SiteMap.for_page(index, assets, index_text=read_page(index))
    states, failed = [], {}
    # The recorder's own settle (page-time animations, layout settling): what a step reaches
    # then depends on page time only, not on the machine's load.
    with page_session(browser, site, script.width, script.height, settle_params=recording_settle()) as session:
        states.append(_state(session))
        for k, action in enumerate(script.actions, start=1):
            try:
                perform(session.page, action, k)
            except AuthoringError as exc:
                failed[k] = str(exc)
            session.after_action()
            states.append(_state(session))
    return Replay(states, failed)


# A step's state is read once the page has come to rest: after the replay's own settle, clock
# step and settle, page time moves on in short steps (and real time passes, for CSS transitions)
# until two reads in a row agree and no transition or animation is running. Animated filters
# and sorts otherwise finish, or queue the next click, at a moment that depends on the machine's
# load, and the truth must not. Every page, the reference included, is read the same way.
STABLE_READS_MAX = 20
STABLE_CLOCK_MS = 100
STABLE_READ_GAP_MS = 60


# CSS transitions and animations still running (they run in real time, not on the page clock).
RUNNING_ANIMATIONS_JS = "() => document.getAnimations().filter((a) => a.playState === 'running').length"


def _state(session) -> dict:
    previous = _read(session)
    for _ in range(STABLE_READS_MAX):
        session.advance_clock(STABLE_CLOCK_MS)
        session.page.wait_for_timeout(STABLE_READ_GAP_MS)
        session.settle(frames=1)
        current = _read(session)
        if current == previous and not _animating(session):
            break
        previous = current
    return previous


def _animating(session) -> bool:
    try:
        return session.page.evaluate(RUNNING_ANIMATIONS_JS) > 0
    except Exception:
        return False


def _read(session) -> dict:
    try:
        return session.page.evaluate(STATE_JS)
    except Exception as exc:  # a page that navigated away or crashed: nothing of the task's state is left
        return {"words": [], "scroll": [0, 0], "elements": [f"unreadable: {type(exc).__name__}"]}

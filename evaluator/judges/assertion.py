"""Did the action do what its logical assertion says? Decided without a language model.

Signals (judge-design "Did the action do what the assertion says?"):

- changed: enough pixels differ (compared at reduced scale), or URL / scroll / focus /
  form value / checked state / visible text changed, or the DOM mutated;
- key phrases of the assertion (quoted strings, numbers, capitalised phrases; content
  words when there are none of those; see ``evaluator.judges.phrases``) counted in the
  before and after text: in an appearance clause a phrase needs more occurrences after than
  before, in a removal clause fewer, otherwise presence after is enough; a phrase the page
  already showed and the action left alone does not hold when the reference, which showed it
  too, changed it without scrolling (the tiles '2' merged there; here they did not move);
- agreement with the reference: words added and removed between the reference's two
  checkpoints against those added and removed on the generated page (F1).

Pass when the page changed and either the key phrases hold or the deltas agree. When the
assertion has nothing checkable, pass when "changed" matches the reference's "changed".
Whatever the phrases say, a page whose text, DOM, form state and URL all stayed as they were
fails where the reference's own text changed without scrolling: pixels that moved (a scroll,
a hover shade) are not the effect the assertion describes.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field, replace

from rapidfuzz import fuzz

from evaluator.agents.params import AssertionParams
from evaluator.agents.words import count_phrase, normalize, strip_quoted, words
from evaluator.judges.elements import element_check, state_clause_names
from evaluator.judges.phrases import Phrase, key_phrases, polarity
from evaluator.judges.pixels import outside_change_fraction
from evaluator.judges.reference import RefDelta, reference_delta, word_delta
from evaluator.judges.state import PageState, Reached, pixel_change_fraction

__all__ = ["AssertionParams", "RefDelta", "Verdict", "judge", "key_phrases", "polarity", "reference_delta"]


@dataclass
class Verdict:
    """The judge's decision and every signal behind it."""

    passed: bool
    evidence: dict = field(default_factory=dict)
    reason: str = ""

    def to_dict(self) -> dict:
        return {"passed": self.passed, "reason": self.reason, "evidence": self.evidence}


def judge(action, before: PageState, after: PageState, reference: RefDelta | None = None,
          params=None, reached: Reached | None = None) -> Verdict:
    """Decide whether ``action``'s logical assertion holds on the generated page.

    ``reached``: the view a click scrolled to before pressing its target (iwr-det-8, ``acting_scroll``)."""
    p = AssertionParams.from_dict(params)
    assertion = (getattr(action, "logical_assertion", None) or "").strip()
    changes = change_signals(before, after, p)
    changed = any(v for k, v in changes.items() if k not in ("pixel_fraction",))
    evidence: dict = {"assertion": assertion, "changed": changed, "changes": changes}
    if not assertion:
        return Verdict(True, evidence, "no assertion to check")
    if p.acting_scroll and reached is not None and _idle_after_reaching(action, assertion, before, after, reached,
                                                                        changes, p):
        evidence["idle_after_reaching"] = True
        return Verdict(False, evidence, "the view scrolled to reach the target, and from there the click changed "
                                        "nothing the assertion says it did")
    mode = polarity(assertion)
    ref_words = (reference.added + reference.removed) if reference is not None else []
    phrases = key_phrases(assertion, before.text, after.text, ref_words, participles=p.participle_cues)
    if p.typed_text_not_evidence:
        phrases = _without_typed_words(phrases, action)
    texts = {m: _texts(before, after, m) for m in ("appearance", "removal", "state", "unchanged")}
    checks = [_check(ph, texts, p) for ph in phrases]
    checks = _ocr_retry(checks, phrases, texts, before, after, p, evidence) or checks
    if p.block_text_phrases:
        _count_in_blocks(checks, phrases, before, after, p)
    if p.merged_view_phrases and not _moved(before.scroll, after.scroll, p.scroll_epsilon):
        _count_merged_in_view(checks, phrases, before, after, p)
    if p.form_value_phrases and getattr(action, "type", "") != "Type":
        _count_in_form_values(checks, phrases, before, after, p)
    _mark_stale(checks, phrases, action, before, after, reference, p)
    if p.idle_phrases:
        _mark_idle(checks, phrases, action, before, after, reference, p)
    if p.view_appearance:
        _mark_out_of_view(checks, phrases, action, after, reference, p)
    if p.element_state:
        checks = _element_checks(assertion, checks, _reached_view(before, reached, p), after, reference, p,
                                 reached=_reached_claim(action, assertion, reached, after, p))
    if p.unchanged_reference_state and _reference_same(reference, p) and checks:
        checks = [_as_state(c) for c in checks]
        evidence["reference_unchanged"] = True
    if p.commensurate_change and changed and not _commensurate(changes, reference, p, before, after) \
            and not _page_reacted(changes, reference, p):
        changed = evidence["changed"] = False
        evidence["commensurate"] = False
    delta = _delta_agreement(before, after, reference, p)
    evidence.update({"polarity": mode, "phrases": checks, "delta": delta,
                     "reference": reference.to_dict() if reference else None})
    if p.text_change_required and _text_change_missing(action, before, after, changes, reference):
        evidence["text_change_missing"] = True
        return Verdict(False, evidence, "the page's text, DOM and form state did not change; the reference's "
                                        "text did")
    return _decide(evidence, checks, delta, mode, changed, reference, p,
                   drawn=max(before.canvas_share, after.canvas_share) > 0.1)


def reaction_missing(action, before: PageState, after: PageState, reference: RefDelta | None,
                     params=None) -> bool:
    """An action without an assertion that the page ignored where the reference visibly reacted
    (``unasserted_reaction``): the reference's authored text changed in place and the page changed
    nothing, neither its text, DOM, form state nor URL."""
    p = AssertionParams.from_dict(params)
    if not p.unasserted_reaction or reference is None:
        return False
    return _text_change_missing(action, before, after, change_signals(before, after, p, pixels=False), reference)


# An assertion saying the state is new ("the dark thumbnail now has the gold frame").
CLAIMS_NOW = re.compile(r"\bnow\b", re.I)


def _idle_after_reaching(action, assertion: str, before: PageState, after: PageState, reached: Reached,
                         changes: dict, p: AssertionParams) -> bool:
    """iwr-det-8 (``acting_scroll``): a click whose target lay out of view scrolls the window before it
    presses, so the page "changed" (scroll, nearly every pixel) whatever the click did; where the reference
    scrolled the same way, that change is taken for the effect. Judged from the reached view instead: the
    assertion claims a change (appearance, removal, or "now"), and after the click the page changed nothing:
    not its URL, text, DOM, form state or a field's focus, not the window's scroll, and no pixel outside the
    target (the pointer's hover shade on the target itself is no effect; a scroll container that moved, or
    reaching the target moved one, changes pixels there too). Not where a canvas draws a large part of the
    view, which changes no DOM."""
    if getattr(action, "type", "") != "Click" or not _claims_change(assertion):
        return False
    if max(before.canvas_share, after.canvas_share) > 0.1:
        return False
    if any(changes[k] for k in ("url", "text", "dom", "values", "checked", "focus")):
        return False
    if _moved(reached.scroll, after.scroll, p.scroll_epsilon):
        return False
    outside = outside_change_fraction(reached.screenshot, after.screenshot, list(reached.box), p.diff_scale,
                                      p.pixel_tolerance)
    return outside is not None and outside <= p.pixel_change_fraction


def _text_change_missing(action, before: PageState, after: PageState, changes: dict,
                         reference: RefDelta | None) -> bool:
    """The reference's text changed in place (authoring's DOM text, no scroll), the page's did not.

    Only the authored reference text is trusted here: OCR of two checkpoints differs on a mere
    hover shade. A Scroll is meant to change only what is in view, and text drawn on a canvas
    changes no DOM, so neither can be judged this way.
    """
    if reference is None or reference.source != "reference" or reference.scrolled is not False:
        return False
    if not (reference.added or reference.removed) or getattr(action, "type", "") == "Scroll":
        return False
    if max(before.canvas_share, after.canvas_share) > 0.1:
        return False
    return not any(changes[k] for k in ("url", "text", "dom", "values", "checked"))


def _claims_change(assertion: str) -> bool:
    """The assertion says something appeared, went, or is so 'now' (not a state that merely holds)."""
    return polarity(assertion) in ("appearance", "removal") or bool(CLAIMS_NOW.search(strip_quoted(assertion)))


def _states_reached(reached: Reached | None, p: AssertionParams) -> bool:
    """iwr-det-11 (``reached_states``): the click scrolled to reach its target and the named elements' states
    were read in the view it reached."""
    return p.reached_states and reached is not None and reached.elements is not None


def _reached_view(before: PageState, reached: Reached | None, p: AssertionParams) -> PageState:
    """iwr-det-11 (``reached_states``): the page just before the click pressed, where reaching its target
    scrolled the window: the named elements' states and the screenshot of the view reached. Before the action
    they lay out of view, so an element there counted as new whatever the click did to it."""
    if not _states_reached(reached, p):
        return before
    return replace(before, elements=reached.elements, screenshot=reached.screenshot, scroll=reached.scroll)


def _reached_claim(action, assertion: str, reached: Reached | None, after: PageState, p: AssertionParams) -> bool:
    """iwr-det-11: a click that scrolled to reach its target, read there (``reached_states``), did not move the
    window after pressing, and its assertion claims a change (appearance, removal or 'now'): a named element
    the click left as the reached view showed it, in its state and its pixels, is then a clause not done."""
    if not _states_reached(reached, p) or getattr(action, "type", "") != "Click":
        return False
    return not _moved(reached.scroll, after.scroll, p.scroll_epsilon) and _claims_change(assertion)


def _element_checks(assertion: str, checks: list[dict], before, after, reference, p,
                    reached: bool = False) -> list[dict]:
    """Phrases naming the subject of a visible-state clause are judged on that element's state; ``reached``:
    ``before`` is the view a click scrolled to, and the assertion claims a change (:func:`_reached_claim`)."""
    names = state_clause_names(assertion)
    changing = state_clause_names(assertion, steady=False) if reached else set()
    out = []
    for check in checks:
        name = normalize(check["phrase"])
        judged = element_check(name, before, after, reference, p, reached=name in changing) \
            if name in names else None
        out.append(judged or check)
    return out


def _without_typed_words(phrases: list[Phrase], action) -> list[Phrase]:
    """A Type action's own text is its input, not its effect: a content word found only because it
    was typed ("blue" typed into a filter box) is dropped; quoted and named phrases stay."""
    if getattr(action, "type", "") != "Type":
        return phrases
    typed = set(words(getattr(action, "text", None) or ""))
    return [ph for ph in phrases if not (ph.kind == "word" and normalize(ph.text) in typed)]


def _reference_same(reference: RefDelta | None, p: AssertionParams) -> bool:
    """The reference's two checkpoints show the same: no word, scroll or (almost no) pixel changed."""
    if reference is None or reference.changed is not False or reference.added or reference.removed:
        return False
    fraction = (reference.detail or {}).get("pixel_fraction")
    return fraction is not None and fraction <= p.reference_same_fraction and not reference.scrolled


def _as_state(check: dict) -> dict:
    """Where the reference did not change, an appearance or removal phrase is a state to be in:
    shown after the action, or (removal) not shown."""
    if check["mode"] not in ("appearance", "removal") or check["kind"] == "element":
        return check
    holds = check["after"] > 0 if check["mode"] == "appearance" else check["after"] == 0
    return {**check, "mode": "state", "holds": holds, "reference_unchanged": True}


def _commensurate(changes: dict, reference: RefDelta | None, p: AssertionParams,
                  before: PageState | None = None, after: PageState | None = None) -> bool:
    """The page's change can be the reference's: it changed its text or scrolled, or it changed at least a
    ``commensurate_ratio`` share of the pixels the reference changed where that was a large part (a
    ticked box alone is not the grid the reference filtered; a new URL fragment is not a jump).

    With ``commensurate_tolerance`` both shares are counted at that channel tolerance: white cards
    leaving a light grey page change few pixels at the page-wide tolerance."""
    if changes["text"] or changes["scroll"]:  # content changed: its pixels depend on the page's layout
        return True
    ref_fraction = (reference.detail or {}).get("pixel_fraction") if reference is not None else None
    page_fraction = changes["pixel_fraction"] or 0.0
    if p.commensurate_tolerance and reference is not None and reference.images is not None \
            and before is not None and after is not None:
        fine_ref = _fine_fraction(*reference.images, p)
        fine_page = pixel_change_fraction(before.screenshot, after.screenshot, p.diff_scale, p.commensurate_tolerance)
        if fine_ref is not None and fine_page is not None:
            ref_fraction, page_fraction = fine_ref, fine_page
    if not ref_fraction or ref_fraction <= 10 * p.pixel_change_fraction:
        return True
    return page_fraction >= p.commensurate_ratio * ref_fraction


def _fine_fraction(path_a, path_b, p: AssertionParams) -> float | None:
    try:
        return pixel_change_fraction(path_a.read_bytes(), path_b.read_bytes(), p.diff_scale, p.commensurate_tolerance)
    except OSError:
        return None


def _page_reacted(changes: dict, reference: RefDelta | None, p: AssertionParams) -> bool:
    """The page's own scripts changed its DOM (a class, an ARIA state, an inline style: a native tick
    or a fragment link changes none) where the reference changed in place: that is its reaction,
    however little its stylesheet draws of it (an unstyled copy's filtered grid). Not where the
    reference scrolled, whose change is the view moving: a link that only marks itself active is
    not the jump the reference made."""
    if not p.dom_reaction_commensurate or reference is None or reference.scrolled is not False:
        return False
    return bool(changes.get("dom"))


def _decide(evidence, checks, delta, mode, changed, reference, p, drawn: bool = False) -> Verdict:
    ref_changed = reference.changed if reference is not None else None
    if evidence.get("reference_unchanged"):
        phrases_hold = _phrases_hold(checks, p)
        evidence.update({"phrases_hold": phrases_hold})
        return Verdict(phrases_hold, evidence, f"reference unchanged, described state: phrases hold={phrases_hold}")
    if not checks and p.unchanged_reference_state and _reference_same(reference, p):
        return Verdict(True, evidence, "no checkable phrase and the reference shows no change: nothing to compare")
    if not checks:
        expected = ref_changed if ref_changed is not None else mode != "unchanged"
        passed = changed == expected
        measured = reference is not None and (reference.detail or {}).get("pixel_fraction") is not None
        if p.unchanged_reference_state and changed and measured and not _reference_same(reference, p):
            passed = True  # the reference changed too, if less than pixel_change_fraction (a highlight moving)
        if passed and p.unphrased_text_delta and _other_words_changed(evidence["changes"], delta, reference):
            evidence["other_words_changed"] = True
            return Verdict(False, evidence, "no checkable phrase: the page's words changed, none of them as "
                                            "the reference's did")
        return Verdict(passed, evidence, f"no checkable phrase: page changed={changed}, expected {expected}")
    held = sum(1 for c in checks if c["holds"]) / len(checks)
    agree = delta["f1"] is not None and delta["f1"] >= p.delta_f1
    if all(c.get("idle") for c in checks) and mode != "unchanged":
        evidence.update({"phrases_held": round(held, 4), "phrases_idle": True, "deltas_agree": agree})
        passed = changed and agree
        why = "page did not change" if not changed else f"every phrase idle in the reference: deltas agree={agree}"
        return Verdict(passed, evidence, why)
    checks = [c for c in checks if not c.get("idle")]
    not_done = [c for c in checks if _element_not_done(c)] if p.element_clauses_decide else []
    if not_done:
        undone = [c["phrase"] for c in not_done]
        evidence.update({"phrases_held": round(held, 4), "elements_not_done": undone, "deltas_agree": agree})
        names = ", ".join(repr(n) for n in undone)
        if all(c.get("still_after_reaching") for c in not_done):
            return Verdict(False, evidence, f"the click scrolled to reach its target and left {names} there as it "
                                            "was (state and pixels), though the assertion says it changed")
        return Verdict(False, evidence, f"the reference changed {names} where it stands; the page left it as it was")
    absent = [c["phrase"] for c in checks if _quote_absent(c, evidence["changes"], reference, p, drawn)] \
        if p.absent_quotes_decide and mode != "unchanged" else []
    if absent:
        evidence.update({"phrases_held": round(held, 4), "quotes_absent": absent, "deltas_agree": agree})
        how = "changed without it" if evidence["changes"].get("text") else "do not show it"
        return Verdict(False, evidence, f"the reference's words gained {', '.join(repr(q) for q in absent)}; the "
                                        f"page's words {how}")
    phrases_hold = _phrases_hold(checks, p)
    evidence.update({"phrases_held": round(held, 4), "phrases_hold": phrases_hold, "deltas_agree": agree})
    if mode == "unchanged":
        passed = phrases_hold
        return Verdict(passed, evidence, f"state assertion: phrases hold={phrases_hold}")
    passed = changed and (phrases_hold or agree)
    why = "page did not change" if not changed else f"phrases hold={phrases_hold}, deltas agree={agree}"
    return Verdict(passed, evidence, why)


def _other_words_changed(changes: dict, delta: dict, reference: RefDelta | None) -> bool:
    """iwr-det-4 (``unphrased_text_delta``): the reference's authored words changed in place, the
    page's words changed too, without scrolling, and not one of its added or removed words is one the
    reference added or removed: another control's effect (a card's menu opened where the sidebar
    came back). A page whose words did not change at all is judged as before."""
    if reference is None or reference.source != "reference" or reference.scrolled is not False:
        return False
    if not (reference.added or reference.removed) or not changes.get("text") or changes.get("scroll"):
        return False
    return delta.get("f1") == 0.0


def _phrases_hold(checks: list[dict], p: AssertionParams) -> bool:
    """Enough phrases hold in each group: phrases that must appear or go (the action's effect)
    and phrases that must merely be shown; a shown counter cannot make up for a missing item."""
    groups = ([c for c in checks if c["mode"] in ("appearance", "removal")],
              [c for c in checks if c["mode"] not in ("appearance", "removal")])
    return all(sum(c["holds"] for c in group) / len(group) >= p.phrase_fraction for group in groups if group)


# --------------------------------------------------------------------------- change signals


def _element_not_done(check: dict) -> bool:
    """iwr-det-8 (``element_clauses_decide``): a clause about a named element seen not done, which fails the
    step however many other phrases hold and whatever the word delta says. The reference changed at the
    element's place (measured, so not where it scrolled); on the page the element's state did not change and
    its place does not look like the reference's. Or (iwr-det-11) the reference scrolled, and the page's click
    scrolled to reach its target too, and there left the element as it was, in its state and its pixels, though
    the assertion claims a change."""
    return check["kind"] == "element" and check["mode"] == "appearance" and not check["holds"] \
        and (check.get("reference_change") is not None or bool(check.get("still_after_reaching")))


def _quote_absent(check: dict, changes: dict, reference: RefDelta | None, p: AssertionParams | None = None,
                  drawn: bool = False) -> bool:
    """iwr-det-9 (``absent_quotes_decide``): a quoted phrase said to appear, which the reference's words gained
    at this step (it shows more often in the reference's text after than before), is nowhere on the page after
    the action, though the page's own words changed: the page did something else (another tab opened, a link
    left for a picture file). Only where the page's words changed, so a page drawing its words (a canvas, an
    image) is not judged by its missing text. Under ``absent_quotes_undrawn`` (iwr-det-10) a page whose words did
    not change is judged so too, unless a canvas draws a large part of it: "A dialog titled 'Dialog Title'
    opens" on a page whose button did nothing but scroll into view passed on the word delta of the scroll."""
    if check["kind"] != "quoted" or check["mode"] != "appearance" or check["holds"] or check["after"]:
        return False
    if reference is None or not reference.texts:
        return False
    if not changes.get("text") and not (p is not None and p.absent_quotes_undrawn and not drawn):
        return False
    before, after = reference.texts
    quoted = words(check["phrase"])
    return bool(quoted) and _runs(words(after), quoted) > _runs(words(before), quoted)


def _runs(text: list[str], phrase: list[str]) -> int:
    """How often the words of ``phrase`` occur in a row in ``text`` (words, so '1/3' is found where the
    reference's text holds the counter as '1', '/', '3' on lines of their own)."""
    n = len(phrase)
    return sum(1 for i in range(len(text) - n + 1) if text[i:i + n] == phrase)


def change_signals(before: PageState, after: PageState, p: AssertionParams, pixels: bool = True) -> dict:
    """Each way the page can have changed, as booleans (plus the measured pixel fraction).

    ``pixels=False`` leaves the pixels uncompared (fraction None, ``pixels`` False): the reaction check of an
    action without an assertion reads only the URL, text, DOM and form state, and decoding two screenshots
    for it is work the judge does not need."""
    fraction = pixel_change_fraction(before.screenshot, after.screenshot, p.diff_scale, p.pixel_tolerance) \
        if pixels else None
    return {
        "pixel_fraction": None if fraction is None else round(fraction, 6),
        "pixels": fraction is not None and fraction > p.pixel_change_fraction,
        "url": before.url != after.url,
        "scroll": _moved(before.scroll, after.scroll, p.scroll_epsilon) or _scrollers_moved(before, after, p),
        # a mouse click focuses buttons invisibly; a field taking focus shows a caret and ring
        "focus": before.focus != after.focus and after.focus_editable,
        "values": before.values != after.values,
        "checked": before.checked != after.checked,
        "text": normalize(before.text) != normalize(after.text),
        "dom": p.dom_mutation_counts and before.dom_hash != after.dom_hash,
    }


def _moved(a, b, eps: float) -> bool:
    return any(abs(x - y) > eps for x, y in zip(a, b, strict=False))


def _scrollers_moved(before: PageState, after: PageState, p: AssertionParams) -> bool:
    keys = set(before.scrollers) | set(after.scrollers)
    return any(_moved(before.scrollers.get(k, (0, 0)), after.scrollers.get(k, (0, 0)), p.scroll_epsilon) for k in keys)


# --------------------------------------------------------------------------- key phrases


def _texts(before: PageState, after: PageState, mode: str) -> tuple[str, str]:
    """DOM text; form values too for state checks ("the field shows 'Ada'"), not for appearance:
    text typed into the input is not yet the item the action adds to the list."""
    if mode in ("state", "unchanged"):
        return (before.text + "\n" + before.form_text, after.text + "\n" + after.form_text)
    return (before.text, after.text)


def _check(phrase: Phrase, texts: dict, p: AssertionParams) -> dict:
    n_before, n_after = (_count(phrase, t, p) for t in texts[phrase.mode])
    if phrase.mode == "appearance":
        holds = n_after > n_before
    elif phrase.mode == "removal":
        holds = n_after < n_before
    else:
        holds = n_after > 0
    return {"phrase": phrase.text, "kind": phrase.kind, "mode": phrase.mode, "before": n_before,
            "after": n_after, "holds": holds}


def _count_in_blocks(checks, phrases, before: PageState, after: PageState, p: AssertionParams) -> None:
    """iwr-det-10 (``block_text_phrases``): "a dialog opens with the buttons 'Ok' and 'Cancel'", whose buttons sit
    side by side without a space between them in the markup: the document's text (innerText) reads "OkCancel",
    so 'Ok' was never found. A quoted phrase the document's text shows neither before nor after the action is
    counted in the text blocks in view instead, both times, where every text node stands on its own."""
    for i, (check, phrase) in enumerate(zip(checks, phrases, strict=False)):
        if check["kind"] != "quoted" or check["before"] or check["after"]:
            continue
        seen = _check_in_view(phrase, before, after, p)
        if seen["before"] or seen["after"]:
            checks[i] = seen


def _count_merged_in_view(checks, phrases, before: PageState, after: PageState, p: AssertionParams) -> None:
    """iwr-det-11 (``merged_view_phrases``): "a colour picker opens with the buttons 'cancel' and 'choose'": the
    picker's two buttons sit side by side without a space between them, so the document's text reads
    'cancelchoose' and gains no whole 'cancel' when they show, while the page's text says 'cancel' elsewhere all
    along (iwr-det-10's block_text_phrases counts in view only a phrase the document's text never shows). A
    quoted phrase said to appear whose count in the document's text did not change is counted in the text blocks
    in view too, where every text node stands on its own; when more of it shows there after the action, that
    count holds. Only where the window did not scroll: a scroll brings words into view without showing them."""
    _recount_unchanged(checks, phrases, lambda phrase: _check_in_view(phrase, before, after, p))


def _count_in_form_values(checks, phrases, before: PageState, after: PageState, p: AssertionParams) -> None:
    """iwr-det-12 (``form_value_phrases``): "the text box now shows '02/14/2024'" after a click on a calendar's day:
    the date is the text box's value, which the document's text (innerText) leaves out, and a phrase said to
    appear is counted in that text only, so the step failed on the reference page. A quoted phrase said to appear
    whose count in the document's text did not change is counted in the text and the fields' values together,
    and holds when more of it shows there after the action. Not after a Type action, whose own text fills the
    field it typed into (``judge`` does not call this for one)."""
    texts = (before.text + "\n" + before.form_text, after.text + "\n" + after.form_text)
    _recount_unchanged(checks, phrases,
                       lambda phrase: {**_check(phrase, {phrase.mode: texts}, p), "source": "form values"})


def _recount_unchanged(checks, phrases, recount) -> None:
    """Each quoted phrase said to appear that does not hold, whose count in the document's text did not change and
    that no other source counted yet, counted again by ``recount`` (its check, with the source it read); that
    count replaces the first where it holds."""
    for i, (check, phrase) in enumerate(zip(checks, phrases, strict=False)):
        if check["kind"] != "quoted" or check["mode"] != "appearance" or check["holds"] or check.get("source"):
            continue
        if check["before"] != check["after"]:
            continue
        seen = recount(phrase)
        if seen["holds"]:
            checks[i] = seen


def _check_in_view(phrase: Phrase, before: PageState, after: PageState, p: AssertionParams) -> dict:
    """``phrase`` checked in the text blocks in view, before and after, where each text node stands on its own."""
    return {**_check(phrase, {phrase.mode: (before.viewport_text, after.viewport_text)}, p), "source": "view"}


def _mark_stale(checks, phrases, action, before: PageState, after: PageState, reference: RefDelta | None,
                p: AssertionParams) -> None:
    """A state phrase the page showed before and the action left alone, in the document and in view,
    does not hold where the reference showed it too and changed it: it is not the action's doing.

    The reference's text is what its viewport showed, so a reference that scrolled (or a Scroll
    action) changes it by bringing text into view, which the document text cannot be held to.
    """
    if not p.stale_phrases or reference is None or reference.texts is None or reference.scrolled:
        return
    if getattr(action, "type", "") == "Scroll":
        return
    for check, phrase in zip(checks, phrases, strict=False):
        if not (check["holds"] and phrase.mode == "state" and _shown_alike(check, phrase, before, after, p)):
            continue
        ref_before, ref_after = (_count(phrase, text, p) for text in reference.texts)
        if ref_before > 0 and ref_after != ref_before:
            check.update(holds=False, stale=True, reference=[ref_before, ref_after])


def _mark_idle(checks, phrases, action, before: PageState, after: PageState, reference: RefDelta | None,
               p: AssertionParams) -> None:
    """iwr-det-6 (``idle_phrases``): "'Slide 2' is now the first card in view", where the reference's view
    changed (Slide 1 left it, Slide 2 came in) and the page showed 'Slide 2' before and after alike, in its
    document and in its view. Such a state phrase holds on a page that did nothing: it is marked idle, and a
    step whose phrases are all idle is decided by the word delta instead. Not for a Scroll: it is meant to
    change only what is in view, and where the page's layout differs its view may show the phrase all along
    (as ``_mark_stale`` leaves Scroll actions alone)."""
    if reference is None or not (reference.added or reference.removed) or getattr(action, "type", "") == "Scroll":
        return
    for check, phrase in zip(checks, phrases, strict=False):
        if phrase.mode == "state" and not check.get("stale") and check["holds"] \
                and _shown_alike(check, phrase, before, after, p):
            check["idle"] = True


def _mark_out_of_view(checks, phrases, action, after: PageState, reference: RefDelta | None,
                      p: AssertionParams) -> None:
    """iwr-det-18 (``view_appearance``): "the photo opens large with the caption 'Midnight City' under it", where a
    copy without CSS appended the lightbox, caption and all, at the foot of the page: the document's text gained the
    caption, the view did not. A phrase said to appear that the reference's view gained holds only where the page's
    view shows it after the action. Not where the reference scrolled or for a Scroll (the view's words then differ
    with the layout), nor for a phrase already counted in view."""
    if reference is None or reference.texts is None or reference.scrolled is not False \
            or getattr(action, "type", "") == "Scroll":
        return
    ref_before, ref_after = reference.texts
    for check, phrase in zip(checks, phrases, strict=False):
        if not check["holds"] or check["mode"] != "appearance" or check.get("source") == "view":
            continue
        if _count(phrase, ref_after, p) > _count(phrase, ref_before, p) and not _count(phrase, after.viewport_text, p):
            check.update(holds=False, out_of_view=True)


def _shown_alike(check: dict, phrase: Phrase, before: PageState, after: PageState, p: AssertionParams) -> bool:
    """The page showed the phrase before and after the action alike: as often in its document, and as often
    in its view (a stale or an idle phrase is one of these)."""
    return 0 < check["before"] == check["after"] and \
        _count(phrase, before.viewport_text, p) == _count(phrase, after.viewport_text, p)


def _count(phrase: Phrase, text: str, p: AssertionParams) -> int:
    if phrase.kind == "number":
        return len(re.findall(r"(?<![\d.,])" + re.escape(phrase.text) + r"(?![\d]|[.,]\d)", text))
    exact = count_phrase(text, phrase.text)
    if exact or phrase.kind == "word" or len(phrase.text) < p.min_fuzzy_len or any(ch.isdigit() for ch in phrase.text):
        return exact  # numbers never match approximately: "2 items left" is not "1 item left"
    # fuzzy presence (one occurrence at most): OCR'd text, typography, small wording drift
    return int(fuzz.partial_ratio(normalize(phrase.text), normalize(text)) >= p.fuzzy_phrase)


def _ocr_retry(checks, phrases, texts, before, after, p, evidence) -> list[dict] | None:
    """Text drawn on a canvas is invisible to the DOM: read the screenshots when that may matter."""
    if not (p.ocr_fallback and checks and max(before.canvas_share, after.canvas_share) > 0.1):
        return None
    if all(c["holds"] for c in checks):
        return None
    ocr = (_ocr(before.screenshot), _ocr(after.screenshot))
    if ocr[0] is None or ocr[1] is None:
        return None
    evidence["ocr_used"] = True
    merged = {mode: (a + "\n" + ocr[0], b + "\n" + ocr[1]) for mode, (a, b) in texts.items()}
    return [_check(ph, merged, p) for ph in phrases]


def _ocr(png: bytes | None) -> str | None:
    if png is None:
        return None
    try:
        from PIL import Image

        from evaluator.metrics.ocr import ocr_text
    except ImportError:
        return None
    return ocr_text(Image.open(io.BytesIO(png)))


# --------------------------------------------------------------------------- reference agreement


def _delta_agreement(before: PageState, after: PageState, reference: RefDelta | None, p: AssertionParams) -> dict:
    """F1 of the generated page's word delta against the reference's (viewport and full text)."""
    if reference is None or not (reference.added or reference.removed):
        return {"f1": None, "why": "no reference text delta"}
    ref = _signed(reference.added, reference.removed)
    scores = {}
    for name, (a, b) in {"viewport": (before.viewport_text, after.viewport_text),
                         "document": (before.text, after.text)}.items():
        added, removed = word_delta(a, b)
        scores[name] = signed_f1(_signed(added, removed), ref)
    best = max(scores.values())
    return {"f1": round(best, 4), **{k: round(v, 4) for k, v in scores.items()}}


def _signed(added: list[str], removed: list[str]) -> Counter:
    return Counter(["+" + w for w in added] + ["-" + w for w in removed])


def signed_f1(generated: Counter, reference: Counter) -> float:
    """F1 between two multisets of signed words ("+cart", "-empty")."""
    if not generated or not reference:
        return 0.0
    overlap = sum((generated & reference).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(generated.values())
    recall = overlap / sum(reference.values())
    return 2 * precision * recall / (precision + recall)

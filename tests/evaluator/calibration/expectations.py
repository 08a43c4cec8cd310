"""What each calibration page may score, derived from the task itself, and the judge's known gaps.

A page without scripts can still do what the browser does on its own: hold typed text
and scroll. So a scripts-stripped snapshot may pass a task's leading Type and Scroll
actions and nothing after them, and a page that only lists texts may pass its leading
unchecked Scroll actions (a long list scrolls). Everything else needs the page's code,
except an action the reference itself did not react to (its two checkpoints the same: a
game's move that moved nothing): a page that does nothing there does what the reference did,
as the step-level truth says (tests/evaluator/calibration/truth.py). Such a leading action
counts for the snapshot, and for the empty page when it needs no element (a key press).

``KNOWN_GAPS`` lists the checks the judge fails today, each with the evidence seen; the
tests mark them as strict expected failures, so a fix turns them into reported passes
and the entry must then be removed.
"""

from __future__ import annotations

import pytest

from evaluator.sample.build import load_manifest

STATIC_ACTIONS = ("Type", "Scroll")


def sample_task_keys() -> list[str]:
    """Every task key of the sample benchmark, in manifest order (known without building it)."""
    return [task.script.stem for task in load_manifest()[1]]


def calibration_task_keys() -> list[str]:
    """The tasks the test suite scores: the CI subset of halves.json, or all with IWR_CALIBRATION=full."""
    from tests.evaluator.calibration import halves

    keys = sample_task_keys()
    if halves.full_corpus_requested():
        return keys
    subset = set(halves.ci_subset())
    return [key for key in keys if key in subset]


def todomvc_task_keys() -> list[str]:
    return [key for key in calibration_task_keys() if key.startswith("todomvc-")]


def static_bound(task) -> float:
    """IFS a page without scripts can reach: its leading run of Type / Scroll actions and of actions
    the reference did not react to."""
    idle = reference_idle(task)
    return _leading(task, lambda a: a.type in STATIC_ACTIONS or idle[task.actions.index(a)]) / len(task.actions)


def empty_bound(task) -> float:
    """IFS an empty page can reach: its leading run of key presses the reference did not react to."""
    idle = reference_idle(task)
    return _leading(task, lambda a: a.type == "Press" and idle[task.actions.index(a)]) / len(task.actions)


def reference_idle(task) -> list[bool]:
    """Per action: the reference's checkpoints before and after it are known to be the same: no word and
    no scroll changed, and both screenshots exist and differ in at most the share of pixels the default
    protocol calls the same (an action without screenshots is not known to be idle)."""
    from evaluator.agents.params import AssertionParams
    from evaluator.judges.reference import reference_delta
    from evaluator.protocols import get_protocol

    same = AssertionParams.from_dict(get_protocol().params).reference_same_fraction
    idle = []
    for k in range(1, len(task.actions) + 1):
        delta = reference_delta(task, k)
        pixels = (delta.detail or {}).get("pixel_fraction")
        idle.append(delta.changed is False and not (delta.added or delta.removed or delta.scrolled)
                    and pixels is not None and pixels <= same)
    return idle


def scroll_allowance(task) -> float:
    """IFS a text-only page can reach: its leading Scroll actions that check nothing."""
    return _leading(task, lambda a: a.type == "Scroll" and not a.logical_assertion) / len(task.actions)


def needs_scripts(task) -> bool:
    """Whether some action of the task can only pass on a page that runs code."""
    return static_bound(task) < 1.0


def _leading(task, test) -> int:
    count = 0
    for action in task.actions:
        if not test(action):
            break
        count += 1
    return count


KNOWN_GAPS: dict[tuple[str, str], str] = {
    # Seen with IWR_CALIBRATION=full (2026-12-05, iwr-det-5; still so under iwr-det-6, whose idle_phrases made
    # glider-carousel-phone's snapshot stop at step 1 as its truth says); the truth names the step the judge missed.
    ("snapshot-ifs", "owl-center-phone"): "issue 14 (held-out half): the reference page itself passes only its "
        "leading Scroll (IFS 0.125), so the snapshot's equal IFS is not below half of it",
    # Seen in the calibration report of 2026-12-06 (iwr-det-7) on the tuning half's new off-canvas menu tasks.
    ("unstyled", "hc-offcanvas-levels"): "issue 14 (tuning half): without CSS the menu is drawn open all along, so "
        "the unstyled copy fails step 1 as its truth says; with no step passed it scores Final 0.000, the empty "
        "page's score, so it is not above it",
    # Seen in the calibration report of 2026-12-06 (iwr-det-7) on the tuning half's toast notification demo.
    ("order", "toastr-force-clear"): "issue 14 (tuning half): the copy broken at step 4 cannot show a toast, which "
        "the snapshot cannot either; both stop at step 4 as their truth says, and the broken copy's Final is below "
        "the snapshot's by a hair of VFS (0.5010 against 0.5017), so 'broken > snapshot' does not hold",
    # Seen in the full-corpus self-test of 2026-12-07 (iwr-det-11) on the two new sites' phone tasks.
    ("snapshot-ifs", "spectrum-phone-palette"): "issue 14 (tuning half): the snapshot passes steps 1 and 2 (IFS 0.4): "
        "its table of contents' link jumps to the section without scripts, and step 2, unasserted, clicks the colour "
        "box below the example code, which the snapshot keeps as markup (it opens nothing); the truth says step 1",
    ("snapshot-ifs", "tablesort-phone-born"): "issue 14 (held-out half, measured only): the snapshot passes steps 1 to "
        "3 (IFS 0.6); the truth says step 1",
    ("broken-stop", "tablesort-phone-born"): "issue 14 (held-out half, measured only): the copy broken at step 4 "
        "passes every step",
    ("snapshot-ifs", "gumshoe-scrollspy-nav"): "issue 14 (held-out half): the snapshot passes every step (IFS 1.0): "
        "its in-page links scroll without scripts, and the unmoved highlight is not caught; the truth says step 1",
}

# Known judge gaps (issue 14): tasks of the broad sample whose own reference page today's judge (the default protocol,
# iwr-det-17) does not pass in full, with the IFS it measured (`python -m tests.evaluator.calibration.report --half
# held_out|tuning`, 2026-12-06 to 2026-12-08). Four are in the held-out half, which is measured and never tuned on. Of
# the tuning half, mixitup-remove-cards passes since iwr-det-6, the two hc-offcanvas tasks since iwr-det-7, the date
# picker's two tasks since iwr-det-12, the colour picker's two since iwr-det-13, the carousel playground's two since
# iwr-det-14, the form validation demos' two and the navigation bar's two since iwr-det-15, and the autocomplete
# site's two since iwr-det-17. The photo-lightbox site's phone task (tuning, joined 2026-12-08) fails its first step
# at first contact: 'the second photo under 'Sample gallery', the bridge lit up at night' matches no element;
# iwr-det-18 (registered, not the default: its held-out precision and exact stops are lower) passes it. The self-test
# expects these to fail (strictly: a fix shows up as an unexpected pass, and the entry must then be removed).
# iwr-det-17, found on the tuning half, passed three held-out references that failed before: mmenu-onepage-phone (IFS
# 0.0 to 1.0), featherlight-lightbox-dialogs (0.5 to 1.0) and, in part, mmenu-submenus (0.0 to 0.6). The two
# Featherlight tasks joined the held-out half on 2026-12-07 and failed at first contact (iwr-det-15): the judge's
# first contact with a site nobody tuned it on.
KNOWN_JUDGE_GAPS_ISSUE_14: dict[str, float] = {
    "mmenu-submenus": 0.6,
    "owl-center-phone": 0.25,
    "fomantic-login-validation": 0.5,
    "featherlight-phone-gallery": 0.0,
    "baguettebox-phone-gallery": 0.0,
}
# Tasks whose reference page scored differently on a repeat run (settling under load, issue 14):
# mixitup-color-filter gave VFS 1.0 and then 0.990 (its filter animations end in real time);
# impress-keyboard-tour gave VFS 0.99999997 in the evaluator container and 0.9999942 on the host in one
# run at load 15 (its slides move by 3D CSS transitions; the steps agreed).
# fomantic-dropdown-select (held-out) gave a different reference record in one of two repeat runs of the whole
# corpus, with the site's worker scoring beside it (2026-12-05); the next whole run repeated.
KNOWN_UNREPEATABLE_ISSUE_14: frozenset[str] = frozenset({"mixitup-color-filter", "impress-keyboard-tour",
                                                         "fomantic-dropdown-select"})


def reference_case(key: str):
    """A pytest parameter for a reference-page check, a strict expected failure for a known judge gap."""
    if key in KNOWN_JUDGE_GAPS_ISSUE_14:
        reason = f"known judge gap (issue 14): reference page measured IFS {KNOWN_JUDGE_GAPS_ISSUE_14[key]:.3f}"
        return pytest.param(key, marks=[pytest.mark.xfail(strict=True, reason=reason)], id=key)
    return pytest.param(key, id=key)


def case(check: str, key: str, *values: str):
    """A pytest parameter (``key``, ``values``), a strict expected failure when the judge has a known gap there."""
    reason = KNOWN_GAPS.get((check, ":".join([key, *values])))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(key, *values, marks=marks, id="-".join([key, *values]))


def first_failure(result: dict) -> str:
    """The first step of a task result that did not pass, in one line (for assertion messages)."""
    for step in result["steps"]:
        if not step.get("passed"):
            assertion = (step.get("assertion") or {}).get("reason")
            return f"step {step['index']} ({step['type']}): {step.get('reason')}; assertion: {assertion}"
    return "every step passed"

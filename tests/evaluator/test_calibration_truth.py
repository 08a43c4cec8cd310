"""The calibration corpus's split into halves and its step-level truth (the builder's replay, not the judge).

The halves file must split the tasks by site; the truth must find a broken copy's broken
step on real pages; and the figures must count relations and step verdicts as documented.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evaluator.authoring import load_script
from evaluator.sample.build import load_manifest
from tests.evaluator.calibration import figures, halves, truth
from tests.evaluator.calibration.expectations import calibration_task_keys


def _scripts() -> dict:
    return {task.script.stem: load_script(task.script) for task in load_manifest()[1]}


def test_halves_split_every_task_by_site():
    """Each sample task is in exactly one half, a half's sites are its tasks' hosts, and no site is in both."""
    scripts = _scripts()
    data = halves.load()["halves"]
    placed = Counter(key for half in halves.HALF_NAMES for key in data[half]["tasks"])
    assert set(placed) == set(scripts) and max(placed.values()) == 1
    hosts = {}
    for half in halves.HALF_NAMES:
        hosts[half] = {halves.site_host(scripts[key].source_website).removeprefix("www.")
                       for key in data[half]["tasks"]}
        assert hosts[half] == {site.removeprefix("www.") for site in data[half]["sites"]}, half
    assert not hosts["tuning"] & hosts["held_out"]


def test_halves_are_of_similar_size_and_mix_levels():
    """Neither half holds more than 70% of the tasks; each has at least three interaction levels.

    The tuning half grows as sites are added to tune on (24 of 39 tasks since 2026-12-06, 36 of 53 since the form
    validation demo joined it on 2026-12-07: past two thirds); the held-out half is kept as it is, so its figures
    stay comparable from one protocol version to the next, until new sites nobody tuned on join it."""
    scripts = _scripts()
    sizes = {half: len(halves.half_tasks(half)) for half in halves.HALF_NAMES}
    assert max(sizes.values()) <= 0.7 * sum(sizes.values()), sizes
    for half in halves.HALF_NAMES:
        levels = {scripts[key].classification["interaction_complexity"] for key in halves.half_tasks(half)}
        assert len(levels) >= 3, (half, levels)


def test_the_ci_subset_is_made_of_sample_tasks_from_both_halves():
    subset = halves.ci_subset()
    assert set(subset) <= set(_scripts())
    assert {halves.half_of(key) for key in subset} == set(halves.HALF_NAMES)


def _state(words=(), scroll=(0, 0), elements=()):
    return {"words": list(words), "scroll": list(scroll), "elements": list(elements)}


def test_a_change_compares_words_and_elements_as_multisets_and_scroll_by_direction():
    before = _state(["1", "item", "left"], (0, 0), ["a[0]", "b[1].active"])
    after = _state(["2", "item", "left"], (0, 300), ["a[0].active", "b[1]"])
    step = truth.change(before, after)
    assert step.words_added == ("2",) and step.words_removed == ("1",)
    assert step.scroll == (0, 1)
    assert step.elements_added == ("a[0].active", "b[1]") and step.elements_removed == ("a[0]", "b[1].active")
    # Another page that scrolls by a different amount in the same direction makes the same change.
    assert truth.change(before, {**after, "scroll": [0, 180]}) == step
    assert truth.change(before, before).empty


def test_the_first_divergence_is_the_first_step_whose_change_differs():
    s0, s1, s2 = _state(["a"]), _state(["a", "b"]), _state(["a", "b"], elements=["x[0].on"])
    reference = truth.Replay([s0, s1, s2, s2], {})
    assert truth.first_divergence(reference, truth.Replay([s0, s1, s2, s2], {})) is None
    assert truth.first_divergence(reference, truth.Replay([s0, s1, s1, s1], {})) == 2
    # A step that changes nothing in the reference is done by a page where it changes nothing either...
    assert truth.first_divergence(reference, truth.Replay([s0, s1, s2, s2], {3: "no element"})) == 3
    # ...unless its action could not even be performed there.
    assert truth.first_divergence(reference, truth.Replay([s0, s0, s0, s0], {})) == 1


def _result(final, ifs=0.0, vfs=0.0):
    return {"final": final, "ifs": ifs, "vfs": vfs}


def test_relations_count_every_pair_of_the_chain():
    row = {"reference": _result(1.0, 1.0, 1.0), "impl": _result(0.9), "broken": _result(0.5), "snapshot": _result(0.6),
           "empty": _result(0.0), "text_list": _result(0.1, 0.0), "unstyled": _result(0.4, vfs=0.2)}
    rel = dict(figures.relations(row, ["impl"], needs_scripts=True, scroll_allowance=0.0))
    assert len(rel) == 1 + 2 * 3 + 3 + 1 + 3  # reference>=impl; each upper > 3 lower; chain pairs; text; unstyled
    assert rel["reference >= impl"] and rel["impl > broken"] and not rel["broken > snapshot"]
    assert rel["snapshot > empty"] and rel["text_list gains nothing"]
    assert not rel["unstyled VFS < snapshot VFS"]  # the snapshot's VFS (0.0) is not above the unstyled copy's
    assert rel["unstyled < reference"] and rel["unstyled > empty"]


def test_step_verdicts_judge_the_steps_up_to_the_truths_divergence():
    steps = [{"index": 0, "passed": True}] + [{"index": k, "passed": k < 3} for k in range(1, 6)]
    counts = figures.step_verdicts("t", "broken", {"steps": steps, "steps_passed": 2}, 4, 5)
    assert (counts.tp, counts.fn, counts.tn, counts.fp) == (2, 1, 1, 0)
    assert counts.misses == [("t", "broken", 3, "pass", "fail")]
    assert counts.precision == 1.0 and counts.recall == pytest.approx(2 / 3)
    assert not figures.stops_where_truth_says({"steps_passed": 2}, 4, 5)
    assert figures.stops_where_truth_says({"steps_passed": 5}, None, 5)


# Tasks whose builder replay does not repeat itself (none since the truth replays on the page clock,
# as the recorder does: mixitup-color-filter's animated 'Desc' sort used to end differently).
KNOWN_UNSTABLE_TRUTH: dict[str, str] = {}


def _truth_case(key: str):
    reason = KNOWN_UNSTABLE_TRUTH.get(key)
    return pytest.param(key, marks=[pytest.mark.xfail(strict=False, reason=reason)] if reason else [], id=key)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("key", [_truth_case(key) for key in calibration_task_keys()])
def test_the_truth_finds_the_broken_step_on_real_pages(tmp_path_factory, key):
    """Replayed by the builder, the reference does the same twice and the copy broken at action k first
    differs from it exactly at k."""
    from evaluator.browser import launch
    from tests.evaluator.calibration.build import shared_workspace

    workspace = shared_workspace(tmp_path_factory)
    task = workspace.dataset.task(key)
    script = _scripts()[key]
    assets = Path(task.root) / "assets"
    broken = workspace.variant_set.bundle / f"{key}@broken" / "index.html"
    with launch() as browser:
        index = Path(task.root) / "reference" / "site" / "index.html"
        reference = truth.replay_page(browser, index, assets, script)
        again = truth.replay_page(browser, index, assets, script)
        replay = truth.replay_page(browser, broken, assets, script)
    assert truth.first_divergence(reference, again) is None
    assert truth.first_divergence(reference, replay) == workspace.variant_set.breaks[key].k


def test_an_independent_implementation_is_compared_on_words_and_scroll_only():
    s0, s1 = _state(["a"], elements=["li[0]"]), _state(["a", "b"], elements=["li[0]", "li[1].x"])
    other = _state(["a", "b"], elements=["div[0]", "section[3]"])
    reference, implementation = truth.Replay([s0, s1], {}), truth.Replay([_state(["a"]), other], {})
    assert truth.first_divergence(reference, implementation) == 1
    assert truth.first_divergence(reference, implementation, same_document=False) is None


_COUSINS = ("<ul><li>Phones</li><li class='open'>Laptops</li></ul>"
            "<ul><li>Cables</li><li>Chargers</li></ul>{scripts}")


def _read_state(page, html: str) -> dict:
    page.set_content(html)
    return page.evaluate(truth.STATE_JS)


@pytest.mark.browser
def test_a_class_moving_between_cousins_is_a_change_and_stripped_scripts_are_not():
    """The second item of the first list loses 'open' and the second item of the second list gains it:
    same tag, same index among its siblings, so only the parent's place tells them apart. A copy
    whose scripts were stripped (or an unstyled one, without its stylesheet links) reads the same places."""
    from evaluator.browser import launch

    with launch() as browser:
        context = browser.new_context()
        try:
            page = context.new_page()
            before = _read_state(page, _COUSINS.format(scripts=""))
            moved = _read_state(page, _COUSINS.replace(" class='open'", "").replace(
                "<li>Chargers</li>", "<li class='open'>Chargers</li>").format(scripts=""))
            with_scripts = _read_state(page, "<script>1</script><link rel='stylesheet' href='data:text/css,'>"
                                             + _COUSINS.format(scripts="<script>2</script>"))
        finally:
            context.close()
    step = truth.change(before, moved)
    assert not step.empty
    assert step.elements_added == ("li[0/1]", "li[1/1].open")
    assert step.elements_removed == ("li[0/1].open", "li[1/1]")
    # the <link> is an element of its own, but it shifts no other element's place
    assert [e for e in with_scripts["elements"] if not e.startswith("link")] == before["elements"]


_PANEL = ("<style>#panel{{position:fixed;top:0;width:200px;left:{left}px}} #far{{position:absolute;left:{far}px}}"
          "</style><nav id='panel'><a>Header 1</a> <a>Header 2</a></nav><p>Article text</p>"
          "<div id='far'>Parked copy</div><div style='height:3000px'>Long page</div>")


@pytest.mark.browser
def test_words_laid_out_beside_the_page_appear_when_they_slide_in():
    """A slide-in menu parked left of the window (or a block right of the page's width) shows nothing:
    its words are not read until it slides into view, so a copy whose menu never opens differs from
    the page whose menu did. Words below the window are read (scrolling reaches them)."""
    from evaluator.browser import launch

    with launch() as browser:
        context = browser.new_context(viewport={"width": 400, "height": 300})
        try:
            page = context.new_page()
            parked = _read_state(page, _PANEL.format(left=-200, far=5000))
            opened = _read_state(page, _PANEL.format(left=0, far=5000))
            in_page = _read_state(page, _PANEL.format(left=0, far=100))
        finally:
            context.close()
    assert parked["words"] == ["Article", "text", "Long", "page"]
    step = truth.change(parked, opened)
    assert step.words_added == ("1", "2", "Header", "Header") and not step.words_removed
    assert step.elements_added == step.elements_removed == ()
    assert {"Parked", "copy"} <= set(in_page["words"])

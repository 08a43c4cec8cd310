"""The evaluator's self-test on the sample benchmark: the baseline bundles land where they must.

Each baseline bundle (``evaluator baselines``) is scored on every task of both splits in
ONE ``evaluator score`` run (2 workers, no video). Reference pages must score at the top,
empty pages at the bottom, and scripts-stripped snapshots must keep the look but lose
what needs scripts. Scored twice more, a bundle gives the same results again.
"""

from __future__ import annotations

import pytest

from evaluator.scoring import FINAL_IFS_WEIGHT
from tests.evaluator.calibration import runs
from tests.evaluator.calibration.build import shared_workspace
from tests.evaluator.calibration.expectations import (
    KNOWN_UNREPEATABLE_ISSUE_14,
    calibration_task_keys,
    case,
    empty_bound,
    first_failure,
    needs_scripts,
    reference_case,
    static_bound,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REFERENCE_FINAL = 0.9
EMPTY_FINAL = 0.05
# A snapshot is the reference's own page after its scripts ran, so at the Load checkpoint it must
# keep the look: measured 0.72 (dashboard with charts) to 0.98-1.0 (2048) there, against 0 for an
# empty page; 0.65 keeps a margin for rendering drift and metric tuning, and sits above what a page
# with the right words but not the look gets (unstyled copies: 0.33-0.71). Its task VFS also counts
# the checkpoints after actions it cannot perform, so it depends on how much of the screen the
# reference's actions change (a phone menu that covers the screen: task VFS 0.649, Load 0.900); at
# task level it must stay well above the empty page's.
SNAPSHOT_VFS = 0.65
SNAPSHOT_OVER_EMPTY = 0.3
# "Well below the reference": a snapshot of a task that needs scripts keeps at most half of
# the reference's IFS (measured: 0 to 0.2 where the judge is right).
SNAPSHOT_IFS_GAP = 0.5
EPS = 1e-6
# How long a task and each of its steps took: the only fields of a result that may differ between runs.
WALL_TIME_FIELDS = frozenset({"elapsed_s", "elapsed_ms"})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return shared_workspace(tmp_path_factory)


@pytest.fixture(scope="module")
def scored(workspace):
    """kind -> results.json of that baseline bundle on all tasks (one run per kind)."""
    return {kind: workspace.baseline(kind) for kind in ("reference", "snapshot", "empty")}


def test_it_scores_every_task_of_both_splits_in_one_run_per_kind(scored, workspace):
    """Each baseline run holds every sample task, each with a page and no evaluation error."""
    keys = set(calibration_task_keys())
    assert {t.key for t in workspace.dataset.tasks} == keys
    for kind, results in scored.items():
        assert set(results["tasks"]) == keys, kind
        errors = {key: r["error"] for key, r in results["tasks"].items() if r["error"]}
        assert not errors, f"{kind}: {errors}"
        assert results["summary"]["n_tasks"] == len(keys)


@pytest.mark.parametrize("key", [reference_case(key) for key in calibration_task_keys()])
def test_reference_page_scores_at_the_top(scored, key):
    """The task's own reference page passes every action and scores Final >= 0.9."""
    result = scored["reference"]["tasks"][key]
    assert result["steps_passed"] == result["steps_total"], first_failure(result)
    assert result["final"] >= REFERENCE_FINAL, result["final"]


@pytest.mark.parametrize("key", [case("empty-ifs", key) for key in calibration_task_keys()])
def test_empty_page_passes_no_action(scored, workspace, key):
    """An empty page passes no action (IFS 0) but the leading key presses the reference did not react to."""
    result = scored["empty"]["tasks"][key]
    assert result["ifs"] <= empty_bound(workspace.dataset.task(key)) + EPS, first_failure(result)


@pytest.mark.parametrize("key", [case("empty-final", key) for key in calibration_task_keys()])
def test_empty_page_scores_nothing(scored, workspace, key):
    """An empty page scores Final <= 0.05, beyond what those key presses give."""
    result = scored["empty"]["tasks"][key]
    bound = EMPTY_FINAL + FINAL_IFS_WEIGHT * empty_bound(workspace.dataset.task(key))
    assert result["final"] <= bound + EPS, f"final {result['final']:.3f} (vfs {result['vfs']:.3f})"


@pytest.mark.parametrize("key", [case("snapshot-vfs", key) for key in calibration_task_keys()])
def test_snapshot_keeps_the_look(scored, key):
    """The scripts-stripped snapshot keeps the look where it is the reference (its Load checkpoint),
    and its task VFS stays far above the empty page's."""
    snapshot, empty = scored["snapshot"]["tasks"][key], scored["empty"]["tasks"][key]
    load = snapshot["steps"][0]
    assert load["type"] == "Load" and load["visual"], load
    assert load["visual"]["overall"] >= SNAPSHOT_VFS, load["visual"]
    assert snapshot["vfs"] > empty["vfs"] + SNAPSHOT_OVER_EMPTY, (snapshot["vfs"], empty["vfs"])


@pytest.mark.parametrize("key", [case("snapshot-ifs", key) for key in calibration_task_keys()])
def test_snapshot_does_only_what_needs_no_script(scored, workspace, key):
    """The snapshot passes at most the leading Type/Scroll actions; where scripts are needed its IFS is well below."""
    task = workspace.dataset.task(key)
    snapshot, reference = scored["snapshot"]["tasks"][key], scored["reference"]["tasks"][key]
    assert snapshot["ifs"] <= static_bound(task) + EPS, first_failure(snapshot)
    if needs_scripts(task):
        assert snapshot["ifs"] <= reference["ifs"] * SNAPSHOT_IFS_GAP, (snapshot["ifs"], reference["ifs"])



@pytest.mark.parametrize("kind", ["reference", "snapshot"])
def test_the_same_bundle_scores_the_same_three_times(scored, workspace, tmp_path, kind):
    """Two more runs give the same scores, summary and step records (chosen elements, verdicts, visual
    sub-scores) on every task: only wall time differs."""
    first = _without_wall_time(scored[kind]["tasks"])
    bundle = workspace.baseline_bundles / kind
    for run in range(2):
        again = runs.score(workspace.data, bundle, tmp_path / f"run{run}", workspace.ocr_cache)
        tasks = _without_wall_time(again["tasks"])
        differing = {key: task for key, task in tasks.items() if task != first[key]}
        # Only the tasks named as known gaps (issue 14) may differ; then the summary differs with them.
        assert {key: task for key, task in differing.items() if key not in KNOWN_UNREPEATABLE_ISSUE_14} == {}
        if not differing:
            assert again["summary"] == scored[kind]["summary"]


def _without_wall_time(value):
    if isinstance(value, dict):
        return {k: _without_wall_time(v) for k, v in value.items() if k not in WALL_TIME_FIELDS}
    if isinstance(value, list):
        return [_without_wall_time(v) for v in value]
    return value

"""Score formulas, aggregation over the task set, bootstrap intervals and rank ranges."""

import csv
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from evaluator import scoring
from evaluator.scoring import (
    bootstrap_ci,
    bootstrap_rank_ranges,
    final,
    ifs,
    overlapping,
    rank_ranges,
    summarize,
    task_score,
    vfs,
)

PAPER_CSV = Path(__file__).resolve().parents[2] / "evaluator" / "data" / "iwr_bench_paper_results.csv"


def paper_rows():
    with PAPER_CSV.open(newline="") as handle:
        return list(csv.DictReader(handle))


def task(key, level="L1", visual="V1", domain="e-commerce"):
    return SimpleNamespace(key=key, interaction_complexity=level, visual_complexity=visual, domain=domain)


def test_it_reproduces_vfs_of_all_28_published_rows():
    """VFS = (low + high) / 2 holds for every row of the paper's table within rounding."""
    rows = paper_rows()
    assert len(rows) == 28
    for row in rows:
        got = 100 * vfs(float(row["low_level_visual"]) / 100, float(row["high_level_visual"]) / 100)
        assert got == pytest.approx(float(row["vfs"]), abs=0.02), row["model"]


def test_it_reproduces_final_of_all_28_published_rows():
    """Final = 0.7 IFS + 0.3 VFS holds for every row of the paper's table within rounding."""
    for row in paper_rows():
        got = 100 * final(float(row["ifs"]) / 100, float(row["vfs"]) / 100)
        assert got == pytest.approx(float(row["final"]), abs=0.02), row["model"]


def test_it_counts_steps_before_the_first_failure():
    """IFS is the share of actions passed before the first failure."""
    assert ifs(3, 8) == pytest.approx(0.375)
    assert ifs(0, 5) == 0.0 and ifs(5, 5) == 1.0


@pytest.mark.parametrize(("passed", "total"), [(1, 0), (-1, 3), (4, 3)])
def test_it_rejects_impossible_step_counts(passed, total):
    """Step counts outside 0..total, or a task without actions, are errors."""
    with pytest.raises(ValueError, match="steps"):
        ifs(passed, total)


def test_it_scores_a_task_from_its_checkpoints():
    """Visual means over the checkpoints, then VFS and Final (hand-computed)."""
    checkpoints = [{"low_level": 0.8, "high_level": 0.6}, {"low_level": 0.4, "high_level": 0.2}]
    result = task_score(2, 4, checkpoints)
    assert result == pytest.approx({"ifs": 0.5, "low_level": 0.6, "high_level": 0.4, "vfs": 0.5,
                                    "final": 0.7 * 0.5 + 0.3 * 0.5})


def test_it_gives_no_visual_credit_without_checkpoints():
    """A page that never rendered a checkpoint gets zero visual scores."""
    result = task_score(0, 3, [])
    assert result["vfs"] == 0.0 and result["final"] == 0.0


def test_it_averages_over_all_tasks_counting_missing_and_failed_as_zero():
    """Missing results and errors count 0; results for unknown keys are ignored."""
    tasks = [task("1"), task("2"), task("3"), task("4")]
    results = {
        "1": {"ifs": 1.0, "vfs": 0.8, "final": 0.94, "low_level": 0.9, "high_level": 0.7, "error": None},
        "2": {"ifs": 0.5, "vfs": 0.4, "final": 0.47, "low_level": 0.5, "high_level": 0.3},
        "3": {"ifs": 1.0, "vfs": 1.0, "final": 1.0, "low_level": 1.0, "high_level": 1.0, "error": "page missing"},
        "99": {"ifs": 1.0, "vfs": 1.0, "final": 1.0, "low_level": 1.0, "high_level": 1.0},
    }
    summary = summarize(results, tasks)
    assert summary["ifs"] == pytest.approx(1.5 / 4)
    assert summary["final"] == pytest.approx((0.94 + 0.47) / 4)
    assert summary["low_level"] == pytest.approx(1.4 / 4)
    assert (summary["n_tasks"], summary["n_missing"], summary["n_errors"]) == (4, 1, 1)


def test_it_breaks_scores_down_by_category_labels_from_the_data():
    """Each axis maps the labels found on the tasks to their means and counts."""
    tasks = [task("a", "L1", "V2", "gaming"), task("b", "L3", "V2", "gaming"), task("c", "L3", "V1", None)]
    results = {key: {"ifs": v, "vfs": v, "final": v, "low_level": v, "high_level": v}
               for key, v in (("a", 0.2), ("b", 0.4), ("c", 0.9))}
    by = summarize(results, tasks)["by_category"]
    assert set(by) == {"interaction_complexity", "visual_complexity", "domain"}
    assert by["interaction_complexity"]["L3"] == pytest.approx({"ifs": 0.65, "vfs": 0.65, "final": 0.65, "n": 2})
    assert by["visual_complexity"]["V2"]["n"] == 2
    assert set(by["domain"]) == {"gaming", scoring.UNLABELLED}


def test_it_refuses_to_summarize_no_tasks():
    """An empty task set has no mean."""
    with pytest.raises(ValueError, match="empty task set"):
        summarize({}, [])


def test_it_gives_a_zero_width_interval_for_constant_scores():
    """Every resample of identical values has the same mean."""
    lo, hi = bootstrap_ci([0.42] * 30)
    assert lo == pytest.approx(0.42) and hi == pytest.approx(0.42)


def test_it_matches_a_direct_percentile_bootstrap():
    """Same seed, same draws: the interval equals a plain numpy reimplementation."""
    values = np.random.default_rng(5).random(113)
    rng = np.random.default_rng(7)
    means = values[rng.integers(0, 113, size=(500, 113))].mean(axis=1)
    expected = np.percentile(means, [2.5, 97.5])
    assert bootstrap_ci(values, n_resamples=500, seed=7) == pytest.approx(tuple(expected), abs=1e-12)


def test_it_is_deterministic_for_a_seed():
    """The same seed gives the same interval; another seed gives another."""
    values = np.random.default_rng(3).random(50)
    assert bootstrap_ci(values, seed=11) == bootstrap_ci(values, seed=11)
    assert bootstrap_ci(values, seed=11) != bootstrap_ci(values, seed=12)
    lo, hi = bootstrap_ci(values)
    assert lo < values.mean() < hi


def test_it_ranks_clearly_separated_entries_exactly():
    """Entries far apart on every task keep their rank in every resample."""
    base = np.random.default_rng(0).random(40) * 0.1
    assert rank_ranges([base + 0.5, base + 0.2, base]) == [(1, 1), (2, 2), (3, 3)]


def test_it_gives_tied_entries_the_best_rank():
    """Identical entries share rank 1 in every resample."""
    same = list(np.random.default_rng(1).random(20))
    assert rank_ranges([same] * 7) == [(1, 1)] * 7


def test_it_matches_a_direct_rank_bootstrap():
    """Rank ranges equal a plain reimplementation: resample, rank by mean, take 2.5/97.5 percentiles."""
    matrix = np.random.default_rng(2).random((5, 60)) + np.linspace(0, 0.1, 5)[:, None]
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 60, size=(300, 60))
    means = matrix[:, idx].mean(axis=2)  # entries x resamples
    ranks = np.array([[1 + (means[:, r] > means[i, r]).sum() for r in range(300)] for i in range(5)])
    expected = [(int(np.percentile(r, 2.5, method="lower")), int(np.percentile(r, 97.5, method="higher")))
                for r in ranks]
    assert bootstrap_rank_ranges(matrix, n_resamples=300, seed=4) == expected
    assert any(best < worst for best, worst in expected)


def test_it_rejects_entries_scored_on_different_task_counts():
    """Rank ranges need every entry scored on the same tasks."""
    with pytest.raises(ValueError, match="same length"):
        rank_ranges([[0.1, 0.2], [0.3]])


@pytest.mark.parametrize(("a", "b", "expected"), [
    ((0.2, 0.4), (0.3, 0.5), True),
    ((0.2, 0.4), (0.4, 0.5), True),
    ((0.2, 0.3), (0.31, 0.5), False),
    ((0.6, 0.7), (0.1, 0.5), False),
])
def test_it_tells_whether_intervals_overlap(a, b, expected):
    """Intervals sharing any value overlap, in either order."""
    assert overlapping(a, b) is expected
    assert overlapping(b, a) is expected

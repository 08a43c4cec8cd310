"""Which evaluations rank, in what order, with which intervals, rank ranges, ties and category means."""

from __future__ import annotations

import inspect
from datetime import timedelta

import numpy as np
import pytest
from django.core.cache import cache
from django.utils import timezone

from evaluator import scoring
from leaderboard import ranking
from leaderboard.board_pages import parse_sort, sorted_entries
from leaderboard.cache import bump_generation
from leaderboard.models import Evaluation, Submission
from leaderboard.models.submissions import PAPER_PROTOCOL, pack_task_finals, stored_task_finals, unpack_task_finals
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_evaluation, make_submission, make_task, make_task_set

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _every_category_shown(settings):
    """These boards are on the held-out split with categories of one or two tasks: the charts' and tables'
    mechanics are tested with every category shown (IWR_HELDOUT_MIN_CATEGORY_TASKS=1; pooling the small
    ones is test_heldout_categories.py's)."""
    settings.HELDOUT_MIN_CATEGORY_TASKS = 1


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache (ids are reused between tests)."""
    cache.clear()


def board(**params) -> ranking.Leaderboard:
    bump_generation()  # every call sees the database as it is now
    return ranking.leaderboard(ranking.parse_query(params))


def names(entries) -> list[str]:
    return [entry.model_name for entry in entries]


@pytest.fixture
def tasks():
    task_set = make_task_set()
    return [make_task(task_set, split="test") for _ in range(6)]


# --------------------------------------------------------------------------- which entries


def test_it_ranks_by_final_with_shared_ranks_for_equal_scores(owner, collaborator, outsider):
    """Rank order is Final descending; equal Finals share a rank and the next rank is skipped."""
    make_entry(owner, model_name="A", final=0.30)
    make_entry(collaborator, model_name="B", final=0.50)
    make_entry(outsider, model_name="C", final=0.30)
    make_entry(owner, model_name="D", final=0.10)
    entries = board().entries
    assert names(entries) == ["B", "A", "C", "D"]
    assert [entry.rank for entry in entries] == [1, 2, 2, 4]


def test_it_keeps_each_researchers_best_submission_per_model(owner, collaborator):
    """One row per model per owner: the best Final wins under "best", the most recent under "latest"."""
    now = timezone.now()
    make_entry(owner, model_name="Model X", final=0.6, evaluation_fields={"finished_at": now - timedelta(days=2)})
    newest = make_entry(owner, model_name="model x", final=0.4, evaluation_fields={"finished_at": now})
    make_entry(collaborator, model_name="Model X", final=0.5)
    best = board(selection="best").entries
    assert [(e.model_name, e.final) for e in best] == [("Model X", 0.6), ("Model X", 0.5)]
    latest = board(selection="latest").entries
    assert [e.final for e in latest] == [0.5, 0.4]
    assert newest.pk in [e.evaluation_id for e in latest]


def test_the_selection_setting_is_the_default(owner, settings):
    """LEADERBOARD_SELECTION decides best or latest when the URL does not."""
    settings.LEADERBOARD_SELECTION = "latest"
    make_entry(owner, model_name="M", final=0.9, evaluation_fields={"finished_at": timezone.now() - timedelta(days=1)})
    make_entry(owner, model_name="M", final=0.2)
    assert [e.final for e in board().entries] == [0.2]


def test_only_public_scored_unflagged_entries_of_the_split_rank(owner):
    """Private, flagged, failed, running and other-split evaluations stay off; flagged ones are listed, with reason."""
    make_entry(owner, model_name="shown")
    make_entry(owner, model_name="private", public=False)
    flagged = make_entry(owner, model_name="flagged", flagged=True, flag_reason="pages copied from the reference")
    make_entry(owner, model_name="other split", split="dev")
    make_entry(owner, model_name="failed", evaluation_fields={"status": Evaluation.Status.FAILED})
    make_entry(owner, model_name="running", evaluation_fields={"status": Evaluation.Status.RUNNING})
    result = board()
    assert names(result.entries) == ["shown"]
    assert [(f.evaluation_id, f.reason) for f in result.flagged] == [(flagged.pk, "pages copied from the reference")]


def test_it_never_mixes_protocols(owner):
    """Each protocol version and the paper's results are separate boards."""
    make_entry(owner, model_name="current")
    make_entry(owner, model_name="older", protocol="iwr-det-1")
    make_entry(None, kind=Submission.Kind.PAPER, model_name="GPT-5", protocol=PAPER_PROTOCOL, final=0.36)
    assert names(board().entries) == ["current"]
    assert names(board(protocol="iwr-det-1").entries) == ["older"]
    assert names(board(protocol="paper").entries) == ["GPT-5"]


def test_baselines_are_labelled_unranked_rows_on_every_split_and_filter():
    """Baselines sit among entries by score without a rank, on each split, whatever the filters."""
    for split in ("dev", "test"):
        make_entry(None, kind=Submission.Kind.BASELINE, model_name="Reference pages (upper bound)", split=split,
                   final=0.95)
        make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page (lower bound)", split=split, final=0.05)
        make_entry(make_user(), model_name=f"model-{split}", split=split, final=0.4, open_weights=True)
    for split in ("dev", "test"):
        entries = board(split=split).entries
        assert names(entries) == ["Reference pages (upper bound)", f"model-{split}", "Empty page (lower bound)"]
        assert [e.rank for e in entries] == [None, 1, None]
        assert entries[0].is_baseline and not entries[1].is_baseline
    assert len(board(weights="proprietary", verified="1").entries) == 2


def test_filters_narrow_the_view(owner, collaborator):
    """Open/proprietary, verified and reported/evaluated filters; ranks are recomputed within the view."""
    make_entry(owner, model_name="open", open_weights=True, final=0.3)
    make_entry(collaborator, model_name="closed-verified", verified=True, final=0.6)
    assert names(board(weights="open").entries) == ["open"]
    assert board(weights="open").entries[0].rank == 1
    assert names(board(weights="proprietary").entries) == ["closed-verified"]
    assert names(board(verified="1").entries) == ["closed-verified"]
    assert names(board(source="reported").entries) == []
    assert names(board(source="evaluated").entries) == ["closed-verified", "open"]


@pytest.mark.parametrize(("params", "message"), [
    ({"split": "train"}, "split='train' is not valid"),
    ({"weights": "any"}, "weights='any' is not valid"),
    ({"verified": "maybe"}, "verified='maybe' is not valid"),
    ({"protocol": "iwr-det-99"}, "protocol='iwr-det-99' is not known"),
])
def test_bad_parameters_are_named(params, message):
    """An unknown value is refused with a message naming the parameter and the allowed values."""
    with pytest.raises(ranking.QueryError, match=message):
        ranking.parse_query(params)


def test_protocol_names_resolve_to_one_version(owner):
    """A bare name means its current version; `paper` the paper's results; old versions stay reachable."""
    assert ranking.parse_query({}).protocol == "iwr-det-17"
    assert ranking.parse_query({"protocol": "iwr-det"}).protocol == "iwr-det-17"
    assert ranking.parse_query({"protocol": "paper"}).protocol == PAPER_PROTOCOL
    make_entry(owner, model_name="old", protocol="iwr-det-0")
    bump_generation()
    assert ranking.parse_query({"protocol": "iwr-det-0"}).protocol == "iwr-det-0"
    assert ranking.protocol_tabs("test") == ["iwr-det-17", "iwr-det-0"]


# --------------------------------------------------------------------------- uncertainty


def test_the_interval_is_the_percentile_bootstrap_over_tasks():
    """bootstrap_ci equals an independent percentile bootstrap with the same seeded resamples."""
    values = np.array([0.0, 0.1, 0.25, 0.5, 0.5, 0.6, 0.8, 0.9, 1.0, 0.3])
    rng = np.random.default_rng(0)
    means = values[rng.integers(0, len(values), size=(2000, len(values)))].mean(axis=1)
    expected = np.percentile(means, [2.5, 97.5])
    assert scoring.bootstrap_ci(values, n_resamples=2000, seed=0) == pytest.approx(tuple(expected), abs=1e-12)
    assert scoring.bootstrap_ci([0.4] * 8) == pytest.approx((0.4, 0.4))


def test_the_stated_resample_counts_are_the_ones_used():
    """The interval resamples named on the site are bootstrap_ci's default, which the pipeline uses."""
    default = inspect.signature(scoring.bootstrap_ci).parameters["n_resamples"].default
    assert ranking.CI_RESAMPLES == default
    from leaderboard.worker import scoring as worker_scoring

    assert "bootstrap_ci([s[name] for s in scores])" in inspect.getsource(worker_scoring.confidence_intervals)


def test_rank_ranges_come_from_a_paired_bootstrap_of_per_task_finals(tasks):
    """Clearly separated entries get single ranks; near-identical ones share a range."""
    make_entry(make_user(), model_name="top", tasks=tasks, finals=[0.9, 0.95, 0.9, 1.0, 0.92, 0.97])
    make_entry(make_user(), model_name="twin-a", tasks=tasks, finals=[0.5, 0.1, 0.4, 0.2, 0.6, 0.3])
    make_entry(make_user(), model_name="twin-b", tasks=tasks, finals=[0.1, 0.5, 0.2, 0.4, 0.3, 0.6])
    make_entry(make_user(), model_name="bottom", tasks=tasks, finals=[0.0, 0.01, 0.0, 0.02, 0.0, 0.01])
    entries = board().entries
    matrix = [[r.final for r in Evaluation.objects.get(pk=e.evaluation_id).task_results.order_by("task_id")]
              for e in entries]
    expected = scoring.bootstrap_rank_ranges(matrix, n_resamples=ranking.RANK_RESAMPLES, seed=0)
    assert [e.rank_range for e in entries] == expected
    assert entries[0].rank_range == (1, 1) and entries[3].rank_range == (4, 4)
    assert entries[1].rank_range == entries[2].rank_range == (2, 3)


def test_entries_without_task_results_keep_their_place_in_rank_ranges(tasks):
    """A row without per-task results counts as its Final on every task; with none at all there are no ranges."""
    make_entry(make_user(), model_name="with", tasks=tasks, finals=[0.2, 0.3, 0.2, 0.3, 0.2, 0.3])
    make_entry(make_user(), model_name="without", final=0.9)
    entries = board().entries
    assert [(e.model_name, e.rank_range) for e in entries] == [("without", (1, 1)), ("with", (2, 2))]
    Evaluation.objects.filter(task_results__isnull=False).delete()
    assert board().entries[0].rank_range is None


def _entry(final, ci=None, rank=1) -> ranking.Entry:
    return ranking.Entry(
        evaluation_id=int(final * 1000), submission_id=1, model_name=str(final), organisation="", model_size="",
        kind="bundle", open_weights=False, verified=False, paper_url="", code_url="", protocol="iwr-det-17",
        evaluator_version="", final=final, ifs=final, vfs=final, low_level=None, high_level=None, final_ci=ci,
        ifs_ci=None, vfs_ci=None, n_tasks=1, date=None, rank=rank,
    )


def test_overlapping_intervals_are_ties():
    """A row is tied with the row above when their Final intervals overlap; runs share a tie group."""
    rows = [_entry(0.8, (0.7, 0.9)), _entry(0.75, (0.65, 0.85)), _entry(0.5, (0.45, 0.6)), _entry(0.4, (0.3, 0.5)),
            _entry(0.2, None), _entry(0.2, None)]
    ranking.assign_ties(rows)
    assert [row.tied_with_previous for row in rows] == [False, True, False, True, False, True]
    assert [row.tie_group for row in rows] == [1, 1, 2, 2, 3, 3]


def test_board_rows_show_ties_from_stored_intervals(tasks):
    """Entries whose stored intervals overlap are marked tied on the board."""
    make_entry(make_user(), model_name="a", tasks=tasks, finals=[0.5, 0.1, 0.4, 0.2, 0.6, 0.3])
    make_entry(make_user(), model_name="b", tasks=tasks, finals=[0.1, 0.5, 0.2, 0.4, 0.3, 0.5])
    make_entry(make_user(), model_name="c", tasks=tasks, finals=[0.0, 0.0, 0.01, 0.0, 0.0, 0.0])
    entries = board().entries
    assert [e.tied_with_previous for e in entries] == [False, True, False]
    assert entries[0].final_ci is not None


LEVEL_RESULTS = {  # per task: the evaluator's scores; "d" failed, so every score counts 0
    "a": {"final": 0.62, "ifs": 0.5, "vfs": 0.9, "low_level": 0.95, "high_level": 0.85},
    "b": {"final": 0.31, "ifs": 0.2, "vfs": 0.55, "low_level": 0.7, "high_level": 0.4},
    "c": {"final": 0.86, "ifs": 1.0, "vfs": 0.53, "low_level": 0.46, "high_level": 0.6},
    "d": {"final": 0.9, "ifs": 0.9, "vfs": 0.9, "low_level": 0.9, "high_level": 0.9, "error": "page crashed"},
    "e": {"final": 0.12, "ifs": 0.0, "vfs": 0.4, "low_level": 0.3, "high_level": 0.5},
}


def test_every_score_gets_its_bootstrap_interval_at_scoring_time():
    """Low-level and High-level get intervals like Final, IFS and VFS: bootstrap_ci over the tasks' values,
    a failed task counting 0."""
    from leaderboard.worker import scoring as worker_scoring

    fields = worker_scoring.confidence_intervals(LEVEL_RESULTS)
    for name in ranking.SCORE_FIELDS:
        values = [0.0 if result.get("error") else result[name] for result in LEVEL_RESULTS.values()]
        expected = scoring.bootstrap_ci(values, n_resamples=ranking.CI_RESAMPLES, seed=0)
        assert (fields[f"{name}_ci_low"], fields[f"{name}_ci_high"]) == expected, name
    assert fields["low_level_ci_low"] < (0.95 + 0.7 + 0.46 + 0.0 + 0.3) / 5 < fields["low_level_ci_high"]
    assert fields["low_level_ci_high"] != fields["high_level_ci_high"]


def test_board_entries_carry_the_stored_level_intervals(tasks):
    """Each entry reads the intervals of all five scores; a row without them (the paper's) has None."""
    evaluated = make_entry(make_user(), model_name="m", tasks=tasks, finals=[0.2, 0.4, 0.6, 0.8, 0.5, 0.3],
                           evaluation_fields={"low_level_ci_low": 0.11, "low_level_ci_high": 0.22,
                                              "high_level_ci_low": 0.33, "high_level_ci_high": 0.44})
    make_entry(None, kind=Submission.Kind.PAPER, model_name="paper row", final=0.3)
    entries = {entry.model_name: entry for entry in board().entries}
    entry = entries["m"]
    assert (entry.low_level_ci, entry.high_level_ci) == ((0.11, 0.22), (0.33, 0.44))
    assert entry.final_ci == (evaluated.final_ci_low, evaluated.final_ci_high)
    assert entry.show["low_level_ci"] == "11.00\u201322.00" and entry.show["high_level_ci"] == "33.00\u201344.00"
    assert entry.as_dict()["high_level_ci"] == [0.33, 0.44]
    assert entries["paper row"].low_level_ci is None and entries["paper row"].show["high_level_ci"] == ""


def test_the_migration_fills_level_intervals_of_evaluations_scored_before_it(tasks):
    """Evaluations stored without level intervals get them from their task results, as the pipeline computes
    them (a failed task counts 0); evaluations without results keep none."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("leaderboard.migrations.0004_evaluation_level_intervals")
    old = make_entry(make_user(), tasks=tasks, finals=[0.3, 0.1, 0.2, 0.6, 0.5, 0.4])
    old.task_results.filter(task=tasks[3]).update(error="timed out")
    Evaluation.objects.filter(pk=old.pk).update(low_level_ci_low=None, low_level_ci_high=None,
                                                high_level_ci_low=None, high_level_ci_high=None)
    without = make_entry(make_user(), final=0.2)
    migration.fill_existing(apps, None)
    old.refresh_from_db()
    without.refresh_from_db()
    expected = scoring.bootstrap_ci([0.3, 0.1, 0.2, 0.0, 0.5, 0.4])
    assert (old.low_level_ci_low, old.low_level_ci_high) == expected
    assert (old.high_level_ci_low, old.high_level_ci_high) == expected
    assert without.low_level_ci_low is None and without.high_level_ci_high is None


# --------------------------------------------------------------------------- caching


def test_the_board_is_cached_until_the_generation_moves(owner, django_assert_num_queries):
    """A new entry appears only after bump_generation; a cached board costs no query."""
    make_entry(owner, model_name="first")
    query = ranking.parse_query({})
    bump_generation()
    assert names(ranking.leaderboard(query).entries) == ["first"]
    make_entry(owner, model_name="second", final=0.9, announce=False)
    with django_assert_num_queries(0):
        assert names(ranking.leaderboard(query).entries) == ["first"]
    bump_generation()
    assert names(ranking.leaderboard(query).entries) == ["second", "first"]


def pack(evaluation: Evaluation) -> None:
    """Store the evaluation's packed per-task Finals, as the pipeline does when it scores."""
    Evaluation.objects.filter(pk=evaluation.pk).update(task_finals=stored_task_finals(evaluation.pk))


def test_per_task_finals_are_packed_once_and_read_in_one_query(tasks, django_assert_num_queries):
    """A packed evaluation's per-task Finals come from one query; an unpacked one's from its task results."""
    packed = make_entry(make_user(), tasks=tasks, finals=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    pack(packed)
    unpacked = make_entry(make_user(), tasks=tasks, finals=[0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    with django_assert_num_queries(1):
        only_packed = ranking.task_vectors([packed.pk])
    with django_assert_num_queries(2):
        both = ranking.task_vectors([packed.pk, unpacked.pk])
    task_ids, finals = only_packed[packed.pk]
    assert list(task_ids) == sorted(task.pk for task in tasks)
    assert list(finals) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert [list(part) for part in both[packed.pk]] == [list(task_ids), list(finals)]
    assert list(both[unpacked.pk][1]) == [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]


def test_packing_round_trips_and_marks_evaluations_without_results():
    """Packed Finals come back exactly, sorted by task id; no results pack to empty bytes, read as None."""
    packed = pack_task_finals([(9, 0.123456789012345), (2, 1 / 3), (5, 0.0)])
    task_ids, finals = unpack_task_finals(packed)
    assert task_ids.tolist() == [2, 5, 9] and finals.tolist() == [1 / 3, 0.0, 0.123456789012345]
    assert pack_task_finals([]) == b"" and unpack_task_finals(b"") is None


def test_the_migration_packs_evaluations_scored_before_it(tasks):
    """Evaluations stored without packed Finals get them from their task results; ones without results
    pack to empty bytes."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("leaderboard.migrations.0003_evaluation_task_finals")
    with_results = make_entry(make_user(), tasks=tasks, finals=[0.3, 0.1, 0.2, 0.6, 0.5, 0.4])
    without = make_entry(make_user(), final=0.2)
    migration.pack_existing(apps, None)
    with_results.refresh_from_db()
    without.refresh_from_db()
    assert bytes(with_results.task_finals) == stored_task_finals(with_results.pk)
    assert unpack_task_finals(with_results.task_finals)[1].tolist() == [0.3, 0.1, 0.2, 0.6, 0.5, 0.4]
    assert bytes(without.task_finals) == b""


def test_the_pipeline_packs_the_stored_finals_when_it_scores(owner):
    """store_scores saves each task's Final on the evaluation too, exactly as the task results hold it."""
    from leaderboard.worker import scoring as worker_scoring
    from leaderboard.worker.claims import EVALUATIONS

    task_set = make_task_set()
    tasks = {key: make_task(task_set, key=key, split="dev") for key in ("a", "b", "c")}
    evaluation = make_evaluation(make_submission(owner, split="dev"))
    token = EVALUATIONS.claim(evaluation.pk, "test-node:1")
    document = {"tasks": {"a": {"final": 0.25, "ifs": 0.2, "vfs": 0.4}, "c": {"final": 0.75, "ifs": 0.7, "vfs": 0.9}},
                "summary": {"final": 1 / 3, "ifs": 0.3, "vfs": 0.43, "n_tasks": 3}}
    assert worker_scoring.store_scores(evaluation, token, document, "", None)
    evaluation.refresh_from_db()
    task_ids, finals = unpack_task_finals(evaluation.task_finals)
    assert task_ids.tolist() == sorted([tasks["a"].pk, tasks["c"].pk]) and finals.tolist() == [0.25, 0.75]
    assert bytes(evaluation.task_finals) == stored_task_finals(evaluation.pk)
    assert (evaluation.ifs_ci_low, evaluation.ifs_ci_high) == scoring.bootstrap_ci([0.2, 0.7])
    assert (evaluation.high_level_ci_low, evaluation.high_level_ci_high) == (0.0, 0.0)  # not reported: 0


def test_sorting_by_a_column_keeps_rank_order_for_equal_values(owner, collaborator, outsider):
    """Sorting by IFS orders by IFS; equal values keep their rank order; text columns sort ascending."""
    make_entry(owner, model_name="b", final=0.6, evaluation_fields={"ifs": 0.2})
    make_entry(collaborator, model_name="a", final=0.5, evaluation_fields={"ifs": 0.2})
    make_entry(outsider, model_name="c", final=0.4, evaluation_fields={"ifs": 0.9})
    entries = board().entries
    assert names(sorted_entries(entries, "ifs", True)) == ["c", "b", "a"]
    assert names(sorted_entries(entries, *parse_sort({"sort": "model"}))) == ["a", "b", "c"]
    assert names(sorted_entries(entries, *parse_sort({"sort": "rank", "dir": "asc"}))) == ["c", "a", "b"]
    assert parse_sort({"sort": "drop table"}) == ("rank", True)


# --------------------------------------------------------------------------- categories


def test_category_means_are_averaged_over_entries():
    """The leaderboard-wide mean per category, checked against hand-computed numbers."""
    per_entry = [
        {"interaction_complexity": {"L1": {"ifs": 0.2, "vfs": 0.6, "final": 0.32, "n": 2},
                                    "L4": {"ifs": 0.0, "vfs": 0.3, "final": 0.09, "n": 1}}},
        {"interaction_complexity": {"L1": {"ifs": 0.4, "vfs": 0.8, "final": 0.52, "n": 2}}},
    ]
    means = ranking.category_means(per_entry, "interaction_complexity")
    assert list(means) == ["L1", "L4"]
    assert means["L1"] == pytest.approx({"ifs": 0.3, "vfs": 0.7, "final": 0.42, "entries": 2})
    assert means["L4"] == pytest.approx({"ifs": 0.0, "vfs": 0.3, "final": 0.09, "entries": 1})


def test_category_scores_from_task_results_match_hand_computed_means():
    """An evaluation without by_category in its summary gets it from its task results (missing tasks count 0)."""
    task_set = make_task_set()
    t1 = make_task(task_set, interaction_complexity="L1", domain="shop")
    t2 = make_task(task_set, interaction_complexity="L1", domain="game")
    t3 = make_task(task_set, interaction_complexity="L3", domain="game")
    evaluation = make_entry(make_user(), split="dev", tasks=[t1, t2, t3], finals=[0.2, 0.6, 0.9])
    scores = ranking.evaluation_categories(evaluation)
    assert scores["interaction_complexity"]["L1"] == pytest.approx({"ifs": 0.4, "vfs": 0.4, "final": 0.4, "n": 2})
    assert scores["interaction_complexity"]["L3"]["final"] == pytest.approx(0.9)
    assert scores["domain"]["game"]["final"] == pytest.approx(0.75)
    assert scores["domain"]["shop"]["final"] == pytest.approx(0.2)


def test_category_breakdown_of_a_view_uses_each_entrys_summary(owner, collaborator):
    """The breakdown lists entries with per-category scores, labels in natural order, and their means."""
    summary = {"by_category": {"interaction_complexity": {"L10": {"ifs": 0.1, "vfs": 0.2, "final": 0.13, "n": 1},
                                                          "L2": {"ifs": 0.5, "vfs": 0.5, "final": 0.5, "n": 3}}}}
    make_entry(owner, model_name="with", final=0.4, evaluation_fields={"summary": summary})
    make_entry(collaborator, model_name="without", final=0.3)
    breakdown = ranking.category_breakdown(board(), "interaction_complexity")
    assert breakdown.labels == ["L2", "L10"]
    assert names(breakdown.entries) == ["with"]
    assert breakdown.means["L10"]["final"] == pytest.approx(0.13)
    with pytest.raises(ranking.QueryError):
        ranking.category_breakdown(board(), "colour")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_rank_ranges_equal_the_evaluators(seed):
    """The board's sort-based rank ranges are exactly evaluator.scoring.bootstrap_rank_ranges, ties included."""
    rng = np.random.default_rng(seed)
    matrix = rng.integers(0, 5, size=(40, 12)) / 4  # coarse scores: many ties
    matrix[7] = matrix[3]  # two identical entries
    expected = scoring.bootstrap_rank_ranges(matrix, n_resamples=ranking.RANK_RESAMPLES, seed=ranking.RANK_SEED)
    assert ranking.rank_ranges_of(matrix) == expected


def test_results_matrix_aligns_tasks_and_fills_gaps():
    """Columns are the union of task ids; a missing task counts 0; an entry without results is its Final."""
    vectors = [(np.array([1, 2, 3]), np.array([0.1, 0.2, 0.3])), (np.array([1, 3]), np.array([0.5, 0.7])), None]
    matrix = ranking.results_matrix(vectors, [0.2, 0.4, 0.9])
    assert matrix.tolist() == [[0.1, 0.2, 0.3], [0.5, 0.0, 0.7], [0.9, 0.9, 0.9]]


def test_competition_ranks_share_the_better_rank():
    """Equal scores share the better rank and the next rank is skipped, per column."""
    scores = np.array([[0.5, 0.1], [0.9, 0.1], [0.5, 0.3]])
    assert ranking.competition_ranks(scores).tolist() == [[2, 2], [1, 2], [2, 1]]


def test_a_cold_board_of_packed_entries_reads_no_task_results(tasks):
    """Entries packed at scoring time give their rank ranges without a task-result row being read;
    the ranges equal the bootstrap reference and stay cached while the same entries rank."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for n in range(4):
        pack(make_entry(make_user(), model_name=f"m{n}", tasks=tasks, finals=[0.1 * n + 0.1 * k for k in range(6)]))
    with CaptureQueriesContext(connection) as queries:
        entries = board().entries
    sql = [q["sql"] for q in queries.captured_queries]
    assert not [text for text in sql if "leaderboard_taskresult" in text]
    assert len([text for text in sql if "task_finals" in text]) == 1
    matrix = [[r.final for r in Evaluation.objects.get(pk=e.evaluation_id).task_results.order_by("task_id")]
              for e in entries]
    assert [e.rank_range for e in entries] == scoring.bootstrap_rank_ranges(matrix, n_resamples=ranking.RANK_RESAMPLES,
                                                                            seed=ranking.RANK_SEED)
    with CaptureQueriesContext(connection) as queries:
        board()  # a new generation, the same entries: the ranges come from the cache
    assert not [q for q in queries.captured_queries if "task_finals" in q["sql"]]


def test_a_breakdown_computes_categories_for_entries_whose_summary_has_none():
    """Entries without by_category in their summary get it from their task results, in one extra query."""
    task_set = make_task_set()
    tasks = [make_task(task_set, split="test", interaction_complexity=level) for level in ("L1", "L1", "L4")]
    make_entry(make_user(), model_name="bare", tasks=tasks, finals=[0.2, 0.4, 0.9])
    breakdown = ranking.category_breakdown(board(), "interaction_complexity")
    assert names(breakdown.entries) == ["bare"] and breakdown.labels == ["L1", "L4"]
    assert breakdown.scores[0]["L1"]["final"] == pytest.approx(0.3)
    assert breakdown.means["L4"]["final"] == pytest.approx(0.9)


def test_the_first_axis_asked_for_caches_all_three(owner, django_assert_num_queries):
    """A board's summaries are read once for the three axes: the other two then cost no query."""
    summary = {"by_category": {"interaction_complexity": {"L1": {"ifs": 0.2, "vfs": 0.4, "final": 0.26, "n": 1}},
                               "visual_complexity": {"V2": {"ifs": 0.2, "vfs": 0.4, "final": 0.26, "n": 1}},
                               "domain": {"news": {"ifs": 0.2, "vfs": 0.4, "final": 0.26, "n": 1}}}}
    make_entry(owner, model_name="m", final=0.26, evaluation_fields={"summary": summary})
    current = board()
    assert ranking.category_breakdown(current, "domain").labels == ["news"]
    with django_assert_num_queries(0):
        assert ranking.category_breakdown(current, "visual_complexity").labels == ["V2"]
        assert ranking.category_breakdown(current, "interaction_complexity").means["L1"]["final"] == 0.26

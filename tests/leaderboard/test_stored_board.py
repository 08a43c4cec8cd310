"""Stored boards: each split's unfiltered board under each protocol version, ranked when what it
shows changes. What is stored equals a board ranked afresh, every change that moves a ranking ranks
it again, a stale one is never read, and an empty cache reads one row instead of ranking."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.core.cache import cache

from leaderboard import ranking
from leaderboard.intake import entries as entry_changes
from leaderboard.models import Evaluation, StoredBoard, Submission
from leaderboard.models.submissions import PAPER_PROTOCOL, stored_task_finals
from leaderboard.ranking import stored
from leaderboard.worker import scoring
from tests.leaderboard.base import logged_in, make_user
from tests.leaderboard.factories import make_entry, make_task, make_task_set

pytestmark = pytest.mark.django_db
PROTOCOL = "iwr-det-17"  # the factories' protocol: iwr-det's current version


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()


@pytest.fixture
def tasks():
    task_set = make_task_set()
    return [make_task(task_set, split="test") for _ in range(5)]


@pytest.fixture
def maintainer(staff):
    """Staff with the permissions maintainers and curators are given."""
    staff.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="leaderboard", content_type__model__in=["submission", "evaluation", "task"]))
    return staff


def entry(owner, name: str, finals, tasks, *, pack: bool = True, **fields) -> Evaluation:
    evaluation = make_entry(owner, model_name=name, tasks=tasks, finals=finals, protocol=PROTOCOL, **fields)
    if pack:  # as scoring stores them
        Evaluation.objects.filter(pk=evaluation.pk).update(task_finals=stored_task_finals(evaluation.pk))
    return evaluation


def world(tasks) -> dict:
    """A board with what ranking must get right: ties, a baseline, an unpacked entry, two evaluations of
    one model (best and latest differ), a flagged entry, a paper row on its own protocol, a dev entry."""
    alice, bob = make_user(), make_user()
    made = {
        "alice-old": entry(alice, "Alpha", [0.9, 0.8, 0.7, 0.9, 0.8], tasks),
        "alice-new": entry(alice, "Alpha", [0.2, 0.3, 0.2, 0.1, 0.3], tasks),
        "bob": entry(bob, "Beta", [0.6, 0.5, 0.6, 0.5, 0.6], tasks, organisation="Lab B", verified=True),
        "carol": entry(make_user(), "Gamma", [0.6, 0.5, 0.6, 0.5, 0.6], tasks, pack=False),
        "dave": entry(make_user(), "Delta", [0.4, 0.1, 0.5, 0.2, 0.3], tasks),
        "eve": entry(make_user(), "Epsilon", [0.7, 0.7, 0.7, 0.7, 0.7], tasks, flagged=True, flag_reason="copied"),
        "baseline": make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page", final=0.01,
                               protocol=PROTOCOL),
        "dev": make_entry(make_user(), model_name="Dev-only", split="dev", final=0.5, protocol=PROTOCOL),
    }
    made["alice-old"].finished_at -= timedelta(days=1)
    Evaluation.objects.filter(pk=made["alice-old"].pk).update(finished_at=made["alice-old"].finished_at)
    make_entry(None, kind=Submission.Kind.PAPER, model_name="GPT-5", protocol=PAPER_PROTOCOL, final=0.36)
    return made


def stored_board(split: str = "test", protocol: str = PROTOCOL, selection: str = "best") -> StoredBoard:
    return StoredBoard.objects.get(split=split, protocol=protocol, selection=selection)


def assert_stored_equals_fresh(split: str = "test", protocol: str = PROTOCOL) -> None:
    """Every selection's stored board is current and holds exactly what ranking it now gives."""
    for selection in ranking.SELECTIONS:
        row = stored_board(split, protocol, selection)
        query = ranking.Query(split=split, protocol=protocol, selection=selection)
        assert row.built_marks == row.marks and row.format == stored.FORMAT, (split, protocol, selection)
        assert stored.decode_entries(row.entries) == ranking.build_entries(query), (split, protocol, selection)
        assert stored.decode_flagged(row.flagged) == ranking.build_flagged(query), (split, protocol, selection)


def names(split: str = "test", selection: str = "best") -> list[str]:
    return [e.model_name for e in stored.decode_entries(stored_board(split, selection=selection).entries)]


# --------------------------------------------------------------------------- what is stored


def test_every_board_is_stored_as_ranked_afresh(tasks):
    """After a change to every board, each split and protocol's boards equal a fresh ranking, field for
    field (ranks, rank ranges, ties, intervals, dates), flagged rows included."""
    world(tasks)
    ranking.boards_changed()
    for split, protocol in (("test", PROTOCOL), ("dev", PROTOCOL), ("test", PAPER_PROTOCOL)):
        assert_stored_equals_fresh(split, protocol)
    board = stored.decode_entries(stored_board().entries)
    assert names(selection="best") == ["Alpha", "Beta", "Gamma", "Delta", "Empty page"]
    assert names(selection="latest") == ["Beta", "Gamma", "Delta", "Alpha", "Empty page"]
    assert {e.model_name: e.rank for e in board}["Beta"] == {e.model_name: e.rank for e in board}["Gamma"]
    assert all(e.rank_range for e in board if e.rank) and board[-1].rank is None  # the baseline has no rank
    assert [f.model_name for f in stored.decode_flagged(stored_board().flagged)] == ["Epsilon"]


def test_the_board_a_reader_gets_is_the_stored_one_and_costs_one_query(tasks, django_assert_num_queries):
    """With an empty cache the default view is read from its stored row: one query (plus the generation's)."""
    world(tasks)
    ranking.boards_changed()
    query = ranking.parse_query({})
    fresh = ranking.build_entries(query)
    cache.clear()
    with django_assert_num_queries(2):  # the generation row, the stored board
        board = ranking.leaderboard(query)
    assert board.entries == fresh and board.generation == ranking.leaderboard(query).generation


def test_the_home_page_and_the_api_read_the_stored_board(client, tasks, django_assert_max_num_queries):
    """Cold, the page costs the stored board, the protocol tabs and the being-scored note; the API only the board."""
    world(tasks)
    ranking.boards_changed()
    cache.clear()
    with django_assert_max_num_queries(4):  # generation, stored board, protocols, being scored
        page = client.get("/")
    cache.clear()
    with django_assert_max_num_queries(2):  # generation, stored board
        api = client.get("/api/v1/leaderboard/")
    assert page.status_code == api.status_code == 200
    assert "Beta" in page.content.decode() and [e["model_name"] for e in api.json()["entries"]][:1] == ["Alpha"]


# --------------------------------------------------------------------------- never an old ranking


def test_a_stale_board_is_never_read_and_the_reader_stores_the_fresh_one(tasks):
    """A change counted but not ranked yet (the ranking step failed, say): readers rank the view themselves,
    see the change, and store what they ranked so the next empty cache reads it."""
    made = world(tasks)
    ranking.boards_changed()
    Submission.objects.filter(pk=made["bob"].submission_id).update(flagged=True)
    stored.mark({("test", PROTOCOL)})
    ranking.boards_changed(pairs=[])  # the generation moves on, no board is ranked
    assert stored_board().built_marks < stored_board().marks
    assert "Beta" not in [e.model_name for e in ranking.leaderboard(ranking.parse_query({})).entries]
    row = stored_board()
    assert row.built_marks == row.marks and "Beta" not in names()


def test_a_build_that_began_before_a_change_was_counted_does_not_pass_as_current(tasks):
    """A slow build stores its board as the build of the count it read first: a change counted meanwhile
    leaves the row stale, and the change's own build wins."""
    made = world(tasks)
    ranking.boards_changed()
    row = stored_board()
    query = ranking.Query(split="test", protocol=PROTOCOL, selection="best")
    before = ranking.Leaderboard(query=query, entries=ranking.build_entries(query))  # read before the change
    Submission.objects.filter(pk=made["dave"].submission_id).update(flagged=True)
    stored.mark({("test", PROTOCOL)})
    assert not stored._store(row.pk, row.marks, before, 0.0)  # that count is already built: nothing stored
    assert stored_board().built_marks < stored_board().marks
    stored.build("test", PROTOCOL)
    assert "Delta" not in names()
    assert_stored_equals_fresh()


def test_a_board_built_by_a_release_that_shaped_entries_otherwise_is_not_read(tasks, monkeypatch):
    """A stored row of another format counts as stale: readers rank afresh and store the new format."""
    world(tasks)
    ranking.boards_changed()
    StoredBoard.objects.update(format="older", entries="[]")
    board = ranking.leaderboard(ranking.parse_query({}))
    assert board.entries and stored_board().format == stored.FORMAT and names()


# --------------------------------------------------------------------------- every change ranks again


def test_a_finished_scoring_ranks_its_boards_again(tasks, settings):
    """The worker's post-scoring step puts a new entry on the stored boards and moves the generation on."""
    world(tasks)
    ranking.boards_changed()
    before = ranking.leaderboard(ranking.parse_query({})).generation
    new = entry(make_user(), "Zeta", [1.0, 1.0, 0.9, 1.0, 1.0], tasks)
    scoring.finished(new.pk)
    assert names()[0] == "Zeta" and ranking.leaderboard(ranking.parse_query({})).generation > before
    assert_stored_equals_fresh()


def test_a_rescore_under_a_new_version_gets_its_own_board(tasks):
    """A rescore scored under another protocol version builds that version's board; the old one stays."""
    made = world(tasks)
    ranking.boards_changed()
    rescored = make_entry(None, model_name="ignored", protocol="iwr-det-2", final=0.5)
    Evaluation.objects.filter(pk=rescored.pk).update(submission_id=made["bob"].submission_id, is_rescore=True)
    scoring.finished(rescored.pk)
    assert [e.model_name for e in stored.decode_entries(stored_board(protocol="iwr-det-2").entries)] == ["Beta"]
    assert_stored_equals_fresh("test", "iwr-det-2")
    assert_stored_equals_fresh()


def test_withdrawing_an_entry_takes_it_off_the_stored_board(tasks, django_capture_on_commit_callbacks):
    made = world(tasks)
    ranking.boards_changed()
    submission = Submission.objects.get(pk=made["dave"].submission_id)
    form = entry_changes.form_for(submission, {"withdraw": True})
    assert form.is_valid(), form.errors
    with django_capture_on_commit_callbacks(execute=True):
        entry_changes.save(form, submission.owner)
    assert "Delta" not in names()
    assert_stored_equals_fresh()


@pytest.mark.parametrize(("action", "extra", "check"), [
    ("flag", {"apply": "1", "reason": "copies the reference"}, lambda board: "Beta" not in board),
    ("clear_flag", {}, lambda board: "Epsilon" in board),
])
def test_maintainers_verdicts_rank_the_boards_again(client, maintainer, tasks, action, extra, check):
    made = world(tasks)
    ranking.boards_changed()
    target = made["eve"] if action == "clear_flag" else made["bob"]
    logged_in(client, maintainer)
    client.post("/admin/leaderboard/submission/", {"action": action, "_selected_action": [target.submission_id],
                                                   **extra})
    assert check(names())
    assert_stored_equals_fresh()


def test_verifying_ranks_the_boards_again(client, maintainer, tasks):
    """The verified mark is on the stored entries as soon as the action returns."""
    made = world(tasks)
    ranking.boards_changed()
    logged_in(client, maintainer)
    client.post("/admin/leaderboard/submission/", {"action": "mark_verified",
                                                   "_selected_action": [made["dave"].submission_id]})
    verified = {e.model_name: e.verified for e in stored.decode_entries(stored_board().entries)}
    assert verified["Delta"] is True
    assert_stored_equals_fresh()


@pytest.mark.parametrize("action", ["retire", "publish"])
def test_publishing_or_retiring_tasks_ranks_that_splits_boards_again(client, maintainer, tasks, action):
    """A change to the tasks a split is scored on counts on each of that split's boards, which are ranked again."""
    world(tasks)
    ranking.boards_changed()
    marks = {row.pk: row.marks for row in StoredBoard.objects.all()}
    logged_in(client, maintainer)
    client.post("/admin/leaderboard/task/", {"action": action, "_selected_action": [tasks[0].pk]})
    for row in StoredBoard.objects.all():
        assert row.marks == marks[row.pk] + (row.split == "test"), row
    assert_stored_equals_fresh()
    assert_stored_equals_fresh("dev", PROTOCOL)


def test_deleting_a_submission_in_the_admin_takes_it_off_the_board(client, maintainer, tasks,
                                                                    django_capture_on_commit_callbacks):
    made = world(tasks)
    ranking.boards_changed()
    logged_in(client, maintainer)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/leaderboard/submission/", {"action": "delete_selected", "post": "yes",
                                                       "_selected_action": [made["bob"].submission_id]})
    assert not Submission.objects.filter(pk=made["bob"].submission_id).exists() and "Beta" not in names()
    assert_stored_equals_fresh()

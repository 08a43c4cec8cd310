"""The leaderboard pages: home table, tabs, filters, sorting, categories, paper rows, About and API docs."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard import ranking
from leaderboard.cache import bump_generation
from leaderboard.models import Evaluation, Submission
from leaderboard.models.submissions import PAPER_PROTOCOL
from tests.leaderboard.base import logged_in, make_user
from tests.leaderboard.factories import make_entry, make_task, make_task_set

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache (ids are reused between tests)."""
    cache.clear()


def populate(n_models: int, n_tasks: int = 4) -> list[Evaluation]:
    task_set = make_task_set()
    tasks = [make_task(task_set, split="test") for _ in range(n_tasks)]
    made = []
    for index in range(n_models):
        finals = [((index * 7 + task * 3) % 10) / 10 for task in range(n_tasks)]
        made.append(make_entry(make_user(), model_name=f"model-{index:02d}", organisation=f"Org {index}",
                               tasks=tasks, finals=finals, open_weights=index % 2 == 0, verified=index % 3 == 0))
    make_entry(None, kind=Submission.Kind.BASELINE, model_name="Reference pages (upper bound)", final=0.97)
    bump_generation()
    return made


def text(response) -> str:
    return response.content.decode()


def row_models(response) -> list[str]:
    return re.findall(r'<td class="model"><a href="/results/\d+/">([^<]+)</a>', text(response))


def test_the_home_page_is_the_test_split_under_the_default_protocol(client):
    """/ ranks test-split entries under iwr-det's current version, with badges, intervals and rank ranges."""
    populate(3)
    make_entry(make_user(), model_name="dev-only", split="dev")
    bump_generation()
    response = client.get("/")
    assert response.status_code == 200
    body = text(response)
    board = ranking.leaderboard(ranking.parse_query({}))
    assert row_models(response) == [e.model_name for e in board.entries]
    assert "dev-only" not in body
    first = board.ranked[0]
    assert first.show["final"] in body and first.show["final_ci"] in body and first.rank_range_text in body
    assert '<span class="badge baseline">baseline</span>' in body
    assert '<span class="badge open">open weights</span>' in body
    assert '<span class="badge verified">verified</span>' in body
    assert 'aria-current="page">Test split (held out)</a>' in body and 'aria-current="page">iwr-det-17</a>' in body


def test_tied_rows_are_marked(client):
    """A row whose interval overlaps the row above carries the tie mark."""
    task_set = make_task_set()
    tasks = [make_task(task_set, split="test") for _ in range(6)]
    make_entry(make_user(), model_name="a", tasks=tasks, finals=[0.5, 0.1, 0.4, 0.2, 0.6, 0.3])
    make_entry(make_user(), model_name="b", tasks=tasks, finals=[0.1, 0.5, 0.2, 0.4, 0.3, 0.5])
    body = text(client.get("/"))
    assert body.count('title="Confidence interval overlaps the entry above"') == 1


def test_low_and_high_level_show_their_intervals_like_final_ifs_and_vfs(client):
    """Each of the five score cells of an evaluated row carries its own 95% interval."""
    tasks = [make_task(make_task_set(), split="test") for _ in range(4)]
    make_entry(make_user(), model_name="m", tasks=tasks, finals=[0.2, 0.4, 0.6, 0.8],
               evaluation_fields={"low_level": 0.61, "low_level_ci_low": 0.512, "low_level_ci_high": 0.705,
                                  "high_level": 0.42, "high_level_ci_low": 0.301, "high_level_ci_high": 0.555})
    row = text(client.get("/")).split('<td class="model">', 1)[1].split("</tr>", 1)[0]
    assert row.count('<span class="sub ci">') == 5
    assert '61.00<span class="sub ci">51.20\u201370.50</span>' in row
    assert '42.00<span class="sub ci">30.10\u201355.50</span>' in row


def test_split_and_protocol_tabs_and_filters_change_the_view(client):
    """Tabs switch split and protocol; filters narrow rows; the paper view explains itself."""
    populate(4)
    make_entry(make_user(), model_name="on-dev", split="dev")
    make_entry(None, kind=Submission.Kind.PAPER, model_name="GPT-5", protocol=PAPER_PROTOCOL, final=0.3635)
    bump_generation()
    home = text(client.get("/"))
    assert "/?split=dev&amp;protocol=iwr-det-17" in home and "/?split=test&amp;protocol=paper" in home
    assert row_models(client.get("/?split=dev")) == ["on-dev"]
    paper = client.get("/?protocol=paper")
    assert row_models(paper) == ["GPT-5"] and "Figures as published in the IWR-Bench paper" in text(paper)
    assert '<span class="badge paper">reported in paper</span>' in text(paper)
    assert set(row_models(client.get("/?weights=open"))) == {"Reference pages (upper bound)", "model-00", "model-02"}
    verified = set(row_models(client.get("/?verified=1")))
    assert verified == {"Reference pages (upper bound)", "model-00", "model-03"}


def test_columns_sort_by_links_without_javascript(client):
    """Column headings are links; sorting by model puts names in order and marks the column."""
    populate(4)
    response = client.get("/?sort=model&dir=asc")
    assert row_models(response)[:4] == ["model-00", "model-01", "model-02", "model-03"]
    link = '<a href="/?split=test&amp;protocol=iwr-det-17&amp;sort=model&amp;dir=desc"'
    assert f'aria-sort="ascending" scope="col">{link}' in text(response)


def test_long_boards_are_paginated(client, settings):
    """Rows beyond a page are reached through Next/Previous links."""
    settings.LEADERBOARD_PAGE_SIZE = 10
    populate(12)
    first, second = client.get("/"), client.get("/?page=2")
    assert len(row_models(first)) == 10 and len(row_models(second)) == 3
    assert "page=2" in text(first) and "Page 2 of 2" in text(second)


def test_a_bad_view_parameter_gets_a_clear_400_page(client):
    """An unknown split or protocol is named on a 400 page, not a server error."""
    response = client.get("/?protocol=iwr-det-99")
    assert response.status_code == 400 and "protocol=&#x27;iwr-det-99&#x27; is not known" in text(response)


@pytest.mark.parametrize("n_models", [3, 30])
def test_the_home_page_costs_a_constant_number_of_queries(client, owner, n_models, django_assert_max_num_queries):
    """Cold, the board costs six queries (the look for a stored board, which these entries made directly do
    not have, chosen entries, their fields, task results, flagged, protocols), one for the entries being
    scored, plus the session's two, whatever its size; warm, only the session's (test_stored_board.py counts
    a stored board's)."""
    populate(n_models)
    logged_in(client, owner)
    with django_assert_max_num_queries(9):
        assert client.get("/").status_code == 200
    with django_assert_max_num_queries(2):  # session + user
        assert client.get("/").status_code == 200


def test_the_board_refreshes_when_the_generation_is_bumped(client):
    """A newly scored entry shows up once the pipeline bumps the generation."""
    populate(2)
    client.get("/")
    make_entry(make_user(), model_name="newcomer", final=0.99, announce=False)
    assert "newcomer" not in text(client.get("/"))
    bump_generation()
    assert "newcomer" in text(client.get("/"))


def test_flagged_entries_leave_the_ranking_but_stay_reachable_with_their_reason(client):
    """A flagged entry is listed below the table with its public reason and its results page still opens."""
    flagged = make_entry(make_user(), model_name="suspicious", flagged=True, flag_reason="bundle copied the references")
    body = text(client.get("/"))
    assert "suspicious" not in row_models(client.get("/"))
    assert "bundle copied the references" in body and f"/results/{flagged.pk}/" in body
    results = text(client.get(f"/results/{flagged.pk}/"))
    assert "Flagged by the maintainers" in results and "bundle copied the references" in results


# --------------------------------------------------------------------------- entries being scored


def queue_baselines_like_the_first_run(split: str = "test") -> list[Submission]:
    """The three baseline rows of a split, queued as `scripts/run.sh` leaves them while the worker scores them."""
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    made = []
    for name in ("Reference pages (upper bound)", "Scripts-stripped snapshot", "Empty page (lower bound)"):
        submission = make_submission(None, kind=Submission.Kind.BASELINE, model_name=name, split=split)
        make_queued_evaluation(submission)
        made.append(submission)
    return made


def test_an_empty_view_says_which_entries_are_being_scored_and_reloads(client, owner,
                                                                      django_capture_on_commit_callbacks):
    """Right after the first start, the board names the baselines being scored (linking their progress) and
    reloads itself, instead of saying there is nothing; private and other splits' entries are not counted."""
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    assert "No scored entries in this view yet" in text(client.get("/"))
    with django_capture_on_commit_callbacks(execute=True):
        baselines = queue_baselines_like_the_first_run()
        make_queued_evaluation(make_submission(owner, model_name="private one", split="test", public=False))
        make_queued_evaluation(make_submission(owner, model_name="on dev", split="dev"))
    Evaluation.objects.filter(submission=baselines[0]).update(status=Evaluation.Status.RUNNING)
    cache.clear()  # the worker's claim does not clear the note: it is cached for a few seconds
    body = text(client.get("/"))
    assert "No scored entries in this view yet" not in body
    assert "3 entries are being scored now.</strong>\nThe evaluator's baselines of this split: <a" in body
    assert f'<a href="/submissions/{baselines[0].pk}/">Reference pages (upper bound)</a> ' \
           '<span class="muted small">(running)</span>' in body
    assert all(f"/submissions/{b.pk}/" in body for b in baselines)
    assert "private one" not in body and "on dev" not in body
    assert '<meta http-equiv="refresh" content="20">' in body
    dev = text(client.get("/?split=dev"))
    assert "1 entry is being scored now.</strong>\n<a" in dev and "on dev" in dev


def test_a_new_submission_shows_at_once_and_the_note_leaves_when_scores_arrive(client, owner,
                                                                              django_capture_on_commit_callbacks):
    """Queuing clears the cached note; once scored (the generation moves) the entries replace it."""
    from django.utils import timezone

    assert "being scored now" not in text(client.get("/"))
    with django_capture_on_commit_callbacks(execute=True):
        baselines = queue_baselines_like_the_first_run()
    assert "3 entries are being scored now" in text(client.get("/"))
    Evaluation.objects.filter(submission__in=baselines).update(
        status=Evaluation.Status.SCORED, finished_at=timezone.now(), final=0.5, ifs=0.5, vfs=0.5)
    bump_generation()
    body = text(client.get("/"))
    assert "being scored now" not in body and "http-equiv" not in body
    assert set(row_models(client.get("/"))) == {b.model_name for b in baselines}


def test_a_populated_view_mentions_entries_being_scored_above_its_table_without_reloading(
        client, owner, django_capture_on_commit_callbacks):
    """With ranked rows, pending entries get a one-line note and the page does not reload itself."""
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    populate(2)
    with django_capture_on_commit_callbacks(execute=True):
        for index in range(7):
            make_queued_evaluation(make_submission(make_user(), model_name=f"pending-{index}", split="test"))
    body = text(client.get("/"))
    assert "7 entries are being scored now.</strong>\n<a" in body and "and 2 more." in body
    assert "They join this table once scored." in body and "http-equiv" not in body
    assert len(row_models(client.get("/"))) == 3


def test_a_warm_home_page_reads_nothing_while_entries_are_being_scored(client, owner, django_assert_max_num_queries,
                                                                      django_capture_on_commit_callbacks):
    """The "being scored" note is cached with the page: a warm anonymous home page costs no query at all."""
    populate(2)
    with django_capture_on_commit_callbacks(execute=True):
        queue_baselines_like_the_first_run()
    assert "3 entries are being scored now" in text(client.get("/"))
    with django_assert_max_num_queries(0):
        assert "3 entries are being scored now" in text(client.get("/"))


def test_cancelling_a_submission_takes_it_out_of_the_note_at_once(client, owner, django_capture_on_commit_callbacks):
    """The cached note is cleared when a submission is queued and when it is cancelled, not after its 30 s."""
    from leaderboard.intake import evaluations
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    populate(1)
    pending = make_submission(owner, model_name="pending-one", split="test")
    with django_capture_on_commit_callbacks(execute=True):
        make_queued_evaluation(pending)
    assert "pending-one" in text(client.get("/"))
    evaluations.cancel(pending)
    assert "pending-one" not in text(client.get("/"))


def test_the_categories_page_tabulates_every_axis(client, settings):
    """Per-category tables list each entry's metric per label, with the mean of ranked models first."""
    settings.HELDOUT_MIN_CATEGORY_TASKS = 1  # one-task categories shown (pooling: test_heldout_categories.py)
    summary = {"by_category": {"interaction_complexity": {"L1": {"ifs": 0.5, "vfs": 0.7, "final": 0.56, "n": 2}},
                               "domain": {"games": {"ifs": 0.25, "vfs": 0.5, "final": 0.325, "n": 1}}}}
    make_entry(make_user(), model_name="m", final=0.5, evaluation_fields={"summary": summary})
    body = text(client.get("/leaderboard/categories/?metric=ifs"))
    assert "Interaction level" in body and "Visual complexity" in body and "Domain" in body
    assert re.search(r'<td class="cell" style="[^"]+">50.00</td>', body)
    assert re.search(r'<td class="cell" style="[^"]+">25.00</td>', body)
    assert "All ranked models (mean)" in body


def test_the_categories_page_shows_one_page_of_rows_at_a_time(client, monkeypatch, settings):
    """Long boards are paged (all three tables together); page links reach every row, the mean row stays."""
    from leaderboard.views import rankings
    settings.HELDOUT_MIN_CATEGORY_TASKS = 1  # one-task categories shown (pooling: test_heldout_categories.py)

    monkeypatch.setattr(rankings, "CATEGORY_PAGE_SIZE", 2)
    summary = {"by_category": {axis: {"x": {"ifs": 0.5, "vfs": 0.5, "final": 0.5, "n": 1}}
                               for axis in ranking.CATEGORY_AXES}}
    for index in range(5):
        make_entry(make_user(), model_name=f"model-{index}", final=0.9 - index / 10,
                   evaluation_fields={"summary": summary})
    bump_generation()
    seen = []
    for number in (1, 2, 3):
        body = text(client.get(f"/leaderboard/categories/?metric=ifs&page={number}"))
        rows = re.findall(r'<a href="/results/\d+/">(model-\d)</a>', body)
        assert len(rows) == 3 * (2 if number < 3 else 1) and body.count("All ranked models (mean)") == 3
        seen.append(rows[: len(rows) // 3])
    assert seen == [["model-0", "model-1"], ["model-2", "model-3"], ["model-4"]]
    first = text(client.get("/leaderboard/categories/?metric=ifs"))
    assert "Rows 1&ndash;2 of 5" in first and "Page 1 of 3" in first
    assert 'href="/leaderboard/categories/?split=test&amp;protocol=iwr-det-17&amp;metric=ifs&amp;page=3">3</a>' in first
    assert "Page 3 of 3" in text(client.get("/leaderboard/categories/?page=99"))


def test_a_short_categories_page_has_no_pager(client):
    """A board that fits one page shows every row and no page links."""
    populate(3)
    body = text(client.get("/leaderboard/categories/"))
    assert 'id="category-pages"' not in body and "Rows " not in body


def test_pages_load_no_third_party_code(client):
    """No script, style or font comes from another origin; Plotly comes from our static files."""
    populate(2)
    for url in ("/", "/leaderboard/categories/", "/about/", "/api/docs/"):
        body = text(client.get(url))
        assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', body), url
    assert "/static/vendor/plotly/plotly-cartesian.min.js" in text(client.get("/"))


# --------------------------------------------------------------------------- paper rows


def test_paper_results_load_idempotently_as_reported_rows(client):
    """load_paper_results makes 28 'reported in paper' rows with fractions and no interval, twice without duplicates."""
    call_command("load_paper_results")
    call_command("load_paper_results")
    rows = Submission.objects.filter(kind=Submission.Kind.PAPER)
    assert rows.count() == 28 and Evaluation.objects.filter(protocol=PAPER_PROTOCOL).count() == 28
    gpt5 = Evaluation.objects.get(submission__model_name="GPT-5")
    assert (gpt5.final, gpt5.ifs, gpt5.vfs, gpt5.low_level, gpt5.high_level) == pytest.approx(
        (0.3635, 0.2439, 0.6425, 0.6829, 0.6021))
    assert gpt5.final_ci_low is None and gpt5.submission.split == "test" and gpt5.submission.owner is None
    assert Submission.objects.get(model_name="Kimi-VL (thinking)").open_weights
    assert Submission.objects.get(model_name="GPT-5").organisation == "OpenAI"
    board = ranking.leaderboard(ranking.parse_query({"protocol": "paper"}))
    assert board.entries[0].model_name == "GPT-5" and board.entries[0].rank == 1 and len(board.entries) == 28
    assert all(entry.rank_range is None for entry in board.entries)
    assert "GPT-5" not in row_models(client.get("/"))


def test_a_bad_paper_file_is_refused_with_its_line(tmp_path):
    """A malformed results file stops the command with the file, line and problem."""
    path = tmp_path / "results.csv"
    path.write_text("model,group,low_level_visual,high_level_visual,ifs,vfs,final\nX,proprietary,1,2,3,4,lots\n")
    with pytest.raises(CommandError, match=r"line 2: final='lots' is not a number"):
        call_command("load_paper_results", file=path)
    with pytest.raises(CommandError, match="cannot read"):
        call_command("load_paper_results", file=tmp_path / "missing.csv")


# --------------------------------------------------------------------------- About and API docs


def test_the_about_page_states_the_method_and_resample_counts(client):
    """About explains the protocols, formulas, interval method with its resample counts, and how to submit."""
    body = text(client.get("/about/"))
    assert f"{ranking.CI_RESAMPLES:,}" in body and f"{ranking.RANK_RESAMPLES:,}" in body
    for phrase in ("percentile bootstrap over tasks", "Final = 0.7 &times; IFS + 0.3 &times; VFS", "iwr-det",
                   "scripts/iwr-submit", "/api/v1/submissions/", "Quotas", "index.html", "official judge (paper)"):
        assert phrase in body, phrase


def test_the_about_page_states_this_sites_own_quotas(client, settings):
    """The quotas and the bundle size limit on About are the configured ones, not fixed numbers."""
    settings.SUBMISSION_QUOTAS = {"dev": 7, "test": 0}
    settings.SUBMISSION_MAX_BUNDLE_MB = 55
    body = text(client.get("/about/"))
    assert "7 a day on the dev split" in body and "the test split is closed to submissions" in body
    assert "55 MB" in body and "3 a day" not in body


def test_the_api_schema_documents_the_submissions_endpoints(client):
    """Submitting documents its multipart fields, answers document the state; cancel takes no body."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]

    def component(operation, where):
        ref = where(operation)["schema"]["$ref"]
        return components[ref.rsplit("/", 1)[1]]["properties"]

    paths = schema["paths"]
    create = paths["/api/v1/submissions/"]["post"]
    writable = set(component(create, lambda op: op["requestBody"]["content"]["multipart/form-data"]))
    assert {"bundle", "split", "model_name", "protocol", "public", "open_weights"} <= writable
    answer = component(create, lambda op: op["responses"]["201"]["content"]["application/json"])
    assert {"id", "status", "progress", "scores", "failure"} <= set(answer) - writable
    assert "requestBody" not in paths["/api/v1/submissions/{id}/cancel/"]["post"]
    results = paths["/api/v1/submissions/{id}/results/"]["get"]
    assert "tasks" in component(results, lambda op: op["responses"]["200"]["content"]["application/json"])
    docs = text(client.get("/api/docs/"))
    assert "Submit a bundle (multipart)" in docs and '<td class="mono">bundle *</td>' in docs


def test_the_api_docs_page_and_schema_need_no_cdn(client):
    """/api/schema/ is an OpenAPI document listing the leaderboard endpoint; /api/docs/ renders it as HTML."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["openapi"].startswith("3.")
    leaderboard = schema["paths"]["/api/v1/leaderboard/"]["get"]
    assert {p["name"] for p in leaderboard["parameters"]} >= {"split", "protocol", "weights", "verified", "source"}
    assert "/api/v1/tasks/{id}/" in schema["paths"]
    yaml_text = client.get("/api/schema/?format=yaml").content.decode()
    assert "openapi:" in yaml_text
    docs = text(client.get("/api/docs/"))
    assert "/api/v1/leaderboard/" in docs and "/api/v1/tasks/" in docs and "Authorization: Token" in docs


def test_warming_after_a_scoring_serves_the_first_reader_from_the_cache(client, django_assert_max_num_queries):
    """warm_default_views (run by the worker after bumping) leaves the default pages ready: no board query."""
    from leaderboard.board_pages import warm_default_views

    populate(4)
    warm_default_views()
    with django_assert_max_num_queries(0):
        assert client.get("/").status_code == 200
        assert client.get("/?split=dev").status_code == 200
        assert client.get("/api/v1/leaderboard/").status_code == 200

"""The held-out split is not an oracle: per-task results of test tasks for staff only (pages, progress
JSON, results download, API), aggregates and categories for the owner; page-caused failures charged."""

from __future__ import annotations

import signal

import pytest
from rest_framework.authtoken.models import Token

from leaderboard import heldout
from leaderboard.models import Evaluation
from leaderboard.worker import scoring
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation, make_task_result

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.django_db
PAGE = "<!doctype html><button class='btn'>Go</button>"


@pytest.fixture
def test_split_scoring(owner, imported_sample, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    submission = make_bundle_submission(owner, pages={"201": PAGE, "202": PAGE}, split="test", public=False)
    evaluation = make_queued_evaluation(submission, status="scored", final=0.31, ifs=0.2, vfs=0.5, n_tasks=2)
    for task in imported_sample:
        if task.split == "test":
            make_task_result(evaluation, task, final=0.777 if task.key == "201" else 0.123, steps_passed=1,
                             steps_total=3, steps=[{"index": 1, "passed": True}, {"index": 2, "passed": False}])
    return evaluation


def per_task_views(client, evaluation) -> dict:
    pk = evaluation.submission_id
    return {
        "page": client.get(f"/submissions/{pk}/").content.decode(),
        "results": client.get(f"/results/{evaluation.pk}/").content.decode(),
        "progress": client.get(f"/submissions/{pk}/progress.json").json(),
        "download": client.get(f"/submissions/{pk}/results.json").json(),
        "replay": client.get(f"/results/{evaluation.pk}/tasks/201/").status_code,
        "replay_file": client.get(f"/results/{evaluation.pk}/tasks/201/files/reference.mp4").status_code,
    }


def test_the_owner_sees_aggregates_but_no_per_task_results_of_the_test_split(client, owner, test_split_scoring):
    views = per_task_views(logged_in(client, owner), test_split_scoring)
    for name in ("page", "results"):
        assert "31.00" in views[name]  # the aggregate Final
        # No per-task table (per-category scores stay: with one task in a category they equal its score).
        assert "data-heldout-hidden" in views[name] and 'id="task-table"' not in views[name]
        assert "/tasks/201/" not in views[name] and "steps_passed" not in views[name]
    assert views["progress"]["scores"]["final"] == 0.31
    assert views["progress"]["tasks"] == [] and views["progress"]["rows"] == []
    assert views["download"]["tasks"] == [] and views["download"]["scores"]["final"] == 0.31
    assert views["replay"] == 404 and views["replay_file"] == 404


def test_the_api_hides_per_task_results_of_the_test_split_from_the_owner(owner, test_split_scoring):
    from django.test import Client

    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    document = api.get(f"/api/v1/submissions/{test_split_scoring.submission_id}/results/").json()
    assert document["scores"]["final"] == 0.31 and document["tasks"] == []
    assert "steps_passed" not in str(document)


def test_staff_see_per_task_results_of_the_test_split(client, staff, test_split_scoring):
    views = per_task_views(logged_in(client, staff), test_split_scoring)
    assert "77.70" in views["page"] and "data-heldout-hidden" not in views["page"]
    assert {row["task"] for row in views["progress"]["tasks"]} == {"201", "202"}
    assert {row["final"] for row in views["download"]["tasks"]} == {0.777, 0.123}
    assert views["replay"] == 200


def test_a_setting_opens_per_task_results_of_the_test_split(client, owner, test_split_scoring, settings):
    settings.HELDOUT_TASK_RESULTS_PUBLIC = True
    views = per_task_views(logged_in(client, owner), test_split_scoring)
    assert "77.70" in views["page"] and views["replay"] == 200
    assert len(views["progress"]["rows"]) == 2


def test_dev_split_per_task_results_stay_open_to_the_owner(client, owner, imported_sample, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="scored",
                                        final=0.4, ifs=0.4, vfs=0.4, n_tasks=1)
    make_task_result(evaluation, next(t for t in imported_sample if t.key == "101"), final=0.555)
    progress = logged_in(client, owner).get(f"/submissions/{evaluation.submission_id}/progress.json").json()
    assert [row["final"] for row in progress["tasks"]] == [0.555]


def test_the_submit_and_about_pages_state_the_rule(client, owner, imported_sample):
    for page in (logged_in(client, owner).get("/submit/"), client.get("/about/")):
        text = page.content.decode()
        assert 'id="heldout-rule"' in text and "maintainers only" in text
        assert "charged" in text and "infrastructure failure" in text


@pytest.mark.parametrize(("returncode", "last", "oom", "expected"), [
    (1, "Traceback: boom", False, ("failed", "page")),
    (-signal.SIGKILL, "", False, ("failed", "page")),
    (-signal.SIGSEGV, "", False, ("failed", "page")),
    (137, "", True, ("failed", "page")),
    (1, "error: job exceeded its time limit", False, ("failed", "time_limit")),
    (-signal.SIGTERM, "", False, ("retry", "infrastructure")),
])
def test_failures_caused_by_the_pages_are_charged_and_only_infrastructure_retried(returncode, last, oom, expected):
    status, kind, reason = heldout.failed_run(returncode, last, oom)
    assert (status, kind) == expected and reason
    assert (kind in heldout.CHARGED_KINDS) == (status == "failed")


def test_a_failure_reason_quotes_no_server_path():
    _status, _kind, reason = heldout.failed_run(1, "error: /srv/iwr/var/jobs/7/attempt-1/data.jsonl: bad", False)
    assert "Last message: error: data.jsonl: bad" in reason and "/srv" not in reason


@pytest.mark.parametrize(("kind", "stays_charged"), [
    (Evaluation.FailureKind.PAGE, True), (Evaluation.FailureKind.TIME_LIMIT, True),
    (Evaluation.FailureKind.INFRASTRUCTURE, False), (Evaluation.FailureKind.EVALUATOR, False),
])
def test_failing_an_evaluation_refunds_only_what_was_not_the_pages_doing(owner, kind, stays_charged,
                                                                          django_capture_on_commit_callbacks):
    submission = make_bundle_submission(owner, pages={"101": PAGE}, split="test")
    evaluation = make_queued_evaluation(submission, status="running", claim_token="t")
    with django_capture_on_commit_callbacks():
        assert scoring.fail(evaluation, Evaluation.objects.filter(pk=evaluation.pk), kind, "why")
    submission.refresh_from_db()
    assert submission.charged is stays_charged


# --------------------------------------------------------------------------- the evaluator log

JOB_LOG = """INFO evaluator.commands.score: OCR cache: 4 of 4 reference checkpoint(s) read
WARNING evaluator.runner: worker iwr-worker-2: task time limit exceeded; worker killed (task 201)
[1/2] task 201: final 0.000 (task time limit exceeded; worker killed)
ERROR evaluator.runner: task 202 failed
Traceback (most recent call last):
  File "/opt/iwr/evaluator/runner.py", line 470, in _run_one
    result = replay(task)
evaluator.metrics.MetricError: cannot read image 'step_3.png'
[2/2] task 202: final 0.412
INFO evaluator.runner: 2 tasks scored in 2010 ms"""


def shown_logs(client, evaluation) -> dict:
    pk = evaluation.submission_id
    page = client.get(f"/submissions/{pk}/").content.decode()
    shown = page.split('<pre id="evaluator-log">', 1)[1].split("</pre>", 1)[0] if "evaluator-log" in page else ""
    return {"page": shown, "progress": client.get(f"/submissions/{pk}/progress.json").json().get("log", "")}


def test_the_owner_reads_no_log_line_about_a_single_held_out_task(client, owner, test_split_scoring):
    """The log names the task whose worker was killed and prints each task's score: the owner of a
    test-split submission reads only the job-level lines, on the page and in the progress JSON."""
    Evaluation.objects.filter(pk=test_split_scoring.pk).update(log=JOB_LOG)
    for name, text in shown_logs(logged_in(client, owner), test_split_scoring).items():
        assert "OCR cache: 4 of 4" in text and "2 tasks scored in 2010 ms" in text, name
        for leak in ("task 201", "task 202", "worker killed", "final 0.", "MetricError", "Traceback", "step_3"):
            assert leak not in text, (name, leak)
        assert "shown to maintainers only" in text


def test_staff_and_dev_owners_read_the_whole_log(client, owner, staff, test_split_scoring, imported_sample):
    Evaluation.objects.filter(pk=test_split_scoring.pk).update(log=JOB_LOG)
    for name, text in shown_logs(logged_in(client, staff), test_split_scoring).items():
        assert "(task 201)" in text and "final 0.412" in text and "MetricError" in text, name
    dev = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="scored", log=JOB_LOG)
    assert "(task 201)" in shown_logs(logged_in(client, owner), dev)["progress"]


def test_job_level_log_matches_task_ids_as_whole_words():
    from leaderboard.secrecy import job_level_log

    kept = job_level_log("bundle/201/index.html missing\nread 2010 bytes\nsite-201 up\nnote: done", ["201"])
    assert kept.splitlines() == ["read 2010 bytes", "site-201 up", "note: done", heldout_note()]
    assert job_level_log("nothing per task", ["201"]) == "nothing per task"


def heldout_note() -> str:
    from leaderboard.secrecy import TASK_LINES_HIDDEN

    return TASK_LINES_HIDDEN

"""The scoring pipeline in this process: claiming, fair order, results, failures, reaping.

The evaluator here is the scripted stand-in of ``pipeline_support`` (same output contract,
failures on request) so each failure path is quick and certain; the real evaluator runs
in ``test_pipeline_worker.py``.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.cache import get_generation
from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, TaskResult
from leaderboard.worker import evaluator_run, reaper, scoring
from leaderboard.worker.claims import EVALUATIONS
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import (
    make_bundle_submission,
    make_evaluation,
    make_queued_evaluation,
    make_submission,
)

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures

FAKE = f"{sys.executable} -m tests.leaderboard.pipeline_support fake-evaluator"
PAGES = {"101": "<html><body><button class=btn>Go</button></body></html>", "dev-b": "<html>b</html>"}
TEST_PAGES = {"201": "<html>one</html>", "202": "<html>two</html>"}


@pytest.fixture
def fake_evaluator(settings, tmp_path, monkeypatch):
    """Pipeline settings for fast tests: the stand-in evaluator, short beats, throw-away folders."""
    settings.EVALUATOR_COMMAND = FAKE
    settings.JOBS_ROOT = tmp_path / "jobs"
    settings.ARTIFACTS_ROOT = tmp_path / "artifacts"
    settings.CLAIM_HEARTBEAT_SECONDS = 1
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    sent = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: sent.append(evaluation_id) or True)
    return sent


def steer(options: str) -> None:
    """Options of the stand-in evaluator (it sees none of the worker's environment).

    Set on the test's own settings override (``fake_evaluator``), which ends with the test. A
    monkeypatch of the lazy settings object could be undone after that override had ended, and would
    then write the stand-in into the real settings, for every later test of the session.
    """
    from django.conf import UserSettingsHolder
    from django.conf import settings as django_settings

    assert isinstance(django_settings._wrapped, UserSettingsHolder), "steer() needs the fake_evaluator fixture"
    django_settings.EVALUATOR_COMMAND = f"{FAKE} {options}"


def queued(owner, pages=PAGES, split="dev"):
    return make_queued_evaluation(make_bundle_submission(owner, pages=pages, split=split))


def charged(evaluation) -> bool:
    evaluation.submission.refresh_from_db(fields=["charged"])
    return evaluation.submission.charged


def run(evaluation, capture):
    """Claim and run ``evaluation`` with on-commit callbacks executed; returns it refreshed."""
    token = EVALUATIONS.claim(evaluation.pk, "test-node:1")
    assert token
    with capture(execute=True):
        scoring.run_claimed(evaluation.pk, token)
    evaluation.refresh_from_db()
    return evaluation


# --------------------------------------------------------------------------- claiming and order


@pytest.mark.django_db
def test_it_claims_a_queued_evaluation_exactly_once(owner):
    """Two workers claiming the same evaluation: one wins, the other gets nothing."""
    evaluation = make_evaluation(make_submission(owner))
    first, second = EVALUATIONS.claim(evaluation.pk, "a:1"), EVALUATIONS.claim(evaluation.pk, "b:2")
    evaluation.refresh_from_db()
    assert first and second is None
    assert (evaluation.status, evaluation.attempts, evaluation.worker, evaluation.claim_token) == (
        "running", 1, "a:1", first)


@pytest.mark.django_db
def test_one_users_backlog_does_not_block_another_users_single_submission(owner, collaborator):
    """A user with twenty queued and one recently run goes after a user who has run nothing."""
    backlog = [make_evaluation(make_submission(owner)) for _ in range(20)]
    make_evaluation(make_submission(owner), status="scored", started_at=timezone.now())
    newcomer = make_evaluation(make_submission(collaborator))
    order = scoring.fair_queue()
    assert order[0] == newcomer.pk
    assert order[1:] == [evaluation.pk for evaluation in backlog]


@pytest.mark.django_db
def test_rescoring_waits_behind_users_submissions(owner, collaborator):
    """An older rescore evaluation still runs after a newer user submission."""
    rescore = make_evaluation(make_submission(owner), is_rescore=True, priority=9)
    user = make_evaluation(make_submission(collaborator))
    assert scoring.fair_queue() == [user.pk, rescore.pk]


@pytest.mark.django_db
def test_run_next_skips_an_evaluation_another_worker_took(owner, fake_evaluator, monkeypatch):
    """When the first candidate was claimed meanwhile, the worker moves on to the next one."""
    taken, free = make_evaluation(make_submission(owner)), make_evaluation(make_submission(owner))
    ran = []
    monkeypatch.setattr(scoring, "fair_queue", lambda: [taken.pk, free.pk])
    monkeypatch.setattr(scoring, "run_claimed", lambda pk, token: ran.append(pk))
    EVALUATIONS.claim(taken.pk, "other:1")
    assert scoring.run_next(taken.pk, "me:2") == free.pk
    assert ran == [free.pk]


# --------------------------------------------------------------------------- a full run


@pytest.mark.django_db
def test_it_scores_a_submission_and_stores_everything(owner, imported_sample, fake_evaluator, settings,
                                                      django_capture_on_commit_callbacks, mailoutbox):
    """Scored: one result per task, summary, intervals, artifacts moved, job folder gone, mail sent."""
    generation = get_generation()
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    assert sorted(evaluation.task_results.values_list("task__key", flat=True)) == ["101", "dev-b"]
    assert evaluation.tasks_done == evaluation.tasks_total == 2
    assert evaluation.final_ci_low <= evaluation.final <= evaluation.final_ci_high
    assert evaluation.evaluator_version == "fake-1" and evaluation.summary["n_tasks"] == 2
    assert (Path(settings.ARTIFACTS_ROOT) / str(evaluation.pk) / "results.json").is_file()
    assert not (Path(settings.JOBS_ROOT) / str(evaluation.pk)).exists()
    assert get_generation() > generation
    assert len(mailoutbox) == 1 and "scored" in mailoutbox[0].subject
    assert "task 101: trying SECRET-DEV" in evaluation.log  # dev ground truth is public


@pytest.mark.django_db
def test_saving_a_task_result_twice_keeps_one_row(owner, imported_sample):
    """Results are written idempotently: a retried job overwrites, never duplicates."""
    evaluation = make_evaluation(make_submission(owner))
    task = imported_sample[0]
    evaluator_run.save_task_result(evaluation, task, {"final": 0.2, "steps_passed": 1, "steps_total": 2})
    evaluator_run.save_task_result(evaluation, task, {"final": 0.4, "steps_passed": 2, "steps_total": 2})
    assert list(TaskResult.objects.filter(evaluation=evaluation).values_list("final", flat=True)) == [0.4]


@pytest.mark.django_db
def test_a_stale_claim_cannot_finish_the_evaluation(owner, imported_sample):
    """Scores arriving under a claim that no longer holds are not stored as the outcome."""
    evaluation = make_evaluation(make_submission(owner))
    EVALUATIONS.claim(evaluation.pk, "a:1")
    document = {"tasks": {}, "summary": {"final": 1.0}}
    assert not scoring.store_scores(evaluation, "not-the-token", document, "", None)
    evaluation.refresh_from_db()
    assert evaluation.status == "running" and evaluation.final is None


@pytest.mark.django_db
def test_test_split_ground_truth_is_scrubbed_from_the_log(owner, imported_sample, fake_evaluator,
                                                          django_capture_on_commit_callbacks):
    """The evaluator printed a held-out action description; the stored log hides it."""
    evaluation = run(queued(owner, TEST_PAGES, "test"), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored"
    assert "task 201: trying [hidden]" in evaluation.log
    assert "SECRET-TEST" not in evaluation.log


# --------------------------------------------------------------------------- failures


@pytest.mark.django_db
@pytest.mark.parametrize(("split", "pages", "named"), [("test", TEST_PAGES, False), ("dev", PAGES, True)])
def test_a_failure_reason_quotes_no_log_line_naming_a_held_out_task(
        owner, imported_sample, fake_evaluator, monkeypatch, django_capture_on_commit_callbacks, mailoutbox,
        split, pages, named):
    """The last log line names the task whose worker was killed: a test-split failure reason (read by
    everyone who may open the submission, mailed to the owner) leaves it out; the stored log keeps it."""
    steer("--fake-mode worker-killed")
    evaluation = run(queued(owner, pages, split), django_capture_on_commit_callbacks)
    first = next(iter(pages))
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "page")
    assert f"worker process died (task {first})" in evaluation.log
    assert (f"(task {first})" in evaluation.failure_reason) is named
    assert (f"(task {first})" in mailoutbox[0].body) is named


@pytest.mark.django_db
def test_an_evaluator_exiting_with_an_error_fails_as_the_pages_doing_and_is_charged(
        owner, imported_sample, fake_evaluator, monkeypatch, django_capture_on_commit_callbacks, mailoutbox):
    """A non-zero exit while scoring the pages: failed, kind page, reason with the last log line, still charged
    (refunding it would let a page probe the held-out tasks for free)."""
    steer("--fake-mode crash")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "page")
    assert "RuntimeError: simulated evaluator bug" in evaluation.failure_reason
    assert "exit status 1" in evaluation.failure_reason
    assert "count against your daily quota" in evaluation.failure_reason
    assert "Traceback" in evaluation.log
    assert charged(evaluation) is True
    assert len(mailoutbox) == 1 and "not charged" not in mailoutbox[0].body


@pytest.mark.django_db
def test_an_evaluator_killed_like_the_out_of_memory_killer_is_charged_without_retry(
        owner, imported_sample, fake_evaluator, monkeypatch, django_capture_on_commit_callbacks):
    """SIGKILL while the pages run (what the kernel sends a process out of memory): failed, kind page, charged."""
    steer("--fake-mode signal")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind, evaluation.attempts) == ("failed", "page", 1)
    assert "killed by signal 9" in evaluation.failure_reason
    assert charged(evaluation) is True


@pytest.mark.django_db
def test_an_evaluator_stopped_by_the_machine_is_retried_then_given_up_uncharged(
        owner, imported_sample, fake_evaluator, monkeypatch, settings, django_capture_on_commit_callbacks):
    """SIGTERM (a machine or container shutting down) = infrastructure: re-queued while attempts remain,
    then failed, never charged."""
    steer("--fake-mode stopped")
    settings.CLAIM_MAX_ATTEMPTS = 2
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.attempts, evaluation.claim_token) == ("queued", 1, "")
    assert fake_evaluator == [evaluation.pk]  # a new wake-up was sent
    evaluation = run(evaluation, django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "infrastructure")
    assert "stopped by signal 15" in evaluation.failure_reason and "2 attempts" in evaluation.failure_reason
    assert charged(evaluation) is False


@pytest.mark.django_db
def test_a_job_over_its_time_limit_is_stopped_and_charged(owner, imported_sample, fake_evaluator, monkeypatch,
                                                          settings, django_capture_on_commit_callbacks):
    """A hanging job is killed at the limit: failed with kind time_limit, still charged."""
    steer("--fake-mode hang")
    settings.EVALUATION_TIME_LIMIT_SECONDS = 1
    monkeypatch.setattr(evaluator_run, "STOP_GRACE_SECONDS", 1)
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "time_limit")
    assert "longer than the limit" in evaluation.failure_reason
    assert evaluation.task_results.count() == 1  # the task finished before the hang is kept
    assert charged(evaluation) is True


@pytest.mark.django_db
def test_the_sandbox_time_limit_message_counts_as_time_limit(owner, imported_sample, fake_evaluator, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    """When the evaluator's own sandbox stops the job for time, the failure says time limit."""
    steer("--fake-mode timeout-message")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "time_limit")


@pytest.mark.django_db
def test_a_bundle_the_intake_rules_refuse_fails_as_the_bundles_fault(owner, imported_sample, fake_evaluator,
                                                                     django_capture_on_commit_callbacks):
    """A stored bundle that is no longer a zip fails with kind bundle and the intake's reason."""
    evaluation = queued(owner)
    with evaluation.submission.bundle.open("wb") as handle:
        handle.write(b"not a zip at all")
    evaluation = run(evaluation, django_capture_on_commit_callbacks)
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "bundle")
    assert "not a zip file" in evaluation.failure_reason


@pytest.mark.django_db
def test_cancelling_a_running_evaluation_stops_its_evaluator(owner, imported_sample, fake_evaluator, monkeypatch,
                                                             django_capture_on_commit_callbacks):
    """The owner cancels mid-run: the worker's next heartbeat finds no claim and stops; nothing is scored."""
    steer("--fake-delay 2")
    beat = evaluator_run.EvaluatorRun.heartbeat

    def cancel_then_beat(job):
        if job.process is not None:
            Evaluation.objects.filter(pk=job.evaluation.pk).update(status="cancelled")
        return beat(job)

    monkeypatch.setattr(evaluator_run.EvaluatorRun, "heartbeat", cancel_then_beat)
    evaluation = queued(owner)
    token = EVALUATIONS.claim(evaluation.pk, "n:1")
    job = evaluator_run.EvaluatorRun(evaluation, token)
    outcome = job.run()
    job.cleanup()
    assert outcome.status == "lost"
    assert job.process.returncode is not None  # the evaluator was stopped
    evaluation.refresh_from_db()
    assert evaluation.status == "cancelled" and evaluation.final is None


# --------------------------------------------------------------------------- the reaper


@pytest.mark.django_db
def test_the_reaper_requeues_a_running_evaluation_whose_worker_died(owner, fake_evaluator, settings,
                                                                    django_capture_on_commit_callbacks):
    """A stale heartbeat means a dead worker: the evaluation is queued again and a wake-up sent."""
    old = timezone.now() - timedelta(seconds=settings.CLAIM_STALE_SECONDS + 5)
    dead = make_evaluation(make_submission(owner), status="running", heartbeat_at=old, attempts=1,
                           claim_token="t", dispatched_at=timezone.now())
    alive = make_evaluation(make_submission(owner), status="running", heartbeat_at=timezone.now(), attempts=1,
                            claim_token="u", dispatched_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        counts = reaper.reap()
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert counts["queued"] == 1 and dead.status == "queued" and dead.claim_token == ""
    assert alive.status == "running"
    assert fake_evaluator == [dead.pk]


@pytest.mark.django_db
def test_the_reaper_gives_up_after_the_last_attempt_without_charging(owner, fake_evaluator, settings,
                                                                     django_capture_on_commit_callbacks):
    """A worker died on the last allowed attempt: failed as infrastructure and refunded."""
    old = timezone.now() - timedelta(seconds=settings.CLAIM_STALE_SECONDS + 5)
    evaluation = make_evaluation(make_submission(owner), status="running", heartbeat_at=old, claim_token="t",
                                 attempts=settings.CLAIM_MAX_ATTEMPTS)
    with django_capture_on_commit_callbacks(execute=True):
        reaper.reap()
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.failure_kind) == ("failed", "infrastructure")
    evaluation.submission.refresh_from_db()
    assert evaluation.submission.charged is False


@pytest.mark.django_db
def test_the_reaper_resends_wake_ups_nobody_picked_up(owner, fake_evaluator, settings):
    """Queued evaluations never dispatched, or dispatched long ago, get a new wake-up."""
    never = make_evaluation(make_submission(owner))
    long_ago = make_evaluation(make_submission(owner), dispatched_at=timezone.now() - timedelta(days=1))
    make_evaluation(make_submission(owner), dispatched_at=timezone.now())
    assert reaper.reap()["redispatched"] == 2
    assert sorted(fake_evaluator) == sorted([never.pk, long_ago.pk])


@pytest.mark.django_db
def test_a_restarted_worker_node_requeues_what_it_was_running(owner, fake_evaluator,
                                                              django_capture_on_commit_callbacks):
    """At start a node re-queues its own orphans at once; other nodes' work is left alone."""
    mine = make_evaluation(make_submission(owner), status="running", worker="w1@host:11", claim_token="a",
                           heartbeat_at=timezone.now(), attempts=1)
    theirs = make_evaluation(make_submission(owner), status="running", worker="w10@host:12", claim_token="b",
                             heartbeat_at=timezone.now(), attempts=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert reaper.reap_node("w1@host") == 1
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == ("queued", "running")


@pytest.mark.django_db
def test_dispatch_survives_a_broker_that_refuses(owner, monkeypatch):
    """A broker error leaves the evaluation queued and undispatched, for the reaper to resend."""
    from leaderboard import tasks

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(tasks.evaluate, "apply_async", refuse)
    evaluation = make_evaluation(make_submission(owner))
    assert dispatch.evaluation(evaluation.pk) is False
    evaluation.refresh_from_db()
    assert evaluation.status == "queued" and evaluation.dispatched_at is None


@pytest.mark.django_db
def test_an_owner_less_submission_is_scheduled_like_any_user(fake_evaluator):
    """Baseline rows (no owner) take part in fair ordering without errors."""
    baseline = make_evaluation(make_submission(None, kind="baseline"))
    other = make_evaluation(make_submission(make_user()))
    assert set(scoring.fair_queue()) == {baseline.pk, other.pk}

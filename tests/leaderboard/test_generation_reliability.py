"""Generation jobs survive dead workers and lost wake-ups, can be cancelled, and show up as "generating"."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard import crypto, tasks
from leaderboard.intake import dispatch, evaluations
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.worker import generating, reaper
from leaderboard.worker.claims import GENERATION_JOBS
from tests.evaluator.fake_endpoint import FakeEndpoint
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_submission

pytest_plugins = ["tests.leaderboard.datasets", "tests.leaderboard.generation_support"]  # fixtures

API_KEY = "sk-reliability-0a1b2c3d4e5f-KEY"


class Killed(BaseException):
    """Stands for SIGKILL: nothing of the worker's own clean-up below the raise runs."""


@pytest.fixture
def four_tasks(db, tasks_root, tmp_path, tiny_video):
    """A dev split of four published tasks (enough to see a run stop or resume part-way)."""
    from leaderboard import tasksets
    from tests.leaderboard.datasets import build_dataset, make_record

    records = [make_record(f"t{n}", "dev", n_actions=1) for n in range(1, 5)]
    tasksets.import_dataset(build_dataset(tmp_path / "four" / "dev", records, tiny_video), "dev", "four")
    return [record["id"] for record in records]


def reported_pages(job: GenerationJob) -> int:
    """Pages the job's generation report (in its kept folder) lists as generated."""
    report = json.loads((generating.job_folder(job.pk) / "out" / "generation.json").read_text())
    return sum(1 for outcome in report["tasks"].values() if outcome["status"] == "ok")


def make_job(owner, base_url: str = "https://api.example.com/v1", **fields) -> GenerationJob:
    """An endpoint submission (charged) and its generation job holding an encrypted key."""
    submission = make_submission(owner, kind="endpoint", model_name="Endpoint-VL")
    return GenerationJob.objects.create(submission=submission, base_url=base_url, model_id="vl",
                                        api_key_encrypted=crypto.encrypt(API_KEY), **fields)


def running(owner, *, age_seconds: float = 0, attempts: int = 1, worker: str = "w1@host:7", **fields):
    beat = timezone.now() - timedelta(seconds=age_seconds)
    return make_job(owner, status="running", claim_token="tok", worker=worker, attempts=attempts,
                    started_at=beat, heartbeat_at=beat, **fields)


def stale_age(settings) -> float:
    return settings.CLAIM_STALE_SECONDS + 5


def key_of(job: GenerationJob) -> bytes:
    job.refresh_from_db()
    return bytes(job.api_key_encrypted)


# --------------------------------------------------------------------------- claiming


@pytest.mark.django_db
def test_a_job_is_claimed_once_with_a_token_worker_and_heartbeat(owner):
    """Queued -> running for one worker only; the claim records who, when and how many times."""
    job = make_job(owner)
    token = GENERATION_JOBS.claim(job.pk, "w1@host:11")
    assert token and GENERATION_JOBS.claim(job.pk, "w2@host:12") is None
    job.refresh_from_db()
    assert (job.status, job.claim_token, job.worker, job.attempts) == ("running", token, "w1@host:11", 1)
    assert job.heartbeat_at is not None and job.started_at is not None
    assert GENERATION_JOBS.beat(job.pk, token) is True and GENERATION_JOBS.beat(job.pk, "someone-else") is False


@pytest.mark.django_db
def test_a_heartbeat_stops_once_the_claim_is_gone(owner):
    """The heartbeat thread's beat reports a cancelled job as lost (the run then stops between tasks)."""
    job = make_job(owner)
    token = GENERATION_JOBS.claim(job.pk, "w1@host:11")
    heartbeat = GENERATION_JOBS.heartbeat(job.pk, token, interval=60)
    assert heartbeat.beat() is True
    evaluations.cancel(job.submission)
    assert heartbeat.beat() is False


@pytest.mark.django_db
def test_dispatch_records_the_wake_up_and_survives_a_broker_that_refuses(owner, monkeypatch):
    """A sent wake-up is timestamped; a broker error leaves the job queued and undispatched for the reaper."""
    job = make_job(owner)
    monkeypatch.setattr(tasks.generate, "apply_async", lambda *args, **kwargs: None)
    assert dispatch.generation_job(job.pk) is True
    job.refresh_from_db()
    assert job.dispatched_at is not None

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(tasks.generate, "apply_async", refuse)
    assert dispatch.generation_job(job.pk) is False
    job.refresh_from_db()
    assert job.status == "queued" and job.dispatched_at is None


# --------------------------------------------------------------------------- the reaper


@pytest.mark.django_db
def test_the_reaper_requeues_a_job_whose_worker_stopped_beating(owner, settings, sent,
                                                                django_capture_on_commit_callbacks):
    """Stale heartbeat (or none at all, from before heartbeats): queued again with its key, wake-up sent."""
    dead = running(owner, age_seconds=stale_age(settings))
    legacy = make_job(owner, status="running")  # claimed by a worker that never beat
    alive = running(owner, worker="w2@host:8")
    with django_capture_on_commit_callbacks(execute=True):
        counts = reaper.reap()
    assert counts["generation"]["requeued"] == 2
    for job in (dead, legacy):
        job.refresh_from_db()
        assert (job.status, job.claim_token, job.worker, job.heartbeat_at) == ("queued", "", "", None)
        assert crypto.decrypt(key_of(job)) == API_KEY  # the resumed run needs it
    alive.refresh_from_db()
    assert alive.status == "running" and alive.claim_token == "tok"
    assert sorted(sent["generate"]) == sorted([dead.pk, legacy.pk])


@pytest.mark.django_db
def test_the_reaper_fails_a_job_after_its_last_attempt_erasing_the_key_and_refunding(
        owner, settings, sent, mailoutbox, django_capture_on_commit_callbacks):
    """A worker died on the last allowed claim: failed as infrastructure, key erased, slot given back."""
    job = running(owner, age_seconds=stale_age(settings), attempts=settings.CLAIM_MAX_ATTEMPTS)
    with django_capture_on_commit_callbacks(execute=True):
        assert reaper.reap()["generation"]["failed"] == 1
    job.refresh_from_db()
    assert job.status == "failed" and key_of(job) == b"" and job.finished_at is not None
    assert "stopped responding" in job.failure_reason and "gave up after 3 attempts" in job.failure_reason
    evaluation = job.submission.evaluations.get()
    assert (evaluation.status, evaluation.failure_kind) == ("failed", Evaluation.FailureKind.INFRASTRUCTURE)
    assert evaluation.failure_reason.startswith("Page generation did not finish: the generation worker")
    job.submission.refresh_from_db()
    assert job.submission.charged is False and sent["generate"] == [] and len(mailoutbox) == 1


@pytest.mark.django_db
def test_the_reaper_resends_wake_ups_nobody_picked_up(owner, sent):
    """Queued jobs never dispatched, or dispatched long ago, get a new wake-up; fresh ones do not."""
    never = make_job(owner)
    long_ago = make_job(owner, dispatched_at=timezone.now() - timedelta(days=1))
    make_job(owner, dispatched_at=timezone.now())
    assert generating.reap()["redispatched"] == 2
    assert sorted(sent["generate"]) == sorted([never.pk, long_ago.pk])


@pytest.mark.django_db
def test_a_restarted_worker_node_requeues_its_own_generation_jobs(owner, sent, django_capture_on_commit_callbacks):
    """At start a node re-queues the jobs it held at once; other nodes' jobs are left alone."""
    mine = running(owner, worker="w1@host:11")
    theirs = running(owner, worker="w10@host:12")
    with django_capture_on_commit_callbacks(execute=True):
        assert reaper.reap_node("w1@host") == 1
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, theirs.status) == ("queued", "running") and sent["generate"] == [mine.pk]


@pytest.mark.django_db
def test_the_reaper_removes_folders_of_ended_jobs_only(owner, endpoint_settings):
    """A dead worker's folder goes once its job has ended; a queued job's folder stays for the resume."""
    ended = make_job(owner, status="cancelled")
    waiting = make_job(owner)
    for job in (ended, waiting):
        (generating.job_folder(job.pk) / "out").mkdir(parents=True)
    assert generating.remove_ended_folders() == 1
    assert not generating.job_folder(ended.pk).exists() and generating.job_folder(waiting.pk).exists()


# --------------------------------------------------------------------------- resuming


@pytest.mark.django_db
def test_a_job_whose_worker_was_killed_resumes_keeping_its_pages(
        owner, four_tasks, endpoint_settings, sent, monkeypatch, django_capture_on_commit_callbacks):
    """Killed after the first page: re-queued by the reaper, the next claim asks only for the missing pages."""
    original = generating.record_progress

    def die_after_first_page(job, outcomes):
        original(job, outcomes)
        raise Killed

    with FakeEndpoint() as endpoint:
        job = make_job(owner, base_url=endpoint.base_url)
        monkeypatch.setattr(generating, "record_progress", die_after_first_page)
        with pytest.raises(Killed):
            generating.run(job.pk, "w1@host:1")
        job.refresh_from_db()
        assert (job.status, job.attempts, job.tasks_done) == ("running", 1, 1) and key_of(job) != b""
        kept, asked_before = reported_pages(job), len(endpoint.requests)  # the folder was kept for the resume
        assert kept == 1
        GenerationJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(days=1))
        with django_capture_on_commit_callbacks(execute=True):
            assert generating.reap()["requeued"] == 1
        monkeypatch.setattr(generating, "record_progress", original)
        with django_capture_on_commit_callbacks(execute=True):
            assert generating.run(job.pk, "w2@host:2") == "done"
    assert len(endpoint.requests) - asked_before == len(four_tasks) - kept  # kept pages are not asked again
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker, job.tasks_done) == ("done", 2, "w2@host:2", 4)
    assert job.task_errors == {}
    assert key_of(job) == b"" and not generating.job_folder(job.pk).exists()
    evaluation = job.submission.evaluations.get()
    assert evaluation.status == "queued" and sent["evaluate"] == [evaluation.pk]


# --------------------------------------------------------------------------- cancelling


@pytest.mark.django_db
def test_cancelling_a_queued_job_refunds_erases_the_key_and_a_late_wake_up_does_nothing(
        client, owner, imported_sample, endpoint_settings):
    """Cancel on the submission page: cancelled at once, quota refunded, key gone; the worker finds nothing."""
    with FakeEndpoint() as endpoint:
        job = make_job(owner, base_url=endpoint.base_url)
        response = logged_in(client, owner).post(f"/submissions/{job.submission_id}/cancel/", follow=True)
        assert generating.run(job.pk, "w1@host:1") is None
    assert endpoint.requests == []
    assert "is cancelled. Your quota was refunded." in response.content.decode()
    job.refresh_from_db()
    assert job.status == "cancelled" and key_of(job) == b"" and job.finished_at is not None
    job.submission.refresh_from_db()
    assert job.submission.charged is False
    evaluation = job.submission.evaluations.get()
    assert evaluation.status == "cancelled" and "being generated" in evaluation.failure_reason


@pytest.mark.django_db
def test_cancelling_during_generation_stops_the_worker_between_tasks(
        owner, four_tasks, endpoint_settings, sent, monkeypatch):
    """Cancelled while the first page is made: the key is erased at once, no further page is asked for."""
    original = generating.record_progress
    with FakeEndpoint() as endpoint:
        job = make_job(owner, base_url=endpoint.base_url)

        def cancel_then_record(claimed, outcomes):
            evaluations.cancel(claimed.submission)
            assert key_of(job) == b""  # erased before the worker even noticed
            return original(claimed, outcomes)

        monkeypatch.setattr(generating, "record_progress", cancel_then_record)
        assert generating.run(job.pk, "w1@host:1") == "cancelled"
    # The task under way when the claim was found gone still ends; no task after it starts.
    assert 1 <= len(endpoint.requests) <= 2 < len(four_tasks)
    job.refresh_from_db()
    assert job.status == "cancelled" and not generating.job_folder(job.pk).exists()
    job.submission.refresh_from_db()
    assert not job.submission.bundle and job.submission.charged is True  # a running job's slot is spent
    assert [e.status for e in job.submission.evaluations.all()] == ["cancelled"] and sent["evaluate"] == []


@pytest.mark.django_db
def test_the_api_cancels_an_endpoint_submission_once(owner, outsider, imported_sample):
    """POST .../cancel/: 200 with the cancelled state, then 409; others get 404."""
    from rest_framework.authtoken.models import Token

    job = make_job(owner)
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    other = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=outsider).key}")
    url = f"/api/v1/endpoint-submissions/{job.submission_id}/cancel/"
    assert other.post(url).status_code == 404
    first = api.post(url)
    assert first.status_code == 200 and first.json()["generation"]["status"] == "cancelled"
    assert first.json()["generation"]["api_key_stored"] is False
    assert first.json()["evaluation"]["status"] == "cancelled"
    again = api.post(url)
    assert again.status_code == 409 and "cannot be cancelled" in again.json()["detail"]


@pytest.mark.django_db
def test_a_finished_generation_cancels_the_evaluation_instead(owner, sent):
    """Once pages are generated, cancelling an endpoint submission cancels its queued evaluation."""
    job = make_job(owner, status="done")
    evaluation = evaluations.queue_evaluation(job.submission, _protocol())
    assert evaluations.cancel(job.submission).pk == evaluation.pk
    evaluation.refresh_from_db()
    assert evaluation.status == "cancelled"


def _protocol():
    from evaluator.protocols import get_protocol

    return get_protocol("iwr-det")


# --------------------------------------------------------------------------- what people see


@pytest.mark.django_db
def test_a_submission_being_generated_shows_as_generating_with_a_link(client, owner, collaborator, imported_sample):
    """List, detail page and API say "generating" (not "not evaluated") and link the generation page."""
    job = make_job(owner)
    url = f"/submissions/{job.submission_id}/generation/"
    logged_in(client, owner)
    state = client.get(f"/api/v1/submissions/{job.submission_id}/").json()
    assert state["status"] == "generating" and state["generation"]["url"] == url
    assert state["generation"]["status"] == "queued"
    listing = client.get("/submissions/").content.decode()
    assert "generating" in listing and url in listing and "not evaluated" not in listing
    detail = client.get(f"/submissions/{job.submission_id}/").content.decode()
    assert 'id="status-badge">generating' in detail and url in detail and 'id="cancel-form"' in detail
    public = logged_in(Client(), collaborator).get(f"/api/v1/submissions/{job.submission_id}/").json()
    assert public["status"] == "generating" and "generation" not in public  # managers only
    page = client.get(url).content.decode()
    assert 'id="cancel-form"' in page and "refunds your quota" in page


@pytest.mark.django_db
def test_the_submit_page_links_the_endpoint_form(client, owner, imported_sample):
    """People without pages find the endpoint submission from the Submit page."""
    page = logged_in(client, owner).get("/submit/").content.decode()
    assert 'href="/submit/endpoint/"' in page


@pytest.mark.django_db
def test_a_resumed_job_says_so_on_its_page(client, owner, imported_sample):
    """The generation page tells the owner a worker stopped and the run resumed with its pages."""
    job = running(owner, attempts=2)
    page = logged_in(client, owner).get(f"/submissions/{job.submission_id}/generation/").content.decode()
    assert "attempt 2: resumed after a worker stopped" in page


@pytest.mark.django_db
def test_generated_bundles_can_be_rescored(owner, sent, django_capture_on_commit_callbacks):
    """An endpoint submission with its generated bundle stored is rescorable like an upload."""
    from tests.leaderboard.factories import make_bundle_submission

    submission = make_bundle_submission(owner, pages={"101": "<p>x</p>"}, kind=Submission.Kind.ENDPOINT)
    assert evaluations.rescorable(submission)
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = evaluations.queue_rescore(submission)
    assert evaluation is not None and evaluation.is_rescore and sent["evaluate"] == [evaluation.pk]
    assert not evaluations.rescorable(make_submission(owner, kind="endpoint"))  # nothing generated yet

"""Model-endpoint submissions: form and API, generation against a fake endpoint, hand-over to scoring, key secrecy."""

from __future__ import annotations

import io
import json
import logging
import zipfile
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from leaderboard import crypto, tasks
from leaderboard.intake import endpoints
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.worker import generating
from tests.evaluator.fake_endpoint import FakeEndpoint, Reply, completion
from tests.leaderboard.base import logged_in

pytest_plugins = ["tests.leaderboard.datasets", "tests.leaderboard.generation_support"]  # fixtures

API_KEY = "sk-live-9f8e7d6c5b4a-endpoint-secret-KEY"


@pytest.fixture
def no_waits(monkeypatch):
    """Retries do not really sleep."""
    monkeypatch.setattr("evaluator.generation.time.sleep", lambda seconds: None)


def fields(base_url: str, **overrides) -> dict:
    return {"split": "dev", "protocol": "iwr-det", "model_name": "Endpoint-VL-7B", "organisation": "Lab",
            "model_size": "7B", "public": "on", "base_url": base_url, "model_id": "vl-7b-instruct",
            "api_key": API_KEY, "max_tokens": "3000", "max_images": "70", "max_frames": "64", **overrides}


def submit(client, owner, base_url: str, capture, **overrides):
    with capture(execute=True):
        return logged_in(client, owner).post("/submit/endpoint/", fields(base_url, **overrides))


def run_job(job: GenerationJob, capture):
    with capture(execute=True):
        ended = tasks.generate(job.pk)
    job.refresh_from_db()
    return ended


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def zip_pages(submission: Submission) -> dict[str, str]:
    with submission.bundle.open("rb") as handle, zipfile.ZipFile(io.BytesIO(handle.read())) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


# --------------------------------------------------------------------------- the whole path


@pytest.mark.django_db
def test_an_endpoint_submission_is_generated_stored_and_queued_for_scoring(
        client, owner, imported_sample, endpoint_settings, sent, caplog, django_capture_on_commit_callbacks):
    """Form -> encrypted key -> pages from the endpoint -> bundle stored -> scoring queued; key erased, never shown."""
    caplog.set_level(logging.DEBUG)
    capture = django_capture_on_commit_callbacks
    with FakeEndpoint() as endpoint:
        response = submit(client, owner, endpoint.base_url, capture)
        assert response.status_code == 302
        job = GenerationJob.objects.select_related("submission").get()
        assert response["Location"] == f"/submissions/{job.submission_id}/generation/"
        assert sent["generate"] == [job.pk] and job.status == "queued"
        assert API_KEY.encode() not in bytes(job.api_key_encrypted)
        assert crypto.decrypt(job.api_key_encrypted) == API_KEY
        assert run_job(job, capture) == "done"
        assert tasks.generate(job.pk) is None  # a second delivery finds nothing to do
    assert len(endpoint.requests) == 2
    for request in endpoint.requests:
        assert request.headers["Authorization"] == f"Bearer {API_KEY}"
        assert request.body["model"] == "vl-7b-instruct" and request.body["temperature"] == 0
        assert request.body["max_tokens"] == 3000
        assert [mime for mime, _ in request.images] == ["image/png", "image/jpeg"]  # stitched first, 1 s video
    assert job.status == "done" and bytes(job.api_key_encrypted) == b"" and job.tasks_done == 2
    submission = job.submission
    assert submission.kind == "endpoint" and submission.owner == owner and submission.charged
    pages = zip_pages(submission)
    assert sorted(pages) == ["101/index.html", "dev-b/index.html"]
    assert "<iframe" not in pages["101/index.html"] and "__PLACEHOLDER_ASSETS_BASE_DIR__" in pages["101/index.html"]
    evaluation = submission.evaluations.get()
    assert evaluation.status == Evaluation.Status.QUEUED and sent["evaluate"] == [evaluation.pk]
    assert evaluation.protocol_name == "iwr-det" and evaluation.tasks_total == 2

    shown = [client.get(f"/submissions/{submission.pk}/generation/"),
             client.get(f"/api/v1/endpoint-submissions/{submission.pk}/"),
             client.get("/api/v1/endpoint-submissions/"),
             client.get(f"/submissions/{submission.pk}/generation/bundle.zip"),
             client.get("/submit/endpoint/")]
    assert [r.status_code for r in shown] == [200, 200, 200, 200, 200]
    assert b"Download the generated bundle" in shown[0].content
    for r in shown:
        assert API_KEY.encode() not in body_of(r)
    assert API_KEY not in caplog.text and API_KEY not in response.content.decode()
    dump = io.StringIO()
    call_command("dumpdata", "leaderboard", stdout=dump)
    assert API_KEY not in dump.getvalue()


@pytest.mark.django_db
def test_generation_for_the_held_out_split_sends_no_ground_truth(
        client, owner, imported_sample, endpoint_settings, sent, django_capture_on_commit_callbacks):
    """Test-split tasks: the model sees video, assets and resolution only, never descriptions or assertions."""
    capture = django_capture_on_commit_callbacks
    with FakeEndpoint() as endpoint:
        assert submit(client, owner, endpoint.base_url, capture, split="test").status_code == 302
        assert run_job(GenerationJob.objects.get(), capture) == "done"
    assert len(endpoint.requests) == 2
    for request in endpoint.requests:
        raw = json.dumps(request.body)
        assert "SECRET-" not in raw and "secret-" not in raw and "320x240" in request.text


# --------------------------------------------------------------------------- failures


@pytest.mark.django_db
def test_a_refused_key_fails_the_submission_with_the_reason_and_refunds_it(
        client, owner, imported_sample, endpoint_settings, sent, django_capture_on_commit_callbacks, mailoutbox):
    """HTTP 401 on every task: no bundle, a failed evaluation of kind generation, quota refunded, key erased."""
    capture = django_capture_on_commit_callbacks
    refusal = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    with FakeEndpoint([Reply(401, refusal), Reply(401, refusal)]) as endpoint:
        submit(client, owner, endpoint.base_url, capture)
        job = GenerationJob.objects.select_related("submission").get()
        assert run_job(job, capture) == "failed"
    assert len(endpoint.requests) == 2 and bytes(job.api_key_encrypted) == b""
    assert job.failure_reason.startswith("the endpoint refused the API key (HTTP 401)")
    assert job.failure_reason.endswith("(every task).") and API_KEY not in job.failure_reason
    assert set(job.task_errors) == {"101", "dev-b"}
    job.submission.refresh_from_db()
    assert not job.submission.bundle and not job.submission.charged
    evaluation = job.submission.evaluations.get()
    assert evaluation.status == "failed" and evaluation.failure_kind == Evaluation.FailureKind.GENERATION
    assert "HTTP 401" in evaluation.failure_reason and sent["evaluate"] == []
    state = logged_in(client, owner).get(f"/api/v1/submissions/{job.submission_id}/").json()
    assert state["status"] == "failed" and "HTTP 401" in state["failure"]["reason"]
    assert len(mailoutbox) == 1 and API_KEY not in mailoutbox[0].body


@pytest.mark.django_db
def test_tasks_without_a_page_are_listed_and_the_rest_is_scored(
        client, owner, imported_sample, endpoint_settings, sent, no_waits, django_capture_on_commit_callbacks):
    """One malformed answer and one rate limit then success: one page missing with its reason, scoring queued."""
    capture = django_capture_on_commit_callbacks
    script = [Reply(body=completion(content="I cannot do that.")), Reply(429, {"error": "slow"}, {"Retry-After": "1"})]
    with FakeEndpoint(script) as endpoint:
        submit(client, owner, endpoint.base_url, capture)
        job = GenerationJob.objects.select_related("submission").get()
        assert run_job(job, capture) == "done"
    assert len(endpoint.requests) == 3
    assert list(job.task_errors) == ["101"] and "no ```html fenced block" in job.task_errors["101"]
    assert sorted(zip_pages(job.submission)) == ["dev-b/index.html"]
    assert job.submission.evaluations.get().status == "queued"
    page = logged_in(client, owner).get(f"/submissions/{job.submission_id}/generation/").content.decode()
    assert "Tasks without a page" in page and "no ```html fenced block" in page


@pytest.mark.django_db
def test_a_key_that_cannot_be_decrypted_fails_with_a_clear_reason(
        client, owner, imported_sample, endpoint_settings, sent, django_capture_on_commit_callbacks):
    """The server's encryption secret changed after submitting: the job fails, asks to submit again, is refunded."""
    capture = django_capture_on_commit_callbacks
    with FakeEndpoint() as endpoint:
        submit(client, owner, endpoint.base_url, capture)
        endpoint_settings.IWR_ENCRYPTION_KEY = "a-completely-different-secret-for-this-test"
        job = GenerationJob.objects.select_related("submission").get()
        assert run_job(job, capture) == "failed"
    assert endpoint.requests == [] and "could not be read back" in job.failure_reason
    assert bytes(job.api_key_encrypted) == b""


@pytest.mark.django_db
def test_an_internal_error_still_erases_the_key_and_refunds(
        client, owner, imported_sample, endpoint_settings, sent, monkeypatch, django_capture_on_commit_callbacks):
    """A bug in the worker: the job fails with an internal-error reason, the key is gone, the slot given back."""
    capture = django_capture_on_commit_callbacks
    submit(client, owner, "https://api.example.com/v1", capture)
    monkeypatch.setattr(generating, "generate_pages", lambda job, folder: 1 / 0)
    job = GenerationJob.objects.select_related("submission").get()
    assert run_job(job, capture) == "failed"
    assert "internal error (ZeroDivisionError)" in job.failure_reason and bytes(job.api_key_encrypted) == b""
    job.submission.refresh_from_db()
    assert not job.submission.charged


# --------------------------------------------------------------------------- the form and the API


@pytest.mark.django_db
def test_the_form_refuses_internal_addresses_and_bad_limits_all_at_once(client, owner, imported_sample, settings):
    """Loopback endpoint, 80 images and no model id: one answer listing all three; nothing stored."""
    settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS = False
    response = logged_in(client, owner).post("/submit/endpoint/", fields(
        "http://127.0.0.1:8080/v1", max_images="80", model_id=""))
    assert response.status_code == 400
    form = response.context["form"]
    assert "non-public address (127.0.0.1)" in form.errors["base_url"][0]
    assert set(form.errors) >= {"base_url", "max_images", "model_id"}
    assert not Submission.objects.exists() and not GenerationJob.objects.exists()
    assert API_KEY.encode() not in response.content  # the password field is never filled back in


@pytest.mark.parametrize("url", ["http://169.254.169.254/v1", "http://10.0.0.8/v1", "http://[::1]:8000/v1"])
def test_non_public_endpoint_addresses_are_refused(url, settings):
    """Cloud metadata, private networks and loopback are not called for strangers."""
    settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS = False
    assert "non-public address" in endpoints.endpoint_problems(url)[0]


@pytest.mark.django_db
def test_the_submit_page_needs_a_login_and_a_csrf_token(owner, imported_sample):
    """Anonymous visitors are sent to log in; a post without the CSRF token is refused."""
    assert Client().get("/submit/endpoint/")["Location"].startswith("/accounts/login/")
    strict = logged_in(Client(enforce_csrf_checks=True), owner)
    assert strict.post("/submit/endpoint/", fields("https://api.example.com/v1")).status_code == 403
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_the_api_accepts_an_endpoint_with_token_auth_and_never_returns_the_key(
        owner, outsider, imported_sample, endpoint_settings, sent, django_capture_on_commit_callbacks):
    """POST JSON with a token: 201 and the state without the key; others get 404; problems are listed."""
    token = Token.objects.create(user=owner)
    api = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    body = {**fields("https://api.example.com/v1"), "public": False, "open_weights": True, "max_frames": 20}
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/endpoint-submissions/", json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["status"] == "queued" and created["generation"]["max_frames"] == 20
    assert created["generation"]["api_key_stored"] is True and API_KEY not in response.content.decode()
    submission = Submission.objects.get(pk=created["id"])
    assert submission.kind == "endpoint" and not submission.public and submission.open_weights
    assert sent["generate"] == [submission.generation.pk]
    other = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=outsider).key}")
    assert other.get(f"/api/v1/endpoint-submissions/{submission.pk}/").status_code == 404
    assert other.get(f"/submissions/{submission.pk}/generation/").status_code in (302, 404)
    bad = api.post("/api/v1/endpoint-submissions/", json.dumps({**body, "max_images": 80, "base_url": "ftp://x"}),
                   content_type="application/json")
    assert bad.status_code == 400 and set(bad.json()) >= {"max_images", "base_url"}
    assert Client().post("/api/v1/endpoint-submissions/", json.dumps(body),
                         content_type="application/json").status_code in (401, 403)


@pytest.mark.django_db
def test_outsiders_cannot_see_the_generation_page_or_download_the_bundle(client, owner, outsider, staff):
    """Another user's endpoint submission is a 404 (page and bundle); its owner and staff see it."""
    from tests.leaderboard.factories import make_submission

    submission = make_submission(owner, kind="endpoint", public=True)
    GenerationJob.objects.create(submission=submission, base_url="https://api.example.com/v1", model_id="m")
    assert logged_in(client, outsider).get(f"/submissions/{submission.pk}/generation/").status_code == 404
    assert client.get(f"/submissions/{submission.pk}/generation/bundle.zip").status_code == 404
    assert logged_in(Client(), staff).get(f"/submissions/{submission.pk}/generation/").status_code == 200
    assert logged_in(Client(), owner).get(f"/submissions/{submission.pk}/generation/bundle.zip").status_code == 404


@pytest.mark.django_db
def test_an_endpoint_submission_is_charged_to_the_daily_quota(
        client, owner, imported_sample, endpoint_settings, sent, django_capture_on_commit_callbacks):
    """With the day's test-split quota used up, the form says so and stores nothing."""
    endpoint_settings.SUBMISSION_QUOTAS = {"dev": 20, "test": 1}
    capture = django_capture_on_commit_callbacks
    assert submit(client, owner, "https://api.example.com/v1", capture, split="test").status_code == 302
    response = submit(client, owner, "https://api.example.com/v1", capture, split="test")
    assert response.status_code == 400 and "used all 1 submissions" in response.content.decode()
    assert Submission.objects.count() == 1


# --------------------------------------------------------------------------- encryption at rest


def test_keys_are_encrypted_and_only_the_same_secret_reads_them(settings):
    """A stored token hides the key; a different server secret cannot read it."""
    settings.IWR_ENCRYPTION_KEY = "secret-one"
    token = crypto.encrypt(API_KEY)
    assert API_KEY.encode() not in token and crypto.decrypt(memoryview(token)) == API_KEY
    settings.IWR_ENCRYPTION_KEY = "secret-two"
    with pytest.raises(crypto.DecryptionFailed):
        crypto.decrypt(token)
    settings.IWR_ENCRYPTION_KEY = ""
    assert crypto.decrypt(crypto.encrypt("x")) == "x"  # falls back to SECRET_KEY


@pytest.mark.django_db
def test_the_worker_checks_every_request_address_unless_private_endpoints_are_allowed(owner, settings):
    """The endpoint config the worker builds refuses non-public addresses at request time (DNS rebinding)."""
    from leaderboard.worker.generating import endpoint_config

    job = SimpleNamespace(base_url="https://models.example.org/v1", model_id="m", max_tokens=1000, max_images=4,
                          max_frames=4, default_temperature=False, length_parameter="")
    settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS = False
    assert endpoint_config(job, "key").public_only is True
    settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS = True
    assert endpoint_config(job, "key").public_only is False

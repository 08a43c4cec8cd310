"""Submitting from the browser and the API: validation, storage, authorisation, CSRF, cancel."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, Submission
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation, make_task_result

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures

PAGE = "<!doctype html><html><body><button class='btn'>Go</button></body></html>"


def zip_bytes(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(data: bytes, name: str = "bundle.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/zip")


def fields(**overrides) -> dict:
    return {"split": "dev", "protocol": "iwr-det", "model_name": "TinyModel-7B", "organisation": "Lab",
            "model_size": "7B", "open_weights": "on", "public": "on", **overrides}


@pytest.fixture
def sent(monkeypatch):
    """Wake-ups sent to workers (instead of a broker)."""
    calls = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: calls.append(evaluation_id) or True)
    return calls


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def stored_files(media: Path) -> list[Path]:
    return [path for path in Path(media).rglob("*") if path.is_file()]


def api_client(user) -> Client:
    token, _ = Token.objects.get_or_create(user=user)
    return Client(HTTP_AUTHORIZATION=f"Token {token.key}")


# --------------------------------------------------------------------------- the browser form


@pytest.mark.django_db
def test_the_submit_page_needs_a_login(client):
    """Anonymous visitors are sent to the login page."""
    response = client.get("/submit/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_the_submit_page_shows_every_field_and_the_quota(client, owner, imported_sample):
    """The form has the issue's fields, the size limit for the browser check and the quotas."""
    page = logged_in(client, owner).get("/submit/").content.decode()
    for name in ("bundle", "split", "protocol", "model_name", "organisation", "model_size", "open_weights",
                 "paper_url", "code_url", "description", "public"):
        assert f'name="{name}"' in page
    assert "data-max-bytes=" in page and "js/submit.js" in page
    assert 'data-split="test"' in page and "split left" in page


@pytest.mark.django_db
def test_a_good_bundle_is_stored_with_a_queued_evaluation(client, owner, imported_sample, media, sent,
                                                          django_capture_on_commit_callbacks):
    """Accepted: one submission, one queued evaluation, the file stored, the wake-up sent after commit."""
    data = zip_bytes({"101/index.html": PAGE})
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in(client, owner).post("/submit/", {**fields(), "bundle": upload(data)})
    submission = Submission.objects.get()
    evaluation = submission.evaluations.get()
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.pk}/"
    assert (submission.owner, submission.model_name, submission.open_weights) == (owner, "TinyModel-7B", True)
    assert submission.bundle.read() == data and submission.bundle_size == len(data)
    assert (evaluation.status, evaluation.protocol, evaluation.tasks_total) == ("queued", "iwr-det-17", 2)
    assert sent == [evaluation.pk]
    notes = [str(message) for message in response.wsgi_request._messages]
    assert any("dev-b" in note and "score 0" in note for note in notes)  # missing task listed, but allowed


BAD_BUNDLES = {
    "not a zip": (b"hello, I am text", "bundle.zip", "not a zip file"),
    "wrong suffix": (zip_bytes({"101/index.html": PAGE}), "bundle.tar", "must be a .zip"),
    "no task pages": (zip_bytes({"pages/home.html": PAGE}), "bundle.zip", "no task page found"),
    "escaping path": (zip_bytes({"101/index.html": PAGE, "../evil.html": "x"}), "bundle.zip", "evil.html"),
    "nested archive": (zip_bytes({"101/index.html": zip_bytes({"a": "b"})}), "bundle.zip", "archives inside"),
    "empty": (zip_bytes({}), "bundle.zip", "empty"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(BAD_BUNDLES))
def test_each_bad_bundle_gets_its_message_and_leaves_nothing_behind(client, owner, imported_sample, media, sent,
                                                                    case):
    """A refused bundle: its specific message on the page, no file, no row, no wake-up."""
    data, name, message = BAD_BUNDLES[case]
    response = logged_in(client, owner).post("/submit/", {**fields(), "bundle": upload(data, name)})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Submission.objects.exists() and not Evaluation.objects.exists()
    assert stored_files(media) == [] and sent == []


@pytest.mark.django_db
def test_every_problem_is_listed_at_once_with_its_task(client, owner, imported_sample, media):
    """Two broken tasks and a missing model name: all three problems in one answer."""
    data = zip_bytes({"101/index.html": zip_bytes({"a": "b"}), "dev-b/index.html": zip_bytes({"c": "d"})})
    response = logged_in(client, owner).post("/submit/", {**fields(model_name=""), "bundle": upload(data)})
    page = response.content.decode()
    assert "101/index.html" in page and "dev-b/index.html" in page
    assert "This field is required" in page


@pytest.mark.django_db
def test_a_bundle_over_the_size_limit_is_refused(client, owner, imported_sample, media, settings):
    """The server repeats the browser's size check."""
    settings.SUBMISSION_MAX_BUNDLE_MB = 1
    data = zip_bytes({"101/index.html": PAGE}) + b"\0" * (1024 * 1024)
    response = logged_in(client, owner).post("/submit/", {**fields(), "bundle": upload(data)})
    assert response.status_code == 400 and "the limit is 1 MB" in response.content.decode()
    assert stored_files(media) == []


@pytest.mark.django_db
def test_an_upload_made_by_the_page_script_gets_json(client, owner, imported_sample, media, sent):
    """submit.js uploads with XMLHttpRequest: refusals return the form HTML, success where to go."""
    logged_in(client, owner)
    bad = client.post("/submit/", {**fields(), "bundle": upload(b"text")}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert bad.status_code == 400 and "not a zip file" in bad.json()["form_html"]
    good = client.post("/submit/", {**fields(), "bundle": upload(zip_bytes({"101/index.html": PAGE}))},
                       HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert good.status_code == 201 and good.json()["redirect"] == f"/submissions/{good.json()['id']}/"


@pytest.mark.django_db
def test_if_storing_fails_no_file_and_no_row_remain(client, owner, imported_sample, media, monkeypatch):
    """A failure after the file was written (creating the evaluation) removes the file and rolls back."""
    from leaderboard.intake import bundles

    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(bundles, "queue_evaluation", broken)
    client.raise_request_exception = True
    with pytest.raises(RuntimeError):
        logged_in(client, owner).post("/submit/", {**fields(), "bundle": upload(zip_bytes({"101/index.html": PAGE}))})
    assert not Submission.objects.exists() and stored_files(media) == []


@pytest.mark.django_db
def test_the_browser_form_enforces_csrf(owner, imported_sample, media):
    """Without the CSRF token, submitting and cancelling are refused."""
    browser = logged_in(Client(enforce_csrf_checks=True), owner)
    response = browser.post("/submit/", {**fields(), "bundle": upload(zip_bytes({"101/index.html": PAGE}))})
    assert response.status_code == 403 and not Submission.objects.exists()
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}))
    assert browser.post(f"/submissions/{evaluation.submission_id}/cancel/").status_code == 403
    evaluation.refresh_from_db()
    assert evaluation.status == "queued"


# --------------------------------------------------------------------------- pages and authorisation


@pytest.mark.django_db
def test_outsiders_get_404_for_a_private_submission_everywhere(client, owner, outsider, imported_sample, media):
    """Page, progress, cancel and results of someone else's private submission are all 404."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}, public=False))
    pk = evaluation.submission_id
    logged_in(client, outsider)
    for url in (f"/submissions/{pk}/", f"/submissions/{pk}/progress.json", f"/submissions/{pk}/results.json"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/submissions/{pk}/cancel/").status_code == 404
    api = api_client(outsider)
    for url in (f"/api/v1/submissions/{pk}/", f"/api/v1/submissions/{pk}/results/"):
        assert api.get(url).status_code == 404, url
    assert api.post(f"/api/v1/submissions/{pk}/cancel/").status_code == 404
    evaluation.refresh_from_db()
    assert evaluation.status == "queued"


@pytest.mark.django_db
def test_a_public_submission_shows_scores_but_not_the_owners_things(client, owner, outsider, imported_sample,
                                                                    media):
    """Anyone may open a public submission; only the owner sees the log and cancel. A public dev-split
    entry's results document is public (no log in it); a private one's stays with its owner."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}),
                                        log="OWNER-ONLY-LOG-LINE")
    pk = evaluation.submission_id
    page = logged_in(client, outsider).get(f"/submissions/{pk}/").content.decode()
    assert "OWNER-ONLY-LOG-LINE" not in page and "Cancel" not in page
    document = client.get(f"/submissions/{pk}/results.json")
    assert document.status_code == 200 and "OWNER-ONLY-LOG-LINE" not in document.content.decode()
    Submission.objects.filter(pk=pk).update(public=False)
    assert client.get(f"/submissions/{pk}/results.json").status_code == 404
    own_page = logged_in(Client(), owner).get(f"/submissions/{pk}/").content.decode()
    assert "Cancel (refunds your quota)" in own_page and "js/progress.js" in own_page


@pytest.mark.django_db
def test_the_progress_endpoint_reports_live_counts_and_rows(client, owner, imported_sample, media):
    """The JSON the page polls: status, done/total and the rows saved so far."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="running",
                                        tasks_done=1)
    make_task_result(evaluation, imported_sample[0], final=0.25)
    state = logged_in(client, owner).get(f"/submissions/{evaluation.submission_id}/progress.json").json()
    assert state["status"] == "running" and state["progress"] == {"tasks_done": 1, "tasks_total": 2}
    assert state["tasks"][0]["task"] == "101" and state["tasks"][0]["final"] == 0.25


@pytest.mark.django_db
def test_test_split_results_never_show_ground_truth(client, owner, imported_sample, media):
    """Downloads and the page of a test-split submission carry scores, not steps or secrets."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"201": PAGE}, split="test"),
                                        status="scored", final=0.3, ifs=0.2, vfs=0.5)
    task = next(task for task in imported_sample if task.key == "201")
    secret = task.record["action_sequence"][0]["parameters"]["description"]
    make_task_result(evaluation, task, steps=[{"description": secret}], error=f"could not find {secret}")
    logged_in(client, owner)
    download = client.get(f"/submissions/{evaluation.submission_id}/results.json")
    page = client.get(f"/submissions/{evaluation.submission_id}/").content.decode()
    api = api_client(owner).get(f"/api/v1/submissions/{evaluation.submission_id}/results/").content.decode()
    for text in (download.content.decode(), page, api):
        assert "SECRET-TEST" not in text
    assert json.loads(download.content)["tasks"] == []  # held-out per-task rows: staff only


@pytest.mark.django_db
def test_my_submissions_lists_only_mine(client, owner, collaborator, imported_sample, media):
    """The list page shows the user's own submissions only."""
    make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}, model_name="MINE-MODEL"))
    make_queued_evaluation(make_bundle_submission(collaborator, pages={"101": PAGE}, model_name="THEIR-MODEL"))
    page = logged_in(client, owner).get("/submissions/").content.decode()
    assert "MINE-MODEL" in page and "THEIR-MODEL" not in page


# --------------------------------------------------------------------------- cancel


@pytest.mark.django_db
def test_cancelling_a_queued_submission_refunds_it(client, owner, imported_sample, media):
    """Queued -> cancelled at once, and the quota slot comes back."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}))
    response = logged_in(client, owner).post(f"/submissions/{evaluation.submission_id}/cancel/")
    evaluation.refresh_from_db()
    evaluation.submission.refresh_from_db()
    assert response.status_code == 302
    assert evaluation.status == "cancelled" and evaluation.submission.charged is False


@pytest.mark.django_db
def test_cancelling_a_running_submission_stops_it_but_keeps_the_charge(owner, imported_sample, media):
    """Running -> cancelled (the worker stops at its next heartbeat); compute was spent, so no refund."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="running")
    response = api_client(owner).post(f"/api/v1/submissions/{evaluation.submission_id}/cancel/")
    evaluation.refresh_from_db()
    evaluation.submission.refresh_from_db()
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert evaluation.submission.charged is True


@pytest.mark.django_db
def test_a_finished_submission_cannot_be_cancelled(owner, imported_sample, media):
    """Cancelling a scored submission answers 409 and changes nothing."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="scored")
    response = api_client(owner).post(f"/api/v1/submissions/{evaluation.submission_id}/cancel/")
    assert response.status_code == 409 and "scored" in response.json()["detail"]


# --------------------------------------------------------------------------- the API


@pytest.mark.django_db
def test_the_api_accepts_a_multipart_submission(owner, imported_sample, media, sent,
                                                django_capture_on_commit_callbacks):
    """POST /api/v1/submissions/ with a token -> 201 with id and status; the wake-up follows the commit."""
    data = {**fields(open_weights="true", public="false"), "bundle": upload(zip_bytes({"101/index.html": PAGE}))}
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client(owner).post("/api/v1/submissions/", data)
    assert response.status_code == 201, response.content
    body = response.json()
    submission = Submission.objects.get(pk=body["id"])
    assert body["status"] == "queued" and any("dev-b" in note for note in body["notes"])
    assert submission.public is False and submission.open_weights is True
    assert sent == [submission.evaluations.get().pk]


@pytest.mark.django_db
def test_the_api_lists_every_problem_of_a_refused_submission(owner, imported_sample, media):
    """A refused API upload answers 400 with the problems per field, and stores nothing."""
    response = api_client(owner).post("/api/v1/submissions/", {**fields(split="train"), "bundle": upload(b"x")})
    assert response.status_code == 400
    assert "split" in response.json() and not Submission.objects.exists()
    response = api_client(owner).post("/api/v1/submissions/", {**fields(), "bundle": upload(b"x")})
    assert "not a zip file" in response.json()["bundle"][0]


@pytest.mark.django_db
def test_the_api_shows_status_progress_and_scores(owner, collaborator, imported_sample, media):
    """Detail has status, progress and scores with their intervals once scored; the list holds only one's own."""
    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="scored",
                                        final=0.5, ifs=0.4, vfs=0.73, tasks_done=2, low_level=0.6,
                                        low_level_ci_low=0.45, low_level_ci_high=0.75, high_level=0.7,
                                        high_level_ci_low=0.55, high_level_ci_high=0.85)
    make_queued_evaluation(make_bundle_submission(collaborator, pages={"101": PAGE}))
    api = api_client(owner)
    detail = api.get(f"/api/v1/submissions/{evaluation.submission_id}/").json()
    assert detail["status"] == "scored" and detail["progress"] == {"tasks_done": 2, "tasks_total": 2}
    assert detail["scores"]["final"] == 0.5
    assert [detail["scores"][f"{name}_ci_{side}"] for name in ("low_level", "high_level")
            for side in ("low", "high")] == [0.45, 0.75, 0.55, 0.85]
    listing = api.get("/api/v1/submissions/").json()
    rows = listing["results"] if isinstance(listing, dict) else listing
    assert [row["id"] for row in rows] == [evaluation.submission_id]


@pytest.mark.django_db
def test_the_api_needs_a_token(client, imported_sample):
    """Without credentials the submissions and quota endpoints answer 401/403."""
    assert client.get("/api/v1/submissions/").status_code in (401, 403)
    assert client.get("/api/v1/quota/").status_code in (401, 403)

"""Uploads: refused before their bodies are read (anonymous, unverified, announced oversize), the limit
held while a body without a length streams in, per-file counting in the upload handler, the zip's
central directory checked before it is parsed, and no SQLite write lock while a bundle is stored."""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.handlers.wsgi import WSGIHandler
from django.db import OperationalError, connection
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from rest_framework.authtoken.models import Token

from leaderboard import uploads
from leaderboard.intake import bundles, dispatch
from leaderboard.models import Submission
from leaderboard.worker import evaluator_run
from tests.leaderboard.base import PASSWORD, logged_in, make_user
from tests.leaderboard.factories import make_queued_evaluation, make_submission

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.django_db
PAGE = "<!doctype html><html><body><button class='btn'>Go</button></body></html>"


class Unreadable(io.RawIOBase):
    """A request body that fails the test when anything reads it."""

    def read(self, *args):
        raise AssertionError("the body was read")

    readline = read


def zip_bytes(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def call_wsgi(path: str, body, *, length: str | None, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """The site as gunicorn calls it: a body with or without CONTENT_LENGTH (chunked, already decoded)."""
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "SERVER_NAME": "testserver", "SERVER_PORT": "80",
               "wsgi.url_scheme": "http", "wsgi.input": body, "wsgi.errors": sys.stderr,
               "CONTENT_TYPE": MULTIPART_CONTENT, "REMOTE_ADDR": "127.0.0.1", **(headers or {})}
    if length is None:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = length
    answer = {}

    def start_response(status, response_headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(response_headers)

    content = b"".join(WSGIHandler()(environ, start_response))
    return answer["status"], answer["headers"], content


def api_headers(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {Token.objects.get_or_create(user=user)[0].key}"}


def form_body(bundle: bytes, **fields) -> bytes:
    data = {"split": "dev", "protocol": "iwr-det", "model_name": "Streamed-7B", **fields,
            "bundle": SimpleUploadedFile("bundle.zip", bundle, content_type="application/zip")}
    return encode_multipart(BOUNDARY, data)


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: calls.append(evaluation_id) or True)
    return calls


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def stored(media) -> list[Path]:
    return [path for path in Path(media).rglob("*") if path.is_file()]


def test_anonymous_uploads_are_refused_unread():
    status, headers, _ = call_wsgi("/submit/", Unreadable(), length="50000000")
    assert status == 302 and headers["Location"].startswith("/accounts/login/")
    status, _, content = call_wsgi("/api/v1/submissions/", Unreadable(), length="50000000")
    assert status == 401 and b"credentials" in content
    status, _, _ = call_wsgi("/api/v1/submissions/", Unreadable(), length="10",
                             headers={"HTTP_AUTHORIZATION": "Token not-a-real-token"})
    assert status == 401


def test_large_anonymous_posts_elsewhere_are_refused_unread():
    status, _, content = call_wsgi("/accounts/login/", Unreadable(), length=str(10 * 1024 * 1024))
    assert status == 413 and b"Sign in" in content
    assert call_wsgi("/accounts/signup/", Unreadable(), length=None)[0] == 413


def test_an_unverified_users_upload_is_refused_unread():
    user = make_user("unverified", verified=False)
    status, _, content = call_wsgi("/api/v1/submissions/", Unreadable(), length="50000000",
                                   headers=api_headers(user))
    assert status == 403 and b"Verify your e-mail address" in content


def test_an_announced_oversize_upload_is_refused_at_once(owner, settings):
    settings.SUBMISSION_MAX_BUNDLE_MB = 1
    status, _, content = call_wsgi("/api/v1/submissions/", Unreadable(), length=str(3 * 1024 * 1024),
                                   headers=api_headers(owner))
    assert status == 413 and b"limit of 1 MB" in content


def test_a_chunked_upload_over_the_limit_stops_being_read_at_the_limit(owner, settings, media):
    settings.SUBMISSION_MAX_BUNDLE_MB = 1
    body = io.BytesIO(form_body(b"\0" * (5 * 1024 * 1024)))
    status, _, content = call_wsgi("/api/v1/submissions/", body, length=None, headers=api_headers(owner))
    assert status == 413 and b"limit of 1 MB" in content
    assert body.tell() <= uploads.body_limit() + uploads.READ_CHUNK  # stopped at the limit, not at the end
    assert stored(media) == []


def test_a_chunked_upload_under_the_limit_is_accepted(owner, imported_sample, media, sent):
    bundle = zip_bytes({"101/index.html": PAGE, "dev-b/index.html": PAGE})
    status, _, content = call_wsgi("/api/v1/submissions/", io.BytesIO(form_body(bundle)), length=None,
                                   headers=api_headers(owner))
    assert status == 201, content
    assert len(stored(media)) == 1
    assert Submission.objects.get(model_name="Streamed-7B").bundle_size == len(bundle)


def test_the_upload_handler_stops_storing_a_file_past_the_limit(client, owner, imported_sample, media, settings):
    """A file over the limit inside a body the gate let through: nothing past the limit is kept and the
    form gives the Submit page's message."""
    settings.SUBMISSION_MAX_BUNDLE_MB = 1
    handler = uploads.BundleLimitUploadHandler()
    handler.new_file("bundle", "bundle.zip", "application/zip", None)
    kept = [handler.receive_data_chunk(b"x" * 400_000, 0) for _ in range(4)]
    assert [chunk is not None for chunk in kept] == [True, True, False, False]
    oversize = handler.file_complete(1_600_000)
    assert oversize.size == 1_600_000 and oversize.read() == b""
    data = zip_bytes({"101/index.html": PAGE}) + b"\0" * (1024 * 1024 + 10)
    response = logged_in(client, owner).post("/submit/", {"split": "dev", "protocol": "iwr-det", "model_name": "M",
                                                          "bundle": SimpleUploadedFile("b.zip", data)})
    assert response.status_code == 400 and "the limit is 1 MB" in response.content.decode()
    assert stored(media) == []


def hostile_zip() -> bytes:
    """About 5 MB holding 60,000 empty entries whose end record declares one."""
    data = bytearray(zip_bytes({f"a/{n}": b"" for n in range(60_000)}))
    at = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, at + 8, 1, 1)
    return bytes(data)


def test_a_zip_declaring_one_entry_but_holding_60000_is_refused_before_zipfile_parses_it(
        client, owner, imported_sample, media, monkeypatch):
    import evaluator.bundle.sources as sources

    hostile = hostile_zip()

    def never(*args, **kwargs):
        raise AssertionError("zipfile parsed the archive")

    monkeypatch.setattr(sources.zipfile, "ZipFile", never)
    response = logged_in(client, owner).post("/submit/", {"split": "dev", "protocol": "iwr-det", "model_name": "M",
                                                          "bundle": SimpleUploadedFile("b.zip", hostile)})
    page = response.content.decode()
    assert response.status_code == 400 and "central directory holds more than 5000 entries" in page
    assert stored(media) == []


def test_storing_a_bundle_holds_no_write_transaction(owner, imported_sample, media, sent, monkeypatch):
    """Hashing and copying happen before the transaction that charges the quota and creates the rows."""
    from django.core.files.storage import default_storage

    depth = len(connection.savepoint_ids)
    seen = []
    original = default_storage.save

    def save(name, content, *args, **kwargs):
        seen.append(len(connection.savepoint_ids) - depth)
        return original(name, content, *args, **kwargs)

    monkeypatch.setattr(default_storage, "save", save)
    form = bundles.SubmissionForm({"split": "dev", "protocol": "iwr-det", "model_name": "M"},
                                      {"bundle": SimpleUploadedFile("b.zip", zip_bytes({"101/index.html": PAGE}))},
                                      user=owner)
    assert form.is_valid(), form.errors
    bundles.accept(form, owner)
    assert seen == [0]


def test_the_heartbeat_skips_a_beat_while_the_database_is_locked(owner, monkeypatch, caplog):
    evaluation = make_queued_evaluation(make_submission(owner), status="running", claim_token="tok")
    job = evaluator_run.EvaluatorRun(evaluation, "tok")

    def locked(self, *args, **fields):
        raise OperationalError("database is locked")

    monkeypatch.setattr(type(evaluator_run.EVALUATIONS), "beat", locked)
    assert job.heartbeat() is True
    assert "heartbeat skipped (database is locked)" in caplog.text
    monkeypatch.undo()
    assert job.heartbeat() is True  # the real row, still claimed


def test_the_login_form_still_posts(client, owner):
    assert client.post("/accounts/login/", {"login": owner.username, "password": PASSWORD}).status_code == 302


def another_writer_can_begin() -> bool:
    """Whether a second SQLite connection to the site's database can take the write lock right now."""
    import sqlite3

    other = sqlite3.connect(connection.settings_dict["NAME"], uri=True, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE leaderboard_submission SET model_name = model_name WHERE 0")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_another_writer_gets_the_database_while_an_upload_is_hashed_and_copied(owner, imported_sample, media, sent,
                                                                               monkeypatch):
    """A real second SQLite connection takes the write lock while the bundle is hashed and while it is copied
    (the probe does see the lock of a write transaction: checked first)."""
    from django.core.files.storage import default_storage
    from django.db import transaction

    with transaction.atomic():
        Submission.objects.filter(pk=0).update(model_name="")
        assert not another_writer_can_begin()  # the probe detects a held write lock
    assert another_writer_can_begin()

    seen = {}
    sha256_of, save = bundles.sha256_of, default_storage.save
    monkeypatch.setattr(bundles, "sha256_of", lambda upload: seen.setdefault("hashing", another_writer_can_begin())
                        and sha256_of(upload))
    monkeypatch.setattr(default_storage, "save", lambda *args, **kwargs: seen.setdefault(
        "copying", another_writer_can_begin()) and save(*args, **kwargs))
    form = bundles.SubmissionForm({"split": "dev", "protocol": "iwr-det", "model_name": "Locked-out"},
                                  {"bundle": SimpleUploadedFile("b.zip", zip_bytes({"101/index.html": PAGE}))},
                                  user=owner)
    assert form.is_valid(), form.errors
    accepted = bundles.accept(form, owner)
    assert seen == {"hashing": True, "copying": True}
    assert Submission.objects.get(pk=accepted.submission.pk).bundle_sha256 and len(sent) == 1


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_rides_out_a_real_write_lock_and_beats_again_after_it(owner, caplog):
    """Another connection holds SQLite's write lock: the evaluator run's beat and the heartbeat thread's beat
    are skipped (logged), not fatal; once the lock is gone the next beat lands."""
    import sqlite3

    from leaderboard.worker.claims import Heartbeat

    evaluation = make_queued_evaluation(make_submission(owner), status="running", claim_token="tok")
    job = evaluator_run.EvaluatorRun(evaluation, "tok")
    writer = sqlite3.connect(connection.settings_dict["NAME"], uri=True, timeout=0, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE leaderboard_evaluation SET worker = 'elsewhere' WHERE id = ?", (evaluation.pk,))
    try:
        assert job.heartbeat() is True
        assert Heartbeat(evaluator_run.EVALUATIONS, evaluation.pk, "tok", 1).beat() is True
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert "heartbeat skipped" in caplog.text and "heartbeat failed" in caplog.text
    evaluation.refresh_from_db()
    before = evaluation.heartbeat_at
    assert job.heartbeat() is True
    evaluation.refresh_from_db()
    assert evaluation.heartbeat_at is not None and evaluation.heartbeat_at != before

"""Daily quotas per user and split: counting, refusing, refunding, reporting."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from leaderboard import quotas
from leaderboard.models import Submission
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_submission
from tests.leaderboard.test_submit import PAGE, fields, upload, zip_bytes

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures


@pytest.fixture
def small_quota(settings, tmp_path, monkeypatch):
    from leaderboard.intake import dispatch

    settings.SUBMISSION_QUOTAS = {"dev": 2, "test": 1}
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: True)


@pytest.mark.django_db
def test_it_counts_only_charged_submissions_of_today_in_that_split(owner, collaborator, small_quota):
    """Refunded, yesterday's, other splits', other users' and paper rows do not count."""
    make_submission(owner)
    make_submission(owner, charged=False)
    make_submission(owner, created_at=timezone.now() - dt.timedelta(days=1))
    make_submission(owner, split="test")
    make_submission(owner, kind=Submission.Kind.PAPER)
    make_submission(collaborator)
    status = quotas.status(owner, "dev")
    assert (status.limit, status.used, status.remaining) == (2, 1, 1)


@pytest.mark.django_db
def test_the_day_ends_at_midnight_utc(owner, small_quota):
    """A submission made at 23:59 UTC no longer counts at 00:01 UTC the next day."""
    late = dt.datetime(2026, 3, 1, 23, 59, tzinfo=dt.UTC)
    make_submission(owner, created_at=late)
    assert quotas.used_today(owner, "dev", now=late) == 1
    assert quotas.used_today(owner, "dev", now=late + dt.timedelta(minutes=2)) == 0
    assert quotas.status(owner, "dev", now=late).resets_at == dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


@pytest.mark.django_db
def test_the_last_slot_is_refused_with_the_reset_time(client, owner, imported_sample, small_quota):
    """The test split allows one a day: the second upload is refused and nothing is stored."""
    data = {**fields(split="test"), "bundle": upload(zip_bytes({"201/index.html": PAGE}))}
    logged_in(client, owner)
    assert client.post("/submit/", data).status_code == 302
    data["bundle"] = upload(zip_bytes({"201/index.html": PAGE}))
    response = client.post("/submit/", data)
    assert response.status_code == 400
    assert "used all 1 submissions to the test split" in response.content.decode()
    assert Submission.objects.filter(split="test").count() == 1


@pytest.mark.django_db
def test_charge_refuses_inside_the_transaction_too(owner, small_quota):
    """The locked re-check in the storing transaction refuses when the day's slots are gone."""
    make_submission(owner, split="test")
    with pytest.raises(quotas.QuotaExceeded, match="resets at 00:00 UTC"):
        quotas.charge(owner, "test")


@pytest.mark.django_db
def test_cancelling_a_queued_submission_gives_the_slot_back(client, owner, imported_sample, small_quota):
    """After cancelling the day's only test submission while queued, another may be made."""
    logged_in(client, owner)
    client.post("/submit/", {**fields(split="test"), "bundle": upload(zip_bytes({"201/index.html": PAGE}))})
    submission = Submission.objects.get()
    assert quotas.status(owner, "test").remaining == 0
    client.post(f"/submissions/{submission.pk}/cancel/")
    assert quotas.status(owner, "test").remaining == 1


@pytest.mark.django_db
def test_a_closed_split_says_so(owner, small_quota, settings):
    """A quota of zero reads as closed, not as 'used all 0'."""
    settings.SUBMISSION_QUOTAS = {"dev": 0, "test": 1}
    with pytest.raises(quotas.QuotaExceeded, match="closed"):
        quotas.charge(owner, "dev")


@pytest.mark.django_db
def test_the_quota_is_shown_by_the_api(client, owner, small_quota):
    """GET /api/v1/quota/ gives limit, used, remaining and the reset time for each split."""
    make_submission(owner)
    token = Token.objects.create(user=owner)
    body = client.get("/api/v1/quota/", HTTP_AUTHORIZATION=f"Token {token.key}").json()
    dev = next(item for item in body["quotas"] if item["split"] == "dev")
    assert (dev["limit"], dev["used"], dev["remaining"]) == (2, 1, 1)
    assert dev["resets_at"].endswith("+00:00")

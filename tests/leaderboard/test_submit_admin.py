"""Maintainers' actions on submissions in the admin: verify, flag with a public reason, rescore."""

from __future__ import annotations

import pytest

from leaderboard.cache import get_generation
from leaderboard.intake import dispatch
from leaderboard.models import Evaluation
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation, make_submission

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures

CHANGELIST = "/admin/leaderboard/submission/"
PAGE = "<html><body>page</body></html>"


@pytest.fixture
def sent(monkeypatch, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    calls = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: calls.append(evaluation_id) or True)
    return calls


@pytest.fixture
def maintainer(staff):
    """The staff user with the submission and evaluation permissions maintainers are given."""
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="leaderboard", content_type__model__in=["submission", "evaluation"]))
    return staff


def act(client, action: str, submissions, **extra):
    data = {"action": action, "_selected_action": [s.pk for s in submissions], **extra}
    return client.post(CHANGELIST, data)


@pytest.mark.django_db
def test_a_baseline_scored_under_iwr_det_3_is_rescored_under_the_default_iwr_det_4(
        client, maintainer, owner, imported_sample, sent, django_capture_on_commit_callbacks):
    """The protocol switches of issue 14 go through the rescoring path: a baseline's iwr-det-3 score stays,
    and the rescore is queued under iwr-det's current version, iwr-det-17."""
    baseline = make_bundle_submission(owner, pages={"101": PAGE}, kind="baseline", protocol="iwr-det")
    old = make_queued_evaluation(baseline, protocol="iwr-det-3", status="scored", final=0.8)
    logged_in(client, maintainer)
    with django_capture_on_commit_callbacks(execute=True):
        act(client, "rescore", [baseline])
    new = baseline.evaluations.exclude(pk=old.pk).get()
    assert (new.protocol, new.is_rescore) == ("iwr-det-17", True) and sent == [new.pk]
    old.refresh_from_db()
    assert (old.protocol, old.status, old.final) == ("iwr-det-3", "scored", 0.8)


@pytest.mark.django_db
def test_rescoring_adds_a_low_priority_evaluation_and_keeps_the_old_one(
        client, maintainer, owner, imported_sample, sent, django_capture_on_commit_callbacks):
    """A rescore queues behind users under the current version; old scores stay; repeating is a no-op."""
    submission = make_bundle_submission(owner, pages={"101": PAGE})
    old = make_queued_evaluation(submission, protocol="iwr-det-0", status="scored", final=0.3)
    no_bundle = make_submission(owner)
    logged_in(client, maintainer)
    with django_capture_on_commit_callbacks(execute=True):
        act(client, "rescore", [submission, no_bundle])
    new = submission.evaluations.exclude(pk=old.pk).get()
    assert (new.protocol, new.status, new.is_rescore, new.priority) == ("iwr-det-17", "queued", True, 9)
    assert sent == [new.pk]
    old.refresh_from_db()
    assert (old.protocol, old.status, old.final) == ("iwr-det-0", "scored", 0.3)
    act(client, "rescore", [submission])
    assert submission.evaluations.count() == 2 and not no_bundle.evaluations.exists()


@pytest.mark.django_db
def test_flagging_asks_for_a_public_reason(client, maintainer, owner, imported_sample, sent):
    """The flag action shows a reason form first, then flags with that reason and bumps the cache."""
    submission = make_bundle_submission(owner, pages={"101": PAGE})
    logged_in(client, maintainer)
    form = act(client, "flag", [submission])
    assert form.status_code == 200 and 'name="reason"' in form.content.decode()
    generation = get_generation()
    act(client, "flag", [submission], apply="1", reason="pages copy the reference HTML")
    submission.refresh_from_db()
    assert submission.flagged and submission.flag_reason == "pages copy the reference HTML"
    assert get_generation() > generation
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "pages copy the reference HTML" in page


@pytest.mark.django_db
def test_verifying_and_retrying(client, maintainer, owner, imported_sample, sent):
    """Verify marks the entry; retry queues a failed evaluation again and wakes a worker."""
    submission = make_bundle_submission(owner, pages={"101": PAGE})
    failed = make_queued_evaluation(submission, status="failed", failure_kind="infrastructure", attempts=3)
    logged_in(client, maintainer)
    act(client, "mark_verified", [submission])
    submission.refresh_from_db()
    assert submission.verified
    client.post("/admin/leaderboard/evaluation/", {"action": "retry", "_selected_action": [failed.pk]})
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.failure_kind) == (Evaluation.Status.QUEUED, 0, "")
    assert sent == [failed.pk]


@pytest.mark.django_db
def test_non_staff_cannot_use_the_admin(client, owner):
    """A signed-up researcher is sent to the admin login, not shown the actions."""
    response = logged_in(client, owner).get(CHANGELIST)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]

"""A newcomer in a real browser: sign up, be refused at submit (browser and API) until the address is
verified, verify it with the link from the mail, submit; then reset a forgotten password by mail.
Every page is watched for Content-Security-Policy violations (none allowed)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from playwright.sync_api import expect
from rest_framework.authtoken.models import Token

from leaderboard import tasksets
from leaderboard.models import Submission
from tests.e2e.conftest import snap
from tests.leaderboard.base import PASSWORD
from tests.leaderboard.pipeline_support import write_bundle, write_tiny_dataset

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
NEW_PASSWORD = "seven purple elephants dancing"


@pytest.fixture
def site(live_server, settings, tmp_path, monkeypatch):
    for name in ("TASKS_ROOT", "ARTIFACTS_ROOT", "JOBS_ROOT", "MEDIA_ROOT"):
        setattr(settings, name, tmp_path / name.lower())
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    mail.outbox = []
    cache.clear()
    from leaderboard.intake import dispatch

    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: True)  # queued: scoring is not under test
    data = write_tiny_dataset(tmp_path / "tiny", "dev", 2, n_actions=2)
    tasksets.import_dataset(data, "dev", "tiny")
    return {"url": live_server.url, "bundle": write_bundle(tmp_path / "pages.zip", ["dev1", "dev2"])}


@pytest.fixture
def watched(desktop):
    """The desktop page, collecting every CSP violation the browser reports."""
    violations = []
    desktop.on("console", lambda message: violations.append(message.text)
               if "Content Security Policy" in message.text else None)
    yield desktop, violations
    assert violations == []


def link_from_last_mail(to: str, pattern: str) -> str:
    message = next(m for m in reversed(mail.outbox) if m.to == [to])
    found = re.search(r"https?://\S+" + pattern + r"\S*", message.body)
    assert found, message.body
    return found[0]


def test_sign_up_verify_by_mail_then_submit_and_reset_the_password(site, watched):
    page, violations = watched
    url = site["url"]
    page.goto(f"{url}/")
    page.click("text=Sign up")
    page.fill("input[name=email]", "ada@example.org")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    snap(page, "accounts-01-sign-up")
    page.click("main button[type=submit]")
    expect(page.locator(".user-nav")).to_contain_text("ada")

    # Not verified yet: the Submit page sends the user to the e-mail page, and the API refuses.
    page.goto(f"{url}/submit/")
    expect(page).to_have_url(re.compile(r"/accounts/email/$"))
    expect(page.locator(".messages")).to_contain_text("Verify your e-mail address before submitting")
    snap(page, "accounts-02-unverified-refused")
    token = Token.objects.create(user=get_user_model().objects.get(username="ada"))
    answer = page.request.post(f"{url}/api/v1/submissions/", headers={"Authorization": f"Token {token.key}"},
                               multipart={"split": "dev", "model_name": "Refused"})
    assert answer.status == 403 and "Verify your e-mail address" in answer.json()["detail"]

    # The link from the verification mail, confirmed in the browser.
    page.goto(link_from_last_mail("ada@example.org", "/accounts/confirm-email/"))
    expect(page.locator("main")).to_contain_text("ada@example.org")
    snap(page, "accounts-03-confirm")
    page.click("main button[type=submit]")
    page.goto(f"{url}/account/")
    expect(page.locator(".badge.ok")).to_have_text("verified")

    page.goto(f"{url}/submit/")
    page.set_input_files("input[name=bundle]", files=[{"name": "pages.zip", "mimeType": "application/zip",
                                                        "buffer": site["bundle"].read_bytes()}])
    page.select_option("select[name=split]", "dev")
    page.fill("input[name=model_name]", "Verified-VL")
    page.click("#submit-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    expect(page.locator("h1")).to_contain_text("Verified-VL")
    assert Submission.objects.get(model_name="Verified-VL").owner.username == "ada"
    snap(page, "accounts-04-submitted")

    # Forgotten password: a reset mail, a new password, signing in with it.
    page.click(".user-nav button:has-text('Log out')")
    page.goto(f"{url}/accounts/login/")
    page.click("text=Forgot your password?")
    page.fill("input[name=email]", "ada@example.org")
    page.click("main button[type=submit]")
    page.goto(link_from_last_mail("ada@example.org", "/accounts/password/reset/key/"))
    page.fill("input[name=password1]", NEW_PASSWORD)
    page.fill("input[name=password2]", NEW_PASSWORD)
    snap(page, "accounts-05-new-password")
    page.click("main button[type=submit]")
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=login]", "ada")
    page.fill("input[name=password]", NEW_PASSWORD)
    page.click("main button[type=submit]")
    expect(page.locator(".user-nav")).to_contain_text("ada")
    assert violations == []

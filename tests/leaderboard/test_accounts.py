"""Accounts (django-allauth): verification before submitting or getting a token, password reset,
rate-limited login and sign-up, the migration of existing users, the old URLs."""

from __future__ import annotations

import importlib
import re

import pytest
from allauth.account.models import EmailAddress
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.leaderboard.base import PASSWORD, logged_in, make_user

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a different horse battery"


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()  # allauth's rate limits count in the cache


def link_in(mail, pattern: str) -> str:
    found = re.search(r"https?://[^/\s]+(" + pattern + r")", mail.body)
    assert found, mail.body
    return found[1]


def sign_up(client, username="newcomer", email="new@example.org"):
    return client.post("/accounts/signup/", {"username": username, "email": email,
                                             "password1": PASSWORD, "password2": PASSWORD})


def test_sign_up_sends_a_verification_mail_and_the_link_verifies(client, mailoutbox):
    assert sign_up(client).status_code == 302
    user = get_user_model().objects.get(username="newcomer")
    assert not EmailAddress.objects.get(user=user).verified
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["new@example.org"]
    link = link_in(mailoutbox[0], r"/accounts/confirm-email/[^\s]+/")
    assert "new@example.org" in client.get(link).content.decode()  # GET only asks to confirm
    assert not EmailAddress.objects.get(user=user).verified
    client.post(link)
    assert EmailAddress.objects.get(user=user).verified


def test_an_unverified_account_can_neither_submit_nor_create_a_token(client, mailoutbox):
    sign_up(client)
    user = get_user_model().objects.get(username="newcomer")
    page = client.get("/submit/")
    assert page.status_code == 302 and page["Location"] == "/accounts/email/"
    assert "Verify your e-mail address" in client.get("/accounts/email/").content.decode()
    assert client.post("/account/token/").status_code == 302
    assert not Token.objects.filter(user=user).exists()
    assert "data-unverified" in client.get("/account/").content.decode()


def test_the_api_refuses_an_unverified_users_token_at_submit_but_reads_with_it(client):
    """A token made before verification was required still reads; submitting needs the verified address."""
    user = make_user("early", verified=False)
    token = Token.objects.create(user=user)
    api = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/v1/submissions/").status_code == 200
    response = api.post("/api/v1/submissions/", {"split": "dev", "model_name": "m"})
    assert response.status_code == 403 and "Verify your e-mail address" in response.json()["detail"]
    EmailAddress.objects.filter(user=user).update(verified=True)
    assert api.post("/api/v1/submissions/", {"split": "dev", "model_name": "m"}).status_code == 400  # on to the form


def test_a_verified_user_gets_a_token_and_existing_tokens_keep_working(client, owner):
    token = Token.objects.create(user=owner)
    assert Client(HTTP_AUTHORIZATION=f"Token {token.key}").get("/api/v1/quota/").status_code == 200
    logged_in(client, owner).post("/account/token/")
    assert Token.objects.get(user=owner).key != token.key


def test_addresses_are_unique_across_accounts(client, owner):
    response = sign_up(client, "copycat", owner.email)
    assert response.status_code == 200 and "already registered" in response.content.decode()
    assert not get_user_model().objects.filter(username="copycat").exists()


def test_password_reset_by_mail_end_to_end(client, owner, mailoutbox):
    assert client.post("/accounts/password/reset/", {"email": owner.email}).status_code == 302
    assert len(mailoutbox) == 1
    link = link_in(mailoutbox[0], r"/accounts/password/reset/key/[^\s]+/")
    form = client.get(link, follow=True)
    action = form.redirect_chain[-1][0] if form.redirect_chain else link
    done = client.post(action, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert done.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password(NEW_PASSWORD)


def test_an_email_change_is_verified_before_it_counts(client, owner, mailoutbox):
    logged_in(client, owner)
    client.post("/accounts/email/", {"action_add": "", "email": "moved@example.org"})
    assert EmailAddress.objects.filter(email="moved@example.org", verified=False).exists()
    assert mailoutbox and mailoutbox[-1].to == ["moved@example.org"]


def test_failed_logins_are_rate_limited(client, owner, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "10/m/ip,3/5m/key"}
    pages = [client.post("/accounts/login/", {"login": owner.username, "password": "wrong"}).content.decode()
             for _ in range(4)]
    assert not any("Too many failed login attempts" in page for page in pages[:3])
    assert "Too many failed login attempts" in pages[3]
    # Even the right password is refused until the window passes.
    right = client.post("/accounts/login/", {"login": owner.username, "password": PASSWORD})
    assert right.status_code == 200 and "Too many failed login attempts" in right.content.decode()
    assert client.get("/account/").status_code == 302


def test_logins_are_rate_limited_per_client_address(client, owner, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login": "2/m/ip"}
    codes = [Client().post("/accounts/login/", {"login": owner.username, "password": PASSWORD}).status_code
             for _ in range(3)]
    assert codes == [302, 302, 429]


def test_sign_ups_are_rate_limited_per_client_address(client, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "signup": "2/h/ip"}
    codes = [sign_up(Client(), f"person{n}", f"p{n}@example.org").status_code for n in range(3)]
    assert codes == [302, 302, 429]


def test_the_old_login_and_logout_urls_work(client, owner):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"login": owner.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/account/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/account/").status_code == 302


def test_existing_users_are_migrated_by_the_documented_rule():
    """Unique address -> verified; an address shared by two accounts -> unverified on both; none -> no row."""
    migration = importlib.import_module("leaderboard.migrations.0006_accounts_email_addresses")
    users = get_user_model().objects
    alone = users.create_user("alone", "Alone@Example.org", PASSWORD)
    twin_a, twin_b = users.create_user("twin-a", "twin@example.org", PASSWORD), users.create_user(
        "twin-b", "TWIN@example.org", PASSWORD)
    nobody = users.create_user("nobody", "", PASSWORD)
    migration.addresses_for_existing_users(apps, None)
    rows = {row.user_id: row for row in EmailAddress.objects.all()}
    assert rows[alone.pk].verified and rows[alone.pk].primary and rows[alone.pk].email == "alone@example.org"
    assert not rows[twin_a.pk].verified and not rows[twin_b.pk].verified
    assert nobody.pk not in rows
    migration.addresses_for_existing_users(apps, None)  # running it again adds nothing
    assert EmailAddress.objects.count() == 3


PROVIDER_PROBE = """
import django
django.setup()
from django.urls import NoReverseMatch, reverse
from allauth.socialaccount import providers
found = sorted(cls.id for cls in providers.registry.get_class_list())
urls = []
for name, args in (("github_login", []), ("openid_connect_login", ["huggingface"])):
    try:
        urls.append(reverse(name, args=args))
    except NoReverseMatch:
        pass
print(found, urls)
"""


@pytest.mark.parametrize(("variables", "expected"), [
    ({}, "[] []"),
    ({"IWR_GITHUB_CLIENT_ID": "id", "IWR_GITHUB_SECRET": "s"}, "['github'] ['/accounts/github/login/']"),
    ({"IWR_HUGGINGFACE_CLIENT_ID": "id", "IWR_HUGGINGFACE_SECRET": "s"},
     "['openid_connect'] ['/accounts/oidc/huggingface/login/']"),
    ({"IWR_GITHUB_CLIENT_ID": "id"}, "[] []"),  # half a configuration turns nothing on
])
def test_github_and_hugging_face_sign_in_are_off_unless_an_operator_configures_them(tmp_path, variables, expected):
    import os
    import subprocess
    import sys
    from pathlib import Path

    environ = {key: value for key, value in os.environ.items() if not key.startswith(("IWR_GITHUB", "IWR_HUGGING"))}
    environ.update({"IWR_ENV": "development", "IWR_DATA_DIR": str(tmp_path),
                    "DJANGO_SETTINGS_MODULE": "leaderboard.settings", **variables})
    result = subprocess.run([sys.executable, "-c", PROVIDER_PROBE], cwd=Path(__file__).resolve().parents[2],
                            env=environ, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected

"""Site basics: layout, health check, sign-up / log-in / log-out and API tokens."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from tests.leaderboard.base import PASSWORD, logged_in

pytestmark = pytest.mark.django_db


def test_pages_share_the_layout_with_navigation_and_version(client):
    """The base layout shows the main navigation and the evaluator version in the footer."""
    import evaluator

    html = client.get("/about/").content.decode()
    for label in ("Leaderboard", "Tasks", "Submit", "API", "About"):
        assert f">{label}</a>" in html
    assert f"evaluator {evaluator.__version__}" in html


def test_healthz_reports_database_and_broker(client):
    """/healthz answers 200 with both components ok on the embedded default."""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}


def test_healthz_reports_an_unreachable_broker(client, settings):
    """A broker that cannot be reached makes /healthz answer 503 and say which part failed."""
    from leaderboard.celery import app

    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        response = client.get("/healthz")
    finally:
        app.conf.broker_url = settings.CELERY_BROKER_URL
    assert response.status_code == 503
    assert response.json()["checks"]["broker"].startswith("broker unreachable")


def test_static_files_are_served(client):
    """The stylesheet is served by the site (whitenoise / staticfiles)."""
    response = client.get("/static/css/site.css")
    assert response.status_code == 200


def test_a_visitor_can_sign_up_log_out_and_log_in(client):
    """Sign-up logs the new user in; log-out and log-in work with the same password."""
    response = client.post("/accounts/signup/", {
        "username": "newcomer", "email": "n@example.org", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302
    assert client.get("/account/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/account/").status_code == 302
    assert client.login(username="newcomer", password=PASSWORD)


def test_sign_up_shows_errors_for_bad_input(client):
    """Mismatched passwords are refused with the form's message and no user is created."""
    response = client.post("/accounts/signup/", {
        "username": "x", "email": "x@example.org", "password1": PASSWORD, "password2": "other"})
    assert response.status_code == 200
    assert "You must type the same password each time" in response.content.decode()  # allauth's message
    assert not get_user_model().objects.filter(username="x").exists()


def test_a_user_can_create_and_replace_an_api_token(client, owner):
    """The account page creates a token; replacing it invalidates the old key."""
    logged_in(client, owner)
    client.post("/account/token/")
    first = Token.objects.get(user=owner).key
    assert first in client.get("/account/").content.decode()
    client.post("/account/token/")
    assert Token.objects.get(user=owner).key != first


def test_drf_create_token_command_works(owner):
    """`manage.py drf_create_token USER` creates the user's token."""
    call_command("drf_create_token", owner.username)
    assert Token.objects.filter(user=owner).exists()


def test_token_authenticates_api_requests(client, owner):
    """A request with `Authorization: Token KEY` is authenticated as the token's user."""
    from rest_framework.test import APIClient

    token = Token.objects.create(user=owner)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/v1/").status_code == 200

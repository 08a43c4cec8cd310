"""Shared fixtures for leaderboard tests: named users and small factories.

- ``owner``: submits and owns things;
- ``collaborator``: another signed-up researcher (sees only public things of others);
- ``outsider``: a user with no relation to the objects under test;
- ``staff``: a maintainer (is_staff), who may see ground truth.
"""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth import get_user_model

PASSWORD = "correct horse battery staple"
_counter = itertools.count(1)


def make_user(username: str | None = None, *, staff: bool = False, verified: bool = True, **extra):
    """A user with the address ``<username>@example.org``, verified unless ``verified=False`` (only
    users with a verified address may submit or create an API token)."""
    from allauth.account.models import EmailAddress

    username = username or f"user{next(_counter)}"
    user_model = get_user_model()
    user = user_model.objects.create_user(
        username=username, email=f"{username}@example.org", password=PASSWORD, is_staff=staff, **extra
    )
    EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=verified)
    return user


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def collaborator(db):
    return make_user("collaborator")


@pytest.fixture
def outsider(db):
    return make_user("outsider")


@pytest.fixture
def staff(db):
    return make_user("maintainer", staff=True)


@pytest.fixture
def fresh_cache():
    """An empty cache at the start of the test: ids are reused between tests, so cached pages would lie."""
    from django.core.cache import cache

    cache.clear()


def logged_in(client, user):
    client.force_login(user)
    return client

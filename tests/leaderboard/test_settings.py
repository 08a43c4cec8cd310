"""Settings are read from the environment strictly: every bad value stops start-up with a clear message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard import env

ROOT = Path(__file__).resolve().parents[2]


def load_settings(tmp_path, **variables) -> subprocess.CompletedProcess:
    """Import leaderboard.settings in a fresh interpreter with exactly these variables set."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "IWR_", "CELERY_", "DATABASE_"))}
    environ.update({"IWR_DATA_DIR": str(tmp_path), **variables})
    code = "import leaderboard.settings as s; print(s.DEBUG, s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"IWR_ENV": "staging"}, "IWR_ENV='staging' is not valid: expected one of production, development, test"),
        ({"IWR_ENV": "development", "DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG='maybe' is not valid"),
        ({"IWR_ENV": "development", "DATABASE_URL": "mysql://x/y"}, "DATABASE_URL='mysql://x/y' is not valid"),
        ({"IWR_ENV": "development", "DATABASE_URL": "postgres://h:notaport/db"}, "expected a numeric port"),
        ({"IWR_ENV": "development", "DATABASE_URL": "postgres:///"}, "with a host and a database name"),
        ({"IWR_ENV": "development", "CELERY_BROKER_URL": "kafka://x"}, "CELERY_BROKER_URL='kafka://x' is not valid"),
        ({"IWR_ENV": "development", "DJANGO_EMAIL_PORT": "twenty"}, "DJANGO_EMAIL_PORT='twenty' is not valid"),
        ({"IWR_ENV": "development", "DJANGO_EMAIL_PORT": "0"}, "expected an integer >= 1"),
        ({"IWR_ENV": "development", "DJANGO_ALLOWED_HOSTS": "a,,b"}, "without empty items"),
        ({"IWR_ENV": "development", "IWR_LOG_LEVEL": "LOUD"}, "IWR_LOG_LEVEL='LOUD' is not valid"),
        ({"IWR_ENV": "development", "DJANGO_EMAIL_BACKEND": "x.y"}, "DJANGO_EMAIL_BACKEND='x.y' is not valid"),
        ({"IWR_ENV": "development", "DJANGO_SECURE_COOKIES": "2"}, "DJANGO_SECURE_COOKIES='2' is not valid"),
        ({"IWR_ENV": "development", "CELERY_BROKER_URL": "redis://x", "CELERY_VISIBILITY_TIMEOUT": "5"},
         "expected an integer >= 60"),
        ({"IWR_ENV": "development", "IWR_EVALUATOR_MEMORY": "lots"}, "expected a size such as 2g or 1536m"),
        ({"IWR_ENV": "development", "IWR_CONTAINER_ENGINE": "lxc"}, "IWR_CONTAINER_ENGINE='lxc' is not valid"),
        ({}, "DJANGO_SECRET_KEY is not set"),
        ({"DJANGO_SECRET_KEY": "short"}, "DJANGO_SECRET_KEY is too short"),
        ({"DJANGO_SECRET_KEY": "x" * 40, "DJANGO_DEBUG": "1"}, "DJANGO_DEBUG=1 is refused with IWR_ENV=production"),
    ],
)
def test_it_refuses_bad_values_with_a_clear_message(tmp_path, variables, message):
    """Each bad environment value fails start-up naming the variable and what was expected."""
    result = load_settings(tmp_path, **variables)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_it_defaults_to_the_embedded_deployment(tmp_path):
    """With nothing set but a key, the site uses SQLite, the filesystem broker and DEBUG off."""
    result = load_settings(tmp_path, DJANGO_SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "django.db.backends.sqlite3", "filesystem://"]


def test_it_switches_to_postgres_and_redis_from_urls(tmp_path):
    """DATABASE_URL and CELERY_BROKER_URL select PostgreSQL and Redis."""
    result = load_settings(
        tmp_path,
        DJANGO_SECRET_KEY="k" * 50,
        DATABASE_URL="postgres://u:p@127.0.0.1:5432/test",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "django.db.backends.postgresql", "redis://127.0.0.1:6379/3"]


def test_development_mode_generates_and_keeps_a_secret_key(tmp_path):
    """Only an explicit development mode falls back to a generated key, kept across starts."""
    assert load_settings(tmp_path, IWR_ENV="development").returncode == 0
    key = (tmp_path / "secret_key").read_text()
    assert len(key) >= 40
    assert load_settings(tmp_path, IWR_ENV="development").returncode == 0
    assert (tmp_path / "secret_key").read_text() == key


def test_database_url_parsing_keeps_every_part():
    """A full PostgreSQL URL becomes a complete DATABASES entry."""
    entry = env.parse_database_url("DATABASE_URL", "postgresql://me:p%40ss@db.local:6543/iwr?sslmode=require")
    assert entry["ENGINE"] == "django.db.backends.postgresql"
    assert (entry["USER"], entry["PASSWORD"], entry["HOST"], entry["PORT"], entry["NAME"]) == (
        "me", "p@ss", "db.local", "6543", "iwr")
    assert entry["OPTIONS"] == {"sslmode": "require"}


def test_boolean_parsing_accepts_common_spellings():
    """Booleans accept 1/0, true/false, yes/no, on/off in any case and reject anything else."""
    assert env.get_bool("X", False, environ={"X": "Yes"}) is True
    assert env.get_bool("X", True, environ={"X": "off"}) is False
    assert env.get_bool("X", True, environ={}) is True
    with pytest.raises(ImproperlyConfigured):
        env.get_bool("X", True, environ={"X": "y"})

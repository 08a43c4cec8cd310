"""Strict parsing of environment variables for settings.

Every bad value raises :class:`ImproperlyConfigured` naming the variable, the value and
what was expected, so a misconfigured deployment fails at start-up with a clear reason.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str, environ) -> str | None:
    value = (environ if environ is not None else os.environ).get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def _bad(name: str, value: str, expected: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{name}={value!r} is not valid: expected {expected}.")


def get_str(name: str, default: str | None = None, environ=None) -> str | None:
    value = _raw(name, environ)
    return default if value is None else value


def get_bool(name: str, default: bool, environ=None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise _bad(name, value, "one of 1/0, true/false, yes/no, on/off")


def get_int(name: str, default: int, environ=None, minimum: int | None = None) -> int:
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise _bad(name, value, "an integer") from None
    if minimum is not None and number < minimum:
        raise _bad(name, value, f"an integer >= {minimum}")
    return number


def get_choice(name: str, default: str, choices: tuple[str, ...], environ=None) -> str:
    value = _raw(name, environ)
    if value is None:
        return default
    if value not in choices:
        raise _bad(name, value, "one of " + ", ".join(choices))
    return value


def get_pattern(name: str, default: str, pattern: str, expected: str, environ=None) -> str:
    value = _raw(name, environ)
    if value is None:
        return default
    if not re.fullmatch(pattern, value):
        raise _bad(name, value, expected)
    return value


def get_list(name: str, default: list[str], environ=None) -> list[str]:
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise _bad(name, value, "a comma-separated list without empty items")
    return items


_DB_ENGINES = {
    "postgres": "django.db.backends.postgresql",
    "postgresql": "django.db.backends.postgresql",
    "sqlite": "django.db.backends.sqlite3",
}


def parse_database_url(name: str, url: str) -> dict:
    """``postgres://user:pass@host:port/db`` or ``sqlite:////abs/path.sqlite3`` -> DATABASES entry."""
    parts = urlsplit(url)
    engine = _DB_ENGINES.get(parts.scheme)
    if engine is None:
        raise _bad(name, url, "a postgres://USER:PASSWORD@HOST:PORT/NAME or sqlite:///PATH URL")
    if engine.endswith("sqlite3"):
        path = unquote(parts.path)
        if not path or path == "/":
            raise _bad(name, url, "sqlite:///PATH with a file path")
        return {"ENGINE": engine, "NAME": path}
    dbname = unquote(parts.path.lstrip("/"))
    if not dbname or not parts.hostname:
        raise _bad(name, url, "postgres://USER:PASSWORD@HOST:PORT/NAME with a host and a database name")
    try:
        port = parts.port
    except ValueError:
        raise _bad(name, url, "a numeric port") from None
    options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    return {
        "ENGINE": engine,
        "NAME": dbname,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname,
        "PORT": str(port or ""),
        "OPTIONS": options,
        "CONN_MAX_AGE": 60,
    }


_BROKER_SCHEMES = ("filesystem", "redis", "rediss", "amqp", "pyamqp", "memory")


def check_broker_url(name: str, url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in _BROKER_SCHEMES:
        raise _bad(name, url, "a URL with one of the schemes " + ", ".join(_BROKER_SCHEMES))
    return url

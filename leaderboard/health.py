"""Health checks behind ``/healthz``: the database answers and the broker accepts a connection."""

from __future__ import annotations

from django.db import connection


def check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "unhealthy", reported by type
        return f"database unreachable: {type(exc).__name__}"
    return None


def check_broker() -> str | None:
    from leaderboard.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001
        return f"broker unreachable: {type(exc).__name__}"
    return None


def run_checks() -> dict[str, str]:
    """Return ``{component: "ok" | reason}``."""
    results = {}
    for name, check in (("database", check_database), ("broker", check_broker)):
        results[name] = check() or "ok"
    return results

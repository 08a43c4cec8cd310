"""Celery tasks: the only adapter between the database and the evaluator.

Tasks take primary keys, never model instances, and are safe to run twice.
"""

from __future__ import annotations

import socket

from celery import shared_task


@shared_task(name="leaderboard.ping", queue="default", time_limit=30)
def ping() -> dict:
    """Answer with the worker's host name: proves a worker consumes the broker (``manage.py check_worker``)."""
    return {"pong": True, "host": socket.gethostname()}

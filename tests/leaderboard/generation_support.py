"""Fixtures shared by the model-endpoint submission tests (``pytest_plugins`` of those modules)."""

from __future__ import annotations

import pytest

from leaderboard.intake import dispatch


@pytest.fixture
def endpoint_settings(settings, tmp_path):
    """A local fake endpoint must be reachable; throw-away job and media folders; one request at a time."""
    settings.GENERATION_ALLOW_PRIVATE_ENDPOINTS = True
    settings.GENERATION_CONCURRENCY = 1
    settings.GENERATION_REQUEST_TIMEOUT_SECONDS = 5
    settings.JOBS_ROOT = tmp_path / "jobs"
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings


@pytest.fixture
def sent(monkeypatch):
    """Wake-ups sent to the generate and evaluate queues (instead of a broker)."""
    calls = {"generate": [], "evaluate": []}
    monkeypatch.setattr(dispatch, "generation_job", lambda job_id: calls["generate"].append(job_id) or True)
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: calls["evaluate"].append(evaluation_id) or True)
    return calls

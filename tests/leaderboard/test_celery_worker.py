"""A real Celery worker process consumes the broker and returns results: embedded transport and Redis."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = "from leaderboard.tasks import ping; print(ping.delay().get(timeout=60)['pong'])"


def redis_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


def run_worker_and_ping(tmp_path, extra_env: dict) -> str:
    environ = {**os.environ, "IWR_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "tests.settings", **extra_env}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "leaderboard", "worker", "-Q", "default", "--pool=solo",
         "--without-heartbeat", "--without-mingle", "--without-gossip", "-n", f"ping-{os.getpid()}@%h"],
        cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        client = subprocess.run([sys.executable, "-c", CLIENT], cwd=ROOT, env=environ,
                                capture_output=True, text=True, timeout=90)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        log = worker.communicate(timeout=30)[0].decode(errors="replace")
    assert client.returncode == 0, client.stderr + "\n--- worker log ---\n" + log
    return client.stdout.strip()


@pytest.mark.slow
def test_a_worker_on_the_embedded_transport_returns_a_result(tmp_path):
    """With no server at all, the filesystem broker carries a task to a worker and back."""
    assert run_worker_and_ping(tmp_path, {}) == "True"


@pytest.mark.slow
@pytest.mark.services
@pytest.mark.skipif(not redis_available(), reason="Redis is not running on 127.0.0.1:6379")
def test_a_worker_on_redis_returns_a_result(tmp_path):
    """The same task travels through Redis as broker and result backend."""
    url = "redis://127.0.0.1:6379/14"
    assert run_worker_and_ping(tmp_path, {"CELERY_BROKER_URL": url, "CELERY_RESULT_BACKEND": url}) == "True"

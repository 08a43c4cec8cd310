"""The web image builds offline and serves the site, healthy, from a container."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import time
import urllib.request

import pytest

# Image builds happen in the first test's fixtures: allow for them (minutes on a loaded 2-core machine).
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(2700)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_web_image_serves_healthz(web_image):
    """gunicorn in the web container migrates its database and answers /healthz with everything ok."""
    port = free_port()
    name = f"iwr-web-test-{port}"
    started = subprocess.run(
        ["docker", "run", "-d", "--name", name, "--network", "host", "-e", "IWR_ENV=production",
         # The production configuration behind the TLS proxy: the entry point's check --deploy must pass.
         "-e", "DJANGO_SECRET_KEY=" + secrets.token_urlsafe(50), "-e", f"PORT={port}", "-e", "WEB_WORKERS=1",
         "-e", "IWR_BEHIND_TLS_PROXY=1", "-e", "IWR_PREVIEW_ORIGIN=https://preview.example.org",
         "-e", "DJANGO_ALLOWED_HOSTS=127.0.0.1,preview.example.org", web_image, "web"],
        capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    try:
        body, status = None, None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                    status, body = response.status, json.loads(response.read())
                break
            except OSError:
                time.sleep(1)
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
        assert status == 200, logs.stdout[-2000:] + logs.stderr[-2000:]
        assert body == {"status": "ok", "checks": {"database": "ok", "broker": "ok"}}
        user = subprocess.run(["docker", "exec", name, "id", "-u"], capture_output=True, text=True)
        assert user.stdout.strip() == "10000"  # not root
        # Behind the TLS proxy every page but /healthz redirects plain http: ask as the proxy forwards https.
        static = urllib.request.Request(f"http://127.0.0.1:{port}/static/css/site.css",
                                        headers={"X-Forwarded-Proto": "https"})
        with urllib.request.urlopen(static, timeout=5) as response:
            assert response.status == 200  # collected at build time, served by whitenoise
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)

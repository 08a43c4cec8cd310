"""The web tier: headers on every page type, the preview host kept to previews, throttles keyed on the
real client address, production settings behind the TLS proxy, mail that never waits for SMTP."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client

from leaderboard import mail
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import make_entry

pytest_plugins = ["tests.leaderboard.datasets"]
ROOT = Path(__file__).resolve().parents[2]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.IGNORECASE)


@pytest.fixture(autouse=True)
def _fresh_cache():
    cache.clear()


ANONYMOUS_PAGES = ["/accounts/login/", "/accounts/signup/", "/accounts/password/reset/", "/admin/login/"]


def page_urls(evaluation) -> list[str]:
    return ["/", "/leaderboard/categories/", "/leaderboard/export/?format=csv", "/leaderboard/charts/scores.json",
            "/tasks/", "/tasks/sample/101/", "/about/", "/api/docs/", "/api/v1/leaderboard/", "/no-such-page/",
            f"/results/{evaluation.pk}/", f"/submissions/{evaluation.submission_id}/", "/submit/", "/account/",
            "/accounts/email/", "/accounts/password/change/", "/submissions/", "/compare/"]


@pytest.mark.django_db
def test_every_page_type_carries_the_security_headers_and_no_inline_script(client, owner, imported_sample):
    evaluation = make_entry(owner, model_name="Headers-VL", final=0.5, split="dev", public=True)
    visitor = Client()
    logged_in(client, owner)
    for url in [*page_urls(evaluation), *ANONYMOUS_PAGES]:
        response = (visitor if url in ANONYMOUS_PAGES else client).get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "object-src 'none'" in policy
        assert response["Referrer-Policy"] == "same-origin", url
        assert response["X-Frame-Options"] == "DENY" and response["X-Content-Type-Options"] == "nosniff", url
        if response["Content-Type"].startswith("text/html"):
            assert not INLINE_SCRIPT.search(response.content.decode()), url


@pytest.mark.django_db
def test_files_keep_their_own_sandboxing_policy(client, imported_sample):
    response = client.get("/tasks/sample/201/files/video.mp4")
    assert "sandbox" in response["Content-Security-Policy"] and "script-src" not in response["Content-Security-Policy"]


@pytest.mark.django_db
def test_the_preview_host_serves_previews_only(settings):
    settings.PREVIEW_ORIGIN = "https://preview.example.org"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "preview.example.org"]
    preview_host = Client(HTTP_HOST="preview.example.org")
    for url in ("/", "/accounts/login/", "/admin/", "/api/v1/leaderboard/"):
        response = preview_host.get(url)
        assert response.status_code == 404 and b"Only preview links" in response.content, url
    assert b"Only preview links" not in preview_host.get("/preview/not-a-token/").content
    assert Client().get("/about/").status_code == 200  # the site's own host is unaffected
    policy = Client().get("/about/")["Content-Security-Policy"]
    assert "frame-src 'self' https://preview.example.org" in policy


def set_rates(settings, **rates):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates}}


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "scope"), [("/leaderboard/export/?format=csv", "exports"),
                                            ("/leaderboard/charts/scores.json", "charts")])
def test_exports_and_charts_are_throttled_per_client_address(client, settings, url, scope):
    set_rates(settings, **{scope: "2/minute"})
    codes = [client.get(url, REMOTE_ADDR="198.51.100.7").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    throttled = client.get(url, REMOTE_ADDR="198.51.100.7")
    assert int(throttled["Retry-After"]) > 0
    assert client.get(url, REMOTE_ADDR="198.51.100.8").status_code == 200  # another client


@pytest.mark.django_db
def test_behind_the_proxy_throttles_key_on_the_forwarded_client_address(client, settings):
    """With one trusted proxy, the address it appended counts; the proxy's own address does not."""
    set_rates(settings, exports="1/minute")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    url = "/leaderboard/export/?format=csv"

    def get(client_address: str, spoofed: str = ""):
        forwarded = f"{spoofed}, {client_address}" if spoofed else client_address
        return client.get(url, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded).status_code

    assert get("203.0.113.1") == 200 and get("203.0.113.2") == 200  # two clients behind one proxy
    assert get("203.0.113.1", spoofed="192.0.2.99") == 429  # a forged first hop changes nothing


@pytest.mark.django_db
def test_api_reads_are_throttled_too(client, monkeypatch):
    from rest_framework.throttling import AnonRateThrottle

    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {**AnonRateThrottle.THROTTLE_RATES, "anon": "2/minute"})
    codes = [client.get("/api/v1/leaderboard/").status_code for _ in range(3)]
    assert codes[-1] == 429


def production_environment(tmp_path, **extra) -> dict:
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("IWR_", "DJANGO_", "DATABASE_URL", "CELERY_"))}
    environ.update({"IWR_ENV": "production", "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
                    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50), "IWR_BEHIND_TLS_PROXY": "1",
                    "DJANGO_ALLOWED_HOSTS": "leaderboard.example.org,preview.example.org",
                    "IWR_SITE_URL": "https://leaderboard.example.org",
                    "IWR_PREVIEW_ORIGIN": "https://preview.example.org", "IWR_DATA_DIR": str(tmp_path)})
    environ.update(extra)
    return environ


def manage(environ, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=environ, capture_output=True,
                          text=True, timeout=120)


def test_check_deploy_is_clean_in_the_production_configuration(tmp_path):
    result = manage(production_environment(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_deploy_fails_without_the_tls_proxy_settings(tmp_path):
    result = manage(production_environment(tmp_path, IWR_BEHIND_TLS_PROXY="0"), "check", "--deploy",
                    "--fail-level", "WARNING")
    assert result.returncode != 0 and "SECURE_SSL_REDIRECT" in result.stdout + result.stderr


def test_the_production_settings_behind_the_proxy(tmp_path):
    code = ("from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SESSION_COOKIE_HTTPONLY, s.CSRF_COOKIE_HTTPONLY, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
            "s.SECURE_PROXY_SSL_HEADER, s.REST_FRAMEWORK['NUM_PROXIES'], s.ALLAUTH_TRUSTED_PROXY_COUNT, "
            "s.FILE_SERVING, s.LOGGING['formatters']['plain']['format'], s.SENTRY_DSN == '')")
    result = subprocess.run([sys.executable, "-c", "import django; django.setup(); " + code], cwd=ROOT,
                            env=production_environment(tmp_path), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 10)[:10] == ["True", "True", "True", "True", "True", "31536000",
                                                 "('HTTP_X_FORWARDED_PROTO',", "'https')", "1", "1"]
    assert "x-accel" in result.stdout and "%(asctime)s %(levelname)s %(name)s" in result.stdout
    assert result.stdout.strip().endswith("True")  # no error tracker unless a DSN is given


@pytest.mark.parametrize("variable", ["DJANGO_SECRET_KEY", "DATABASE_URL"])
def test_the_example_secrets_are_refused_at_start(tmp_path, variable):
    example = {"DJANGO_SECRET_KEY": "change-me-to-50-random-characters-change-me-to-50-random",
               "DATABASE_URL": "postgres://iwr:change-me@db:5432/iwr"}
    result = manage(production_environment(tmp_path, **{variable: example[variable]}), "check")
    assert result.returncode != 0 and "example value of docker/.env.example" in result.stderr


def test_the_web_entrypoint_runs_check_deploy_fatally():
    script = (ROOT / "docker" / "web-entrypoint.sh").read_text()
    web = script[script.index("  web)"):script.index("exec gunicorn")]
    assert "check --deploy --fail-level WARNING" in web and "set -eu" in script


def example_values() -> dict[str, str]:
    lines = (ROOT / "docker" / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#") and "=" in line)


@pytest.mark.parametrize(("change", "said"), [
    ({"IWR_BEHIND_TLS_PROXY": "0"}, "SECURE_SSL_REDIRECT"),  # a deployment check's warning
    ({"DJANGO_SECRET_KEY": example_values()["DJANGO_SECRET_KEY"]}, "example value of docker/.env.example"),
    ({"DATABASE_URL": f"postgres://iwr:{example_values()['POSTGRES_PASSWORD']}@127.0.0.1:1/iwr"},
     "POSTGRES_PASSWORD still has the example value"),
])
def test_the_web_container_stops_before_migrating_or_serving_when_a_check_fails(tmp_path, change, said):
    """docker/web-entrypoint.sh itself, run as the web container runs it: it ends at the check."""
    environ = production_environment(tmp_path, **change)
    environ["PATH"] = f"{Path(sys.executable).parent}:{environ.get('PATH', '/usr/bin:/bin')}"
    result = subprocess.run(["sh", str(ROOT / "docker" / "web-entrypoint.sh"), "web"], cwd=ROOT, env=environ,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and said in result.stdout + result.stderr
    assert "Operations to perform" not in result.stdout and "Booting worker" not in result.stderr
    assert not (tmp_path / "db.sqlite3").exists()  # migrate never ran


def test_log_lines_carry_time_level_and_logger(tmp_path):
    code = ("import django, logging; django.setup(); "
            "logging.getLogger('leaderboard.probe').warning('disk %s full', 'jobs')")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=production_environment(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING leaderboard\.probe: disk jobs full", line), line


@pytest.fixture
def silent_smtp(settings):
    """An SMTP server that accepts connections and never says a word, as the site's mail server (1 s timeout)."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    thread.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = server.getsockname()
    settings.EMAIL_TIMEOUT = 1
    yield server
    server.close()
    for connection, _ in accepted:
        connection.close()


def queued_mails(before: set[Path], with_headers: bool = False) -> list[tuple]:
    """(queue, message body[, task headers]) of every message put on the embedded broker since ``before``."""
    found = []
    for path in sorted(broker_files() - before):
        payload = json.loads(path.read_text())
        queue = path.name.split(".")[-2]
        body = base64.b64decode(payload["body"]).decode()
        found.append((queue, body, payload["headers"]) if with_headers else (queue, body))
    return found


def broker_files() -> set[Path]:
    from django.conf import settings

    return set(Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"]).glob("*.msg"))


def test_smtp_mail_is_queued_for_the_housekeeping_worker_and_never_waits_for_the_server(silent_smtp, settings):
    settings.EMAIL_TIMEOUT = 5  # a direct send would wait this long at least
    before = broker_files()
    started = time.monotonic()
    assert mail.send_later("Scored", "Final 31.00", ["a@example.org"]) is True
    assert time.monotonic() - started < 5
    mails = queued_mails(before, with_headers=True)
    assert [(queue, '"Scored"' in body) for queue, body, _ in mails] == [("housekeeping", True)]
    assert mails[0][2]["timelimit"][0] == mail.time_limit() == 4 * 5 + 10  # a stuck send is ended


@pytest.mark.django_db
def test_account_mails_are_queued_too_so_a_sign_up_never_waits_for_the_server(client, silent_smtp, mailoutbox,
                                                                              settings):
    settings.EMAIL_TIMEOUT = 5  # sending the verification mail in the request would wait this long at least
    assert client.get("/accounts/signup/").status_code == 200  # the site's modules are loaded before timing
    before = broker_files()
    started = time.monotonic()
    phrase = "a long pass phrase 9"
    response = client.post("/accounts/signup/", {"username": "ada", "email": "ada@example.org",
                                                 "password1": phrase, "password2": phrase})
    assert response.status_code == 302 and time.monotonic() - started < 5
    mails = queued_mails(before)
    assert [queue for queue, _ in mails] == ["housekeeping"] and "/accounts/confirm-email/" in mails[0][1]
    assert mailoutbox == []


@pytest.mark.django_db
def test_the_scored_mail_leaves_the_scoring_worker_at_once_for_the_housekeeping_queue(owner, silent_smtp, settings):
    from leaderboard import notifications

    settings.EMAIL_TIMEOUT = 5  # sending from the worker would wait this long at least
    evaluation = make_entry(owner, model_name="Mailed-VL", final=0.42, split="dev")
    before = broker_files()
    started = time.monotonic()
    assert notifications.evaluation_finished(evaluation.pk) is True
    assert time.monotonic() - started < 5
    mails = queued_mails(before)
    assert [queue for queue, _ in mails] == ["housekeeping"] and "Mailed-VL" in mails[0][1]


def test_the_queued_mail_gives_up_on_a_silent_server_after_the_timeout_and_is_retried(silent_smtp):
    started = time.monotonic()
    with pytest.raises(OSError):
        mail.deliver.run("s", "b", ["a@example.org"])
    assert time.monotonic() - started < 3 * 1 + 1  # bounded by EMAIL_TIMEOUT, not hanging
    assert OSError in mail.deliver.autoretry_for


def test_without_a_broker_the_mail_is_sent_directly_and_a_silent_server_only_costs_the_timeout(
        silent_smtp, monkeypatch, caplog):
    def refuse(*args, **kwargs):
        raise ConnectionError("broker down")

    monkeypatch.setattr(mail.deliver, "apply_async", refuse)
    started = time.monotonic()
    assert mail.send_later("s", "b", ["a@example.org"]) is False
    assert time.monotonic() - started < 3 and "could not send 's'" in caplog.text


def test_the_error_tracker_is_on_only_with_a_dsn(tmp_path):
    code = "import django; django.setup(); import sentry_sdk; print(sentry_sdk.get_client().is_active())"
    for dsn, active in (("", "False"), ("https://public@errors.invalid/1", "True")):
        environ = production_environment(tmp_path, IWR_SENTRY_DSN=dsn)
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0 and result.stdout.strip() == active, result.stderr

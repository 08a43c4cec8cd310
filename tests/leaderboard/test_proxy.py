"""The reverse proxy of docker/compose.yaml: the compose file validates, and Debian's nginx with the
image's own configuration (docker/proxy/nginx.conf.template) sends access-checked files the site
names in X-Accel-Redirect, with byte ranges and the file's headers, while /protected/ stays internal."""

from __future__ import annotations

import http.client
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

pytest_plugins = ["tests.leaderboard.datasets"]
ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"


def compose_command() -> list[str] | None:
    """``docker compose`` (v2) when present, else Debian's docker-compose; None when neither is."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_the_compose_file_validates_with_the_example_environment(tmp_path):
    command = compose_command()
    if command is None:
        pytest.skip("neither docker compose nor docker-compose is installed (scripts/setup.sh installs it)")
    folder = tmp_path / "docker"
    folder.mkdir()
    text = (DOCKER / "compose.yaml").read_text()
    if command == ["docker-compose"]:  # v1 predates the top-level project name: give it with -p
        text = "\n".join(line for line in text.splitlines() if not line.startswith("name:"))
    (folder / "compose.yaml").write_text(text)
    (folder / ".env").write_text((DOCKER / ".env.example").read_text())
    result = subprocess.run([*command, "-p", "iwr-bench", "-f", "compose.yaml", "--env-file", ".env", "config"],
                            cwd=folder, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    config = result.stdout
    assert "iwr/proxy:latest" in config and "IWR_BEHIND_TLS_PROXY" in config and "x-accel" in config
    assert "/srv/shared:ro" in config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def render_config(tmp: Path, upstream: str, roots: dict, https_port: int, http_port: int) -> Path:
    """The image's nginx.conf, with this machine's paths and ports instead of the container's."""
    (tmp / "tls").mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(tmp / "tls" / "privkey.pem"), "-out", str(tmp / "tls" / "fullchain.pem")],
                   check=True, capture_output=True)
    (tmp / "static").mkdir()
    text = (DOCKER / "proxy" / "nginx.conf.template").read_text()
    for name, value in {"${IWR_SERVER_NAMES}": "_", "${IWR_BODY_LIMIT_MB}": "2", "${IWR_UPSTREAM}": upstream}.items():
        text = text.replace(name, value)
    for old, new in {"/srv/shared/tasks/": f"{roots['tasks']}/", "/srv/shared/artifacts/": f"{roots['artifacts']}/",
                     "/srv/static/": f"{tmp}/static/", "/etc/iwr/tls/": f"{tmp}/tls/",
                     "/opt/proxy/": f"{DOCKER}/proxy/", "/run/nginx.pid": f"{tmp}/nginx.pid",
                     "listen 443 ": f"listen 127.0.0.1:{https_port} ",
                     "listen 80 ": f"listen 127.0.0.1:{http_port} "}.items():
        assert old in text, old
        text = text.replace(old, new)
    # Test-only: run as the user that owns the temporary folders, keep nginx's temporary files there too.
    text = "user root;\n" + text.replace("http {", f"http {{\n    client_body_temp_path {tmp}/body;\n"
                                                    f"    proxy_temp_path {tmp}/proxy;", 1)
    path = tmp / "nginx.conf"
    path.write_text(text)
    return path


@pytest.fixture
def proxy(live_server, tmp_path, settings, tasks_root):
    if not shutil.which("nginx"):
        pytest.skip("nginx is not installed (scripts/setup.sh installs Debian's nginx)")
    settings.ARTIFACTS_ROOT = tmp_path / "artifacts"
    roots = {"tasks": tasks_root, "artifacts": settings.ARTIFACTS_ROOT}
    settings.FILE_SERVING = "x-accel"
    https_port, http_port = free_port(), free_port()
    work = tmp_path / "nginx"
    work.mkdir()
    conf = render_config(work, live_server.url.removeprefix("http://"), roots, https_port, http_port)
    process = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(work), "-e", str(work / "error.log"),
                                "-g", "daemon off;"], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", https_port)) == 0:
                break
        time.sleep(0.1)
    yield https_port
    process.terminate()
    process.wait(10)


def fetch(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    connection.request("GET", path, headers={"Host": "localhost", **(headers or {})})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    names = [name.lower() for name, _ in response.getheaders()]
    assert len(names) == len(set(names)), ",".join(names)  # no header twice (Django's and nginx's)
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


@pytest.mark.django_db(transaction=True)
def test_nginx_sends_the_file_the_site_names_after_its_access_check(proxy, imported_sample, settings):
    video = Path(settings.TASKS_ROOT).joinpath(imported_sample[1].files_dir, "video.mp4").read_bytes()
    url = "/tasks/sample/201/files/video.mp4"
    status, headers, body = fetch(proxy, url)
    assert status == 200 and body == video
    assert headers["content-type"] == "video/mp4"
    assert "sandbox" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"
    status, headers, body = fetch(proxy, url, {"Range": "bytes=10-19"})
    assert status == 206 and body == video[10:20] and headers["content-range"] == f"bytes 10-19/{len(video)}"
    status, headers, body = fetch(proxy, "/tasks/sample/201/inputs.zip")
    assert status == 200 and body[:2] == b"PK" and 'filename="sample-201-inputs.zip"' in headers["content-disposition"]
    # The internal location cannot be asked for directly, and a file the site refuses is never sent.
    internal = f"/protected/tasks/{imported_sample[1].files_dir}/video.mp4"
    assert fetch(proxy, internal)[0] == 404
    assert fetch(proxy, "/tasks/sample/201/files/../../../etc/passwd")[0] == 404


@pytest.mark.django_db(transaction=True)
def test_nginx_refuses_a_body_over_its_limit_before_the_site_sees_it(proxy):
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", proxy, context=context, timeout=30)
    connection.request("POST", "/api/v1/submissions/", body=b"\0" * (3 * 1024 * 1024),
                       headers={"Host": "localhost", "Content-Type": "application/octet-stream"})
    assert connection.getresponse().status == 413  # the rendered limit is 2 MB
    connection.close()
    assert fetch(proxy, "/healthz")[0] in (200, 503)  # other requests reach the site

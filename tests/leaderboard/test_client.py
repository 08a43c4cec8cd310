"""The command-line client (evaluator/submit_client.py, run as scripts/iwr-submit) against a live site, and
against a small scripted server for what the site cannot be made to do on cue (502, 429, the check endpoint)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from leaderboard.intake import dispatch
from leaderboard.models import Evaluation, Submission

pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "iwr-submit"
MODULE = ROOT / "evaluator" / "submit_client.py"
PAGE = "<!doctype html><html><body><button class='btn'>Go</button></body></html>"


@pytest.fixture
def site(transactional_db, live_server, imported_sample, owner, settings, tmp_path, monkeypatch):
    """A live site with the sample tasks, and the environment the client reads."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SUBMISSION_QUOTAS = {"dev": 20, "test": 3}
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: True)
    token = Token.objects.create(user=owner)
    return {**os.environ, "IWR_URL": live_server.url, "IWR_TOKEN": token.key}


def client(environ: dict, *args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=environ, capture_output=True, text=True,
                          timeout=timeout)


def bundle(tmp_path: Path, members: dict[str, str] | None = None) -> Path:
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in (members or {"101/index.html": PAGE}).items():
            archive.writestr(name, data)
    return path


def test_the_client_imports_only_the_standard_library():
    """The client must run on a machine with nothing but Python: no Django, no third-party package."""
    for path in (SCRIPT, MODULE):
        tree = ast.parse(path.read_text())
        modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for alias in node.names}
        modules |= {node.module.split(".")[0] for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module}
        assert modules <= set(sys.stdlib_module_names) | {"__future__"}, (path, modules)


def test_the_client_runs_as_one_file_copied_anywhere(tmp_path):
    """Only python3 and the file: copied out of the repository, it still runs and says its version."""
    copy = tmp_path / "iwr-submit.py"
    copy.write_bytes(MODULE.read_bytes())
    done = subprocess.run([sys.executable, "-I", str(copy), "--version"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("iwr-submit ")
    version = done.stdout.split()[1]
    assert f'__version__ = "{version}"' in MODULE.read_text()


@pytest.mark.django_db(transaction=True)
def test_submit_list_status_and_quota(site, tmp_path):
    """Submitting prints the id and the missing-task note; list, status and quota show it."""
    done = client(site, "submit", str(bundle(tmp_path)), "--split", "dev", "--model-name", "CLI-Model",
                  "--open-weights", "--private")
    assert done.returncode == 0, done.stderr
    submission = Submission.objects.get()
    assert f"submission #{submission.pk} accepted: queued" in done.stdout and "dev-b" in done.stdout
    assert (submission.public, submission.open_weights) == (False, True)
    listing = client(site, "list")
    assert f"#{submission.pk}" in listing.stdout and "CLI-Model" in listing.stdout
    assert "queued" in client(site, "status", str(submission.pk)).stdout
    quota = client(site, "quota").stdout
    assert "dev  19 of 20 left today" in quota and "test 3 of 3 left today" in quota


@pytest.mark.django_db(transaction=True)
def test_status_wait_shows_progress_until_scored_and_download_writes_results(site, tmp_path, owner):
    """--wait draws the progress bar while running and ends with the scores; download saves the JSON."""
    from tests.leaderboard.factories import make_bundle_submission, make_queued_evaluation

    evaluation = make_queued_evaluation(make_bundle_submission(owner, pages={"101": PAGE}), status="running",
                                        tasks_done=1)
    waiting = subprocess.Popen([sys.executable, str(SCRIPT), "status", str(evaluation.submission_id), "--wait"],
                               env=site, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    Evaluation.objects.filter(pk=evaluation.pk).update(status="scored", tasks_done=2, final=0.4321, ifs=0.3,
                                                       vfs=0.7, final_ci_low=0.3, final_ci_high=0.5, n_tasks=2)
    out, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 0, err
    assert "[###############...............] 1/2 tasks  running" in err
    assert "2/2 tasks  scored" in err and "Final 43.21  IFS 30.00  VFS 70.00" in out
    target = tmp_path / "results.json"
    assert client(site, "download", str(evaluation.submission_id), "-o", str(target)).returncode == 0
    assert json.loads(target.read_text())["scores"]["final"] == 0.4321


@pytest.mark.django_db(transaction=True)
def test_errors_are_one_clear_line_each(site, tmp_path):
    """Bad bundle, bad token, missing settings and an unreachable site: messages, exit codes, no traceback."""
    refused = client(site, "submit", str(bundle(tmp_path, {"notes.txt": "hello"})), "--split", "dev",
                     "--model-name", "X")
    assert refused.returncode == 1 and "bundle: no task page found" in refused.stderr
    bad_token = client({**site, "IWR_TOKEN": "wrong"}, "list")
    assert bad_token.returncode == 1 and "refused (401)" in bad_token.stderr
    unset = client({key: value for key, value in site.items() if key != "IWR_URL"}, "list")
    assert unset.returncode == 2 and "IWR_URL" in unset.stderr
    down = client({**site, "IWR_URL": "http://127.0.0.1:9"}, "quota")
    assert down.returncode == 2 and "cannot reach" in down.stderr
    for result in (refused, bad_token, unset, down):
        assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- a scripted server


class Scripted:
    """A local HTTP server answering each path from its own list of (status, headers, JSON body);
    the last answer of a list repeats. Every request is recorded with its time."""

    def __init__(self, answers: dict[str, list[tuple[int, dict, object]]]):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.answers, self.seen = answers, []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                scripted.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                      "body": body, "at": time.monotonic()})
                queue = scripted.answers.get(self.path) or [(404, {}, {"detail": "Not found."})]
                status, headers, document = queue.pop(0) if len(queue) > 1 else queue[0]
                data = json.dumps(document).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = answer  # noqa: N815 - http.server's naming

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def state(status: str, done: int, **extra) -> dict:
    return {"id": 7, "model_name": "M", "split": "dev", "protocol": "iwr-det", "status": status,
            "progress": {"tasks_done": done, "tasks_total": 2}, **extra}


SCORED = state("scored", 2, scores={"final": 0.5, "ifs": 0.4, "vfs": 0.6, "n_tasks": 2})


def run_against(server: Scripted, *args, timeout: float = 60, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "IWR_URL": server.url, "IWR_TOKEN": "tok", **env}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=environ, capture_output=True, text=True,
                          timeout=timeout)


def test_status_wait_survives_a_502_and_a_429_and_honours_retry_after():
    """Gateway errors and rate limits while waiting are retried (Retry-After honoured), not the end of the wait."""
    path = "/api/v1/submissions/7/"
    answers = [(502, {}, {"detail": "bad gateway"}), (429, {"Retry-After": "2"}, {"detail": "slow down"}),
               (200, {}, state("running", 1)), (503, {}, {}), (200, {}, SCORED)]
    with Scripted({path: answers}) as server:
        done = run_against(server, "--retries", "1", "status", "7", "--wait", "--poll", "0.1")
    assert done.returncode == 0, done.stderr
    assert "Final 50.00  IFS 40.00  VFS 60.00" in done.stdout
    assert "the site answered 502" in done.stderr and "the site answered 429" in done.stderr
    times = [request["at"] for request in server.seen]
    assert len(times) == 5 and times[2] - times[1] >= 1.9  # waited as long as Retry-After said
    assert all(request["headers"]["User-Agent"].startswith("iwr-submit/") for request in server.seen)


def test_a_wait_outlasts_the_retry_count_but_not_its_own_time_limit():
    with Scripted({"/api/v1/submissions/7/": [(503, {"Retry-After": "0"}, {})]}) as server:
        started = time.monotonic()
        done = run_against(server, "--retries", "1", "status", "7", "--wait", "--wait-limit", "3")
    assert done.returncode == 2 and "gave up after" in done.stderr and "Traceback" not in done.stderr
    assert len(server.seen) > 2 and 2.5 < time.monotonic() - started < 20


def test_an_upload_is_retried_whole_with_one_idempotency_key(tmp_path):
    created = {"id": 7, "status": "queued", "notes": []}
    with Scripted({"/api/v1/submissions/": [(503, {"Retry-After": "1"}, {}), (201, {}, created)]}) as server:
        done = run_against(server, "--json", "submit", str(bundle(tmp_path)), "--split", "dev", "--model-name", "M")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == created
    first, second = server.seen
    assert first["body"] == second["body"] and b'name="model_name"\r\n\r\nM\r\n' in first["body"]
    assert first["headers"]["Idempotency-Key"] == second["headers"]["Idempotency-Key"]


def test_upload_progress_is_drawn_on_a_terminal_only():
    import io
    import runpy

    client_module = runpy.run_path(str(MODULE))

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, drawn in ((Terminal(), True), (io.StringIO(), False)):
        reader = client_module["Progress"](io.BytesIO(b"x" * 3000), 3000, "b.zip", stream)
        while reader.read(1000):
            pass
        assert ("100.0% of" in stream.getvalue()) == drawn and ("33.3%" in stream.getvalue()) == drawn


def test_check_sends_the_submit_fields_to_the_check_endpoint_and_prints_the_report(tmp_path):
    report = {"accepted": True, "tasks": 3, "pages": ["101", "102"], "missing": ["103"], "ignored": ["extra"],
              "layout": {"kind": "nested", "wrapper": "outputs", "model_folders": ["gpt-5"]},
              "problems": [], "warnings": []}
    with Scripted({"/api/v1/bundles/check/": [(200, {}, report)]}) as server:
        text = run_against(server, "check", str(bundle(tmp_path)), "--split", "dev")
        machine = run_against(server, "--json", "check", str(bundle(tmp_path)), "--split", "test")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "layout: nested (model folder gpt-5)", "pages: 2 of 3 task(s)", "no page (would score 0): 103",
        "ignored (no such task): extra",
        "accepted: the site would take this bundle (nothing was stored, no quota spent)"]
    assert json.loads(machine.stdout) == report
    sent = server.seen[0]
    assert sent["method"] == "POST" and sent["headers"]["Content-Type"].startswith("multipart/form-data")
    assert b'name="split"\r\n\r\ndev' in sent["body"] and b'name="bundle"; filename="bundle.zip"' in sent["body"]
    with Scripted({}) as server:  # a site without the check endpoint yet
        missing = run_against(server, "check", str(bundle(tmp_path)), "--split", "dev")
    assert missing.returncode == 1 and "python -m evaluator check-bundle" in missing.stderr


def test_endpoint_submits_json_with_the_key_from_the_environment_and_waits_through_generation():
    created = {"id": 7, "generation": {"status": "queued", "tasks_done": 0, "tasks_total": 2}}
    generating = {"id": 7, "generation": {"status": "running", "tasks_done": 1, "tasks_total": 2}}
    generated = {"id": 7, "generation": {"status": "done", "tasks_done": 2, "tasks_total": 2}}
    answers = {"/api/v1/endpoint-submissions/": [(201, {}, created)],
               "/api/v1/endpoint-submissions/7/": [(200, {}, generating), (502, {}, {}), (200, {}, generated)],
               "/api/v1/submissions/7/": [(200, {}, SCORED)]}
    with Scripted(answers) as server:
        done = run_against(server, "endpoint", "--split", "dev", "--model-name", "O", "--base-url",
                           "https://api.example.test/v1", "--model-id", "o-model", "--api-key-env", "MY_KEY",
                           "--default-temperature", "--max-tokens", "32000", "--wait", "--poll", "0.1",
                           MY_KEY="sk-endpoint-secret")
    assert done.returncode == 0, done.stderr
    sent = json.loads(server.seen[0]["body"])
    assert sent["api_key"] == "sk-endpoint-secret" and sent["default_temperature"] is True
    assert (sent["base_url"], sent["model_id"], sent["max_tokens"], sent["split"]) == (
        "https://api.example.test/v1", "o-model", 32000, "dev")
    assert "sk-endpoint-secret" not in done.stdout + done.stderr
    assert "Final 50.00" in done.stdout and "generating 2/2 pages" in done.stderr

"""Scoring inside the isolated evaluator container: same scores as the host, and nothing gets out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator import container
from evaluator.bundle import make_bundle_zip
from tests.evaluator.calibration.expectations import KNOWN_JUDGE_GAPS_ISSUE_14, KNOWN_UNREPEATABLE_ISSUE_14
from tests.evaluator.fixtures.dataset_builder import build_dataset, record

# Image builds happen in the first test's fixtures: allow for them (minutes on a loaded 2-core machine).
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(2700)]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev" / "data.jsonl"


def make_job(job_dir: Path, data_jsonl: Path, bundle_dir: Path, tasks=None, ocr_cache: str | None = None) -> Path:
    """A job directory as the dispatcher builds it: data, bundle, job.json, out/."""
    shutil.copytree(data_jsonl.parent, job_dir / "data")
    make_bundle_zip({p.name: p for p in sorted(bundle_dir.iterdir()) if p.is_dir()}, job_dir / "bundle.zip")
    job = {"data": f"data/{data_jsonl.name}", "bundle": "bundle.zip", "tasks": tasks, "protocol": "iwr-det",
           "workers": 2, "ocr_cache": ocr_cache}
    (job_dir / "job.json").write_text(json.dumps(job))
    return job_dir


def scores(document: dict) -> dict:
    """Per-task scores and steps passed: the same Chromium and fonts draw the same pixels in or out of the container."""
    fields = ("ifs", "vfs", "final", "low_level", "high_level", "steps_passed")
    return {key: {f: t[f] for f in fields} for key, t in document["tasks"].items()}


@pytest.fixture(scope="module")
def reference_bundle(tmp_path_factory) -> Path:
    if not SAMPLE.is_file():
        pytest.fail(f"the sample benchmark is missing at {SAMPLE}: scripts/setup.sh builds it")
    out = tmp_path_factory.mktemp("baselines")
    result = subprocess.run([sys.executable, "-m", "evaluator", "baselines", "--data", str(SAMPLE), "--out", str(out),
                             "--kinds", "reference"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return out / "reference"


def test_container_scores_equal_the_host_evaluator(evaluator_image, reference_bundle, tmp_path):
    """The sample benchmark's reference pages score the same inside the container as on the host."""
    job = make_job(tmp_path / "job", SAMPLE, reference_bundle)
    outcome = container.run_job(job, image=evaluator_image)
    assert outcome.reason is None, outcome.log_tail
    inside = json.loads((job / "out" / "results.json").read_text())

    host_out = tmp_path / "host"
    result = subprocess.run([sys.executable, "-m", "evaluator", "score", "--data", str(SAMPLE),
                             "--bundle", str(job / "bundle.zip"), "--out", str(host_out), "--workers", "2"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    host = json.loads((host_out / "results.json").read_text())
    assert inside["protocol"] == host["protocol"] and inside["evaluator_version"] == host["evaluator_version"]
    # Exactly the same scores, except on the tasks known not to repeat even on one host (issue 14: their
    # animations end in real time), whose steps still agree.
    steady = {key: value for key, value in scores(inside).items() if key not in KNOWN_UNREPEATABLE_ISSUE_14}
    assert steady == {key: value for key, value in scores(host).items() if key not in KNOWN_UNREPEATABLE_ISSUE_14}
    assert all(inside["tasks"][key]["steps_passed"] == host["tasks"][key]["steps_passed"] for key in inside["tasks"])
    if not KNOWN_UNREPEATABLE_ISSUE_14 & set(inside["tasks"]):
        assert inside["summary"] == host["summary"]
    passing = {key: task["final"] for key, task in inside["tasks"].items() if key not in KNOWN_JUDGE_GAPS_ISSUE_14}
    assert passing and min(passing.values()) >= 0.9, passing  # the judge's known gaps aside, references pass


HOSTILE_NETWORK_PAGE = """<!doctype html><html><body><button class="btn" id="go">Go</button><p id="out">idle</p>
<script>
document.getElementById('go').onclick = async () => {
  let reached = [];
  for (const url of ['http://example.com/', 'http://127.0.0.1:8000/', 'http://10.0.0.1/']) {
    try { await fetch(url, {mode: 'no-cors'}); reached.push(url); } catch (e) {}
  }
  document.getElementById('out').textContent = reached.length ? 'reached ' + reached.join(' ') : 'offline';
};
</script></body></html>"""


def tiny_dataset(root: Path) -> Path:
    rec = record(1, action_sequence=[{"type": "Click", "parameters": {"description": "the 'Go' button"},
                                      "visual_evaluation_flag": False, "logical_assertion": None}])
    return build_dataset(root, [rec])


def one_page_job(tmp_path: Path, html: str) -> Path:
    """A job of one one-action task whose submitted page is ``html``."""
    data = tiny_dataset(tmp_path / "ds")
    pages = tmp_path / "pages" / "1"
    pages.mkdir(parents=True)
    (pages / "index.html").write_text(html)
    return make_job(tmp_path / "job", data, pages.parent)


def test_a_page_in_the_container_finds_no_network(evaluator_image, tmp_path):
    """Requests a page makes are blocked and recorded; the container itself has no route anywhere."""
    job = one_page_job(tmp_path, HOSTILE_NETWORK_PAGE)
    outcome = container.run_job(job, image=evaluator_image)
    assert outcome.reason is None, outcome.log_tail
    blocked = json.loads((job / "out" / "tasks" / "1" / "blocked.json").read_text())
    assert any("example.com" in entry["url"] for entry in blocked)

    probe = ("import socket\nfor host in ('1.1.1.1', '127.0.0.1'):\n    s = socket.socket()\n    s.settimeout(2)\n"
             "    try:\n        s.connect((host, 80)); print('CONNECTED', host)\n    except OSError as e:\n"
             "        print('refused', host, type(e).__name__)\n")
    result = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3", evaluator_image,
                             "-c", probe], capture_output=True, text=True, timeout=120)
    assert "CONNECTED" not in result.stdout and result.stdout.count("refused") == 2, result.stdout + result.stderr


def test_the_container_runs_as_non_root_on_a_read_only_root(evaluator_image, tmp_path):
    """The evaluator's user is not root and cannot write outside /tmp and the job's out/."""
    command = container.run_command(tmp_path, evaluator_image, "iwr-probe", container.ContainerLimits())
    image_at = command.index(evaluator_image)
    probe = ["--entrypoint", "sh", evaluator_image, "-c",
             "id -u; touch /usr/probe 2>/dev/null && echo WROTE-ROOT || echo root-read-only; "
             "touch /job/probe 2>/dev/null && echo WROTE-JOB || echo job-read-only; touch /tmp/ok && echo tmp-ok"]
    (tmp_path / "out").mkdir(exist_ok=True)
    result = subprocess.run(command[:image_at] + probe, capture_output=True, text=True, timeout=120)
    subprocess.run(["docker", "rm", "-f", "iwr-probe"], capture_output=True)
    lines = result.stdout.split()
    assert lines[0] != "0" and lines[0] == str(container.CONTAINER_UID)
    assert lines[1:] == ["root-read-only", "job-read-only", "tmp-ok"]
    assert "--cap-drop" in command and "no-new-privileges" in command and "none" in command


def test_only_the_filling_container_writes_the_ocr_cache_and_jobs_read_it(evaluator_image, tmp_path):
    """The fill container (task set only) fills the shared reference OCR cache; a job container sees it
    read-only, cannot plant or replace a reading, and scores with it."""
    data = tiny_dataset(tmp_path / "ds")
    render_text_checkpoint(data.parent / "data" / "1" / "checkpoints" / "step_0.png")
    pages = tmp_path / "pages" / "1"
    pages.mkdir(parents=True)
    (pages / "index.html").write_text("<button class=btn>Go</button>")
    job = make_job(tmp_path / "job", data, pages.parent, ocr_cache=container.OCR_CACHE_MOUNT)
    cache = tmp_path / "ocr-cache"
    assert container.start_fill(job / "data" / data.name, cache, evaluator_image, "iwr-fill-probe",
                                container.ContainerLimits())
    subprocess.run(["docker", "wait", "iwr-fill-probe"], capture_output=True, timeout=600)
    entries = {path.name: path.read_bytes() for path in cache.glob("*.json")}
    assert len(entries) == 1 and b"CACHED" in next(iter(entries.values())), sorted(cache.rglob("*"))

    command = container.run_command(job, evaluator_image, "iwr-probe-cache", container.ContainerLimits(),
                                    ocr_cache=cache)
    entry = next(iter(entries))
    probe = ["--entrypoint", "sh", evaluator_image, "-c",
             f"touch /ocr-cache/planted.json 2>/dev/null && echo PLANTED || echo cache-read-only; "
             f"echo '[]' 2>/dev/null > /ocr-cache/{entry} && echo REPLACED || echo entry-kept"]
    (job / "out").mkdir(exist_ok=True)
    result = subprocess.run(command[:command.index(evaluator_image)] + probe, capture_output=True, text=True,
                            timeout=120)
    subprocess.run(["docker", "rm", "-f", "iwr-probe-cache"], capture_output=True)
    assert result.stdout.split() == ["cache-read-only", "entry-kept"], result.stdout + result.stderr

    outcome = container.run_job(job, image=evaluator_image, ocr_cache=cache)
    assert outcome.reason is None, outcome.log_tail
    assert json.loads((job / "out" / "results.json").read_text())["tasks"]["1"]["error"] is None
    assert {path.name: path.read_bytes() for path in cache.glob("*.json")} == entries


def render_text_checkpoint(path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.open(path).convert("RGB")
    ImageDraw.Draw(picture).text((20, 20), "CACHED READING", fill=(0, 0, 0),
                                 font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 28))
    picture.save(path)


MEMORY_BOMB_PAGE = """<!doctype html><html><body><button class="btn" onclick="bomb()">Go</button><script>
function bomb() { const keep = []; for (;;) { keep.push(new Float64Array(8 * 1024 * 1024).fill(1)); } }
</script></body></html>"""


def test_a_memory_bomb_is_stopped_at_the_limit_and_reported(evaluator_image, tmp_path):
    """A page eating memory is killed at the container's limit and the job says so; nothing is left running."""
    job = one_page_job(tmp_path, MEMORY_BOMB_PAGE)
    limits = container.ContainerLimits(memory="700m", wall_clock_s=300)
    outcome = container.run_job(job, image=evaluator_image, limits=limits)
    results = job / "out" / "results.json"
    if outcome.reason is None:  # the renderer died inside; the evaluator reported it per task
        task = json.loads(results.read_text())["tasks"]["1"]
        # Killed while loading: the task's error says so; killed at the click: that step fails and says why
        # (on a busy machine the allocating renderer may stop answering before the heap cap kills it).
        failed = [step for step in task["steps"] if not step["passed"]]
        said = (task["error"] or "") + " ".join(step["reason"] for step in failed[:1])
        assert task["ifs"] == 0 and failed, task
        assert any(word in said.lower() for word in ("memory", "crash", "killed", "timeout")), (said, task["steps"])
    else:
        assert "memory limit exceeded" in outcome.reason
    leftover = subprocess.run(["docker", "ps", "-aq", "--filter", "name=iwr-job-"], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""


def test_a_hung_container_is_stopped_at_the_wall_clock_limit(evaluator_image, tmp_path):
    """A job that never finishes is killed at the wall-clock limit, reported, and removed."""
    job = one_page_job(tmp_path, "<button class=btn>Go</button>")
    outcome = container.run_job(job, image=evaluator_image, limits=container.ContainerLimits(wall_clock_s=1))
    assert outcome.timed_out and outcome.reason.startswith("time limit exceeded")
    leftover = subprocess.run(["docker", "ps", "-aq", "--filter", "name=iwr-job-"], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""


def container_pid(name: str):
    """The host pid of the container's first process, or None while it is not running."""
    def find():
        done = subprocess.run(["docker", "inspect", "--format", "{{.State.Pid}}", name], capture_output=True,
                              text=True)
        pid = done.stdout.strip()
        return int(pid) if done.returncode == 0 and pid.isdigit() and pid != "0" else None
    return find


def test_a_job_in_the_container_holds_no_secret_and_chromium_keeps_its_sandbox(evaluator_image, tmp_path):
    """The dispatcher's secrets stay out of the container and no host path is in it; Chromium runs with its own
    sandbox (renderers in user namespaces of their own, seccomp-filtered), as the non-root user."""
    from tests.evaluator import canary

    planted = canary.plant_files(tmp_path / "checkout", tmp_path / "home")
    job = one_page_job(tmp_path, "<button class=btn>Go</button><p>A page with some text</p>")
    container.prepare_job_dir(job)
    name = f"iwr-canary-{tmp_path.name[-12:]}"
    command = container.run_command(job, evaluator_image, name, container.ContainerLimits())
    assert not [a for a in command if canary.CANARY in a]
    engine_socket = Path(os.environ["DOCKER_HOST"].removeprefix("unix://"))
    hidden = [*planted, engine_socket, ROOT / "var", ROOT / "leaderboard", tmp_path / "checkout", Path("/root/.pyenv")]
    env = {**os.environ, **canary.SECRET_ENV, "HOME": str(tmp_path / "home")}  # the dispatcher's, as in production
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = canary.watch(proc, hidden, timeout=600, root_pid=container_pid(name))
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)
    assert proc.returncode == 0, (stdout + stderr).decode()[-3000:]
    assert seen.leaks == [], seen.summary()
    assert seen.sandboxed and seen.browsers and seen.roots_checked >= 1, seen.summary()
    assert seen.chromium_sandboxed(), seen.summary()
    assert json.loads((job / "out" / "results.json").read_text())["tasks"]["1"]["error"] is None


def test_the_container_refuses_to_run_chromium_without_its_sandbox(evaluator_image, tmp_path):
    """The image no longer turns Chromium's sandbox off, and asking it to is refused with the reason."""
    env = subprocess.run(["docker", "run", "--rm", "--entrypoint", "env", evaluator_image], capture_output=True,
                         text=True, timeout=120).stdout
    assert "IWR_CHROMIUM_SANDBOX" not in env and "IWR_SANDBOX_ACTIVE=container" in env
    job = one_page_job(tmp_path, "<button class=btn>Go</button>")
    container.prepare_job_dir(job)
    command = container.run_command(job, evaluator_image, "iwr-no-sandbox", container.ContainerLimits())
    at = command.index(evaluator_image)
    result = subprocess.run([*command[:at], "--env", "IWR_CHROMIUM_SANDBOX=0", *command[at:]], capture_output=True,
                            text=True, timeout=600)
    subprocess.run(["docker", "rm", "-f", "iwr-no-sandbox"], capture_output=True)
    task = json.loads((job / "out" / "results.json").read_text())["tasks"]["1"] if result.returncode == 0 else None
    assert result.returncode != 0 or task["error"], result.stdout[-2000:]
    assert "no longer supported" in result.stdout + result.stderr + json.dumps(task)

"""Scoring whole bundles: the results contract, live progress, repeatability, the CLI and the job sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import runner
from evaluator.browser import browser_version
from evaluator.bundle import make_bundle_zip
from evaluator.metrics.ocr import ocr_engine
from evaluator.runner import WorkerError, score
from evaluator.sandbox import JobLimits, SandboxError, bubblewrap_problem, resolve_backend, run_job
from tests.evaluator.fixtures.dataset_builder import build_dataset, record
from tests.evaluator.test_replay import ACTIONS, GOOD_PAGE

ROOT = Path(__file__).resolve().parents[2]
TASK_KEYS = ("1", "2", "3")
# Task 2 stops after the click (its Start button does nothing); task 3 has no page in the bundle.
HALF_PAGE = '<h1 id="status">Ready</h1><button class="btn">Start</button><input placeholder="Name">'
SCORE_FIELDS = ("ifs", "vfs", "final", "low_level", "high_level", "steps_passed", "steps_total", "error")
needs_bwrap = pytest.mark.skipif(bubblewrap_problem() is not None, reason="bubblewrap is not usable here")


def make_task_set(root: Path, keys, actions=ACTIONS, resolution: str = "640x400") -> Path:
    """A task set where every task has ``actions`` at ``resolution``; returns its data.jsonl."""
    records = [record(key, action_sequence=actions, recording_details={"resolution": resolution,
                                                                     "environment": "desktop"}) for key in keys]
    return build_dataset(root, records)


def make_bundle(root: Path, pages: dict[str, str]) -> Path:
    """A bundle folder holding <key>/index.html for each page."""
    for key, html in pages.items():
        (root / key).mkdir(parents=True, exist_ok=True)
        (root / key / "index.html").write_text(html)
    return root


def scores_of(results: dict) -> dict:
    return {key: {f: task[f] for f in SCORE_FIELDS} for key, task in results["tasks"].items()}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One scored run shared by the tests that only read its output."""
    root = tmp_path_factory.mktemp("runner")
    data = make_task_set(root / "set", TASK_KEYS)
    bundle = make_bundle(root / "bundle", {"1": GOOD_PAGE, "2": HALF_PAGE})
    events = []
    results = score(data, bundle, root / "out", workers=2, progress=events.append)
    return {"root": root, "data": data, "bundle": bundle, "out": root / "out", "results": results, "events": events}


@pytest.mark.browser
def test_it_writes_results_in_the_contract_shape(job):
    """results.json has the protocol, version, every task in data order with all fields, and a summary."""
    from evaluator import __version__

    on_disk = json.loads((job["out"] / "results.json").read_text())
    assert on_disk == job["results"]
    assert on_disk["protocol"] == "iwr-det-17" and on_disk["evaluator_version"] == __version__
    assert on_disk["ocr_engine"] == ocr_engine() and "tesseract" in on_disk["ocr_engine"]
    assert on_disk["browser"] == browser_version() and on_disk["browser"].startswith("chromium-headless-shell 1")
    assert list(on_disk["tasks"]) == list(TASK_KEYS)
    for task in on_disk["tasks"].values():
        assert set(SCORE_FIELDS) | {"steps"} <= set(task)
        assert all(0.0 <= task[k] <= 1.0 for k in ("ifs", "vfs", "final", "low_level", "high_level"))
    assert on_disk["tasks"]["1"]["ifs"] == 1.0 and on_disk["tasks"]["1"]["error"] is None
    assert on_disk["tasks"]["2"]["steps_passed"] == 0 and len(on_disk["tasks"]["2"]["steps"]) == 2
    summary = on_disk["summary"]
    assert summary["n_tasks"] == 3 and {"ifs", "vfs", "final", "by_category"} <= set(summary)
    assert summary["ifs"] == pytest.approx(1 / 3)


@pytest.mark.browser
def test_it_scores_a_missing_page_zero_with_the_reason(job):
    """A task without a page in the bundle scores 0 and says 'missing'."""
    task = job["results"]["tasks"]["3"]
    assert task["error"] == "missing" and task["final"] == 0.0 and task["steps_total"] == len(ACTIONS)


@pytest.mark.browser
def test_it_reports_progress_and_writes_each_task_as_it_finishes(job):
    """progress.jsonl and the hook get one event per task; each task folder has its result and artifacts."""
    lines = [json.loads(line) for line in (job["out"] / "progress.jsonl").read_text().splitlines()]
    assert sorted(e["task"] for e in lines) == list(TASK_KEYS) and [e["done"] for e in lines] == [1, 2, 3]
    assert lines == job["events"] and all(e["total"] == 3 for e in lines)
    task_dir = job["out"] / "tasks" / "1"
    assert json.loads((task_dir / "result.json").read_text()) == job["results"]["tasks"]["1"]
    for name in ("step_0.png", "step_3.png", "replay.mp4", "console.json", "blocked.json"):
        assert (task_dir / name).is_file(), name
    assert not (job["out"] / ".bundle").exists()
    assert json.loads((job["out"] / "job.json").read_text())["workers"] == 2


@pytest.mark.browser
def test_the_same_bundle_scores_identically_every_time(job, tmp_path: Path):
    """Two more runs of the same bundle (one worker, no video) give exactly the same scores."""
    first = scores_of(job["results"])
    for run in range(2):
        again = score(job["data"], job["bundle"], tmp_path / f"again{run}", workers=1, record_video=False)
        assert scores_of(again) == first
        assert again["summary"] == job["results"]["summary"]


@pytest.mark.browser
@needs_bwrap
def test_the_cli_scores_a_zip_bundle_inside_bubblewrap(job, tmp_path: Path):
    """`python -m evaluator score` runs the job in bubblewrap and writes the same results and a playable replay."""
    bundle_zip = make_bundle_zip({"1": GOOD_PAGE, "2": HALF_PAGE, "extra": GOOD_PAGE}, tmp_path / "bundle.zip")
    out = tmp_path / "cli-out"
    done = _cli("--data", job["data"], "--bundle", bundle_zip, "--out", out, "--workers", "1", "--tasks", "1,3")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["n_tasks"] == 2
    assert "note: bundle folder(s) matching no task being scored, ignored: 2, extra" in done.stderr
    assert "note: no page in the bundle for task(s), scored 0: 3" in done.stderr
    results = json.loads((out / "results.json").read_text())
    assert scores_of(results) == {k: v for k, v in scores_of(job["results"]).items() if k in ("1", "3")}
    assert json.loads((out / "job.json").read_text())["sandbox"] == "bubblewrap"
    task_dir = out / "tasks" / "1"
    assert mp4_facts(task_dir / "replay.mp4") == {"format": "mp4", "codec": "h264", "size": [640, 400]}
    assert sorted(p.name for p in task_dir.iterdir() if not p.name.startswith("step_")) == [
        "blocked.json", "console.json", "replay.mp4", "result.json"]


def mp4_facts(path: Path) -> dict:
    """Container, codec and frame size of a video as ffprobe reads it (a file it cannot read fails here)."""
    assert path.is_file(), f"{path} missing"
    assert path.read_bytes()[4:8] == b"ftyp", "not an MP4 file"
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=format_name,duration:"
                            "stream=codec_name,width,height", "-of", "json", str(path)],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    info = json.loads(probe.stdout)
    stream, fmt = info["streams"][0], info["format"]
    assert float(fmt["duration"]) > 0
    return {"format": "mp4" if "mp4" in fmt["format_name"].split(",") else fmt["format_name"],
            "codec": stream["codec_name"], "size": [stream["width"], stream["height"]]}


def test_it_stops_with_a_reason_when_workers_cannot_start(tmp_path: Path, monkeypatch):
    """Without a usable Chromium the job fails with the cause instead of scoring every task 0; the workers see the
    environment of the moment they start, though the server they are forked from started before it changed."""
    runner._start_worker_server()
    monkeypatch.setenv("IWR_CHROMIUM", str(tmp_path / "no-such-chromium"))
    data = make_task_set(tmp_path / "set", ["1"])
    bundle = make_bundle(tmp_path / "bundle", {"1": GOOD_PAGE})
    with pytest.raises(WorkerError, match="Chromium not found"):
        score(data, bundle, tmp_path / "out", workers=1)
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("problem", ["no-data", "unknown-task", "bad-bundle", "bad-protocol", "no-sandbox"])
def test_the_cli_refuses_unusable_inputs_with_one_line(tmp_path: Path, problem: str):
    """Unusable inputs exit with status 2 and a single `error:` line, before anything is scored."""
    data = make_task_set(tmp_path / "set", ["1"])
    bundle = make_bundle(tmp_path / "bundle", {"1": GOOD_PAGE})
    args = {"--data": data, "--bundle": bundle, "--out": tmp_path / "out"}
    extra: list = []
    if problem == "no-data":
        args["--data"] = tmp_path / "nothing.jsonl"
    elif problem == "unknown-task":
        extra = ["--tasks", "1,99"]
    elif problem == "bad-bundle":
        args["--bundle"] = tmp_path / "garbage.zip"
        args["--bundle"].write_bytes(b"this is not a zip file")
    elif problem == "bad-protocol":
        extra = ["--protocol", "nope"]
    else:
        extra = ["--sandbox", "none"]
    done = _cli(*[x for pair in args.items() for x in pair], *extra, env_extra={"IWR_ALLOW_UNSANDBOXED": ""})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def _cli(*args, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "evaluator", "score", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def _descendants(pid: int) -> dict[int, str]:
    """Every live process below ``pid``: its pid and command name (zombies, already dead, left out)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if rest[0] != "Z":
            names[int(stat.parent.name)] = name
            children.setdefault(int(rest[1]), []).append(int(stat.parent.name))
    found, todo = {}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = names[child]
            todo.append(child)
    return found


@pytest.mark.browser
def test_workers_and_their_browsers_end_when_the_job_is_killed_outright(tmp_path: Path):
    """A job killed with SIGKILL (no clean-up runs) leaves nothing behind: its workers, forked from the server in
    process groups of their own, and their Chromium end by themselves. Unsandboxed, nothing else would end them."""
    (tmp_path / "standby").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "IWR_ALLOW_UNSANDBOXED": "1"}
    job = subprocess.Popen([sys.executable, "-m", "evaluator", "score", "--standby", str(tmp_path / "standby"),
                            "--out", str(tmp_path / "out"), "--sandbox", "none", "--workers", "2"],
                           cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # both workers up, each with its browser
            below = _descendants(job.pid)
            if sum("chrom" in name for name in below.values()) >= 2 and job.poll() is None:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the workers did not start their browsers: {below}")
        time.sleep(1)
        below = _descendants(job.pid)
        job.kill()
        job.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (left := [p for p in below if _alive(p)]):
            time.sleep(0.2)
        assert not left, {p: below[p] for p in left}
    finally:
        job.kill()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------- the job sandbox


@needs_bwrap
def test_a_sandboxed_job_has_no_network_and_a_read_only_system(tmp_path: Path):
    """Inside bubblewrap the job cannot reach the network and can write only its own folder."""
    probe = (
        "import socket, pathlib, sys\n"
        "s = socket.socket(); s.settimeout(3)\n"
        "try:\n    s.connect(('1.1.1.1', 80)); print('network')\nexcept OSError:\n    print('no-network')\n"
        f"pathlib.Path({str(tmp_path)!r}, 'ok').write_text('1')\n"
        "try:\n    open('/usr/iwr-should-not-exist', 'w'); print('writable')\n"
        "except OSError:\n    print('read-only')\n"
    )
    result = run_job([sys.executable, "-c", probe], [tmp_path], backend="bubblewrap")
    assert result.returncode == 0 and result.backend == "bubblewrap", result.stderr_tail
    assert (tmp_path / "ok").read_text() == "1" and not Path("/usr/iwr-should-not-exist").exists()


@needs_bwrap
def test_a_sandboxed_job_sees_this_evaluator_and_its_python_even_from_tmp(tmp_path: Path, capfd):
    """The sandbox replaces /tmp; the evaluator's package and Python environment stay visible (a checkout
    under /tmp runs its jobs), read-only; the rest of the checkout does not."""
    from evaluator.sandbox import runtime_paths

    assert Path(sys.prefix) in runtime_paths() and ROOT / "evaluator" in runtime_paths()
    assert ROOT not in runtime_paths()
    probe = ("import evaluator, pathlib, sys\n"
             f"print(pathlib.Path(evaluator.__file__).resolve().parents[1] == pathlib.Path({str(ROOT)!r}))\n"
             f"try:\n    open({str(ROOT / 'evaluator' / 'iwr-probe')!r}, 'w'); print('writable')\nexcept OSError:\n"
             "    print('read-only')\n")
    result = run_job([sys.executable, "-c", probe], [tmp_path], cwd=ROOT / "evaluator", backend="bubblewrap")
    assert result.returncode == 0, result.stderr_tail
    assert capfd.readouterr().out.split()[-2:] == ["True", "read-only"]
    assert not (ROOT / "evaluator" / "iwr-probe").exists() and not (ROOT / "iwr-probe").exists()


@needs_bwrap
def test_a_sandboxed_job_is_killed_at_its_time_and_memory_limits(tmp_path: Path):
    """The watchdog kills a job that runs too long or holds too much memory, and says which."""
    slow = run_job([sys.executable, "-c", "import time; time.sleep(60)"], [tmp_path], limits=JobLimits(time_s=1))
    assert slow.timed_out and slow.elapsed_s < 10 and "time limit" in slow.reason
    hog = "x = bytearray(1500 * 2**20); import time; time.sleep(60)"
    big = run_job([sys.executable, "-c", hog], [tmp_path], limits=JobLimits(time_s=30, memory_mb=500))
    assert big.memory_exceeded and big.elapsed_s < 20 and "memory limit" in big.reason


def test_job_memory_counts_resident_pages_until_near_the_limit_then_pss():
    """The job watchdog reads cheap resident sizes while far below the limit and PSS once near it;
    both see a child's memory, and resident is never below PSS."""
    import time

    from evaluator.sandbox import tree_memory_bytes

    child = subprocess.Popen([sys.executable, "-c", "x = bytearray(200 * 2**20); print(1, flush=True); "
                              "import time; time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline().strip() == b"1"
        time.sleep(0.1)
        pss = tree_memory_bytes(os.getpid())
        resident = tree_memory_bytes(os.getpid(), within=2**40)
        near_limit = tree_memory_bytes(os.getpid(), within=1)
    finally:
        child.kill()
        child.wait()
    assert pss > 200 * 2**20 and resident >= pss
    assert abs(near_limit - pss) < 0.05 * pss  # past the limit: PSS again, not the resident total


def test_running_without_a_sandbox_needs_explicit_permission(monkeypatch):
    """Backend 'none' is refused unless allowed; unknown backends are refused; 'container' is not silent."""
    monkeypatch.delenv("IWR_ALLOW_UNSANDBOXED", raising=False)
    with pytest.raises(SandboxError, match="allow-unsandboxed"):
        resolve_backend("none")
    assert resolve_backend("none", allow_unsandboxed=True) == "none"
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        resolve_backend("chroot")
    with pytest.raises(SandboxError, match="container"):
        run_job(["true"], [], backend="container")

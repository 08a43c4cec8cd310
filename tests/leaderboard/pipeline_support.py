"""Support for the pipeline tests: a scripted stand-in evaluator and a harness that drives
a separate Django process (the worker tests' database must be one other processes see).

Fake evaluator (``python -m tests.leaderboard.pipeline_support fake-evaluator score --data D
--bundle B --out O ...``) honours the evaluator's output contract (progress.jsonl,
tasks/<key>/result.json, results.json) with scores computed from the page bytes, and
misbehaves on request through ``FAKE_EVALUATOR_MODE``: ``ok``, ``crash`` (exit 1 with a
traceback), ``usage`` (exit 2), ``signal`` (SIGKILLs itself after one task, as the
kernel's out-of-memory killer would), ``stopped`` (SIGTERMs itself after one task), ``hang``
(never ends), ``timeout-message`` (exit 1 saying the sandbox's time limit was hit), ``worker-killed``
(exit 1 after a line naming the task whose worker was killed); and writes
what an escaped page could: ``symlink-artifact``, ``nan-score``, ``score-7``, ``unknown-task``,
``bad-summary``, ``many-steps``. Options ``--fake-mode``/``--fake-delay`` (or the variables) steer it.
``FAKE_EVALUATOR_DELAY`` sleeps that many seconds per task. It prints each task's first
action description so tests can check that test-split secrets are scrubbed from logs.

Harness (``python -m tests.leaderboard.pipeline_support harness COMMAND``, or ``harness(environ,
COMMAND, ...)`` from a test), run with the environment of the configuration under test:
``setup N_TASKS N_SUBMISSIONS`` migrates, imports a tiny dataset, creates a user and queues
N submissions of one bundle; ``state ID`` prints an evaluation's state and task results as
JSON; ``generation-setup BASE_URL N_TASKS API_KEY`` accepts an endpoint submission through
the product's form (its wake-up goes to the broker); ``generation-state ID`` prints a
generation job's state as JSON.

Worker nodes (``Worker``): real Celery workers started by the tests in their own process
groups, sharing the harness's environment (``worker_environ``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from evaluator import scoring

WIDTH, HEIGHT = 640, 480
ROOT = Path(__file__).resolve().parents[2]
# Settings of the outer environment that would point the harness and workers at another deployment.
DEPLOYMENT_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "IWR_DATA_DIR")


# --------------------------------------------------------------------------- fake evaluator


def fake_evaluator(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    # The worker passes the evaluator no environment of its own: tests steer it by options.
    parser.add_argument("--fake-mode", default=os.environ.get("FAKE_EVALUATOR_MODE", "ok"))
    parser.add_argument("--fake-delay", type=float, default=float(os.environ.get("FAKE_EVALUATOR_DELAY", "0")))
    parser.add_argument("--fake-dump-env", type=Path, help="write the environment it was started with here")
    args, _unknown = parser.parse_known_args(argv)
    mode = args.fake_mode
    if args.fake_dump_env:
        args.fake_dump_env.write_text(json.dumps(dict(os.environ)))
    if mode == "usage":
        print("error: --data is not a task set", file=sys.stderr)
        return 2
    records = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "progress.jsonl").write_text("")
    results = {}
    for done, record in enumerate(records, start=1):
        key = str(record["id"])
        print(f"task {key}: trying {record['action_sequence'][0]['parameters']['description']}", flush=True)
        time.sleep(args.fake_delay)
        results[key] = _fake_result(args.bundle / key / "index.html", len(record["action_sequence"]))
        _write(args.out / "tasks" / key / "result.json", results[key])
        with open(args.out / "progress.jsonl", "a") as handle:
            handle.write(json.dumps({"task": key, "done": done, "total": len(records)}) + "\n")
        _misbehave(mode, key)
    summary = scoring.summarize(results, [_task(record) for record in records])
    _tamper(mode, args.out, results, summary)
    _write(args.out / "results.json", {"protocol": "iwr-det-17", "evaluator_version": "fake-1",
                                       "tasks": results, "summary": summary})
    return 0


def _task(record: dict) -> SimpleNamespace:
    axes = {axis: record["classification"].get(axis) for axis in scoring.CATEGORY_AXES}
    return SimpleNamespace(key=str(record["id"]), **axes)


def _tamper(mode: str, out: Path, results: dict, summary: dict) -> None:
    """The output a page that escaped its browser could leave behind (``FAKE_EVALUATOR_MODE``)."""
    first = next(iter(results.values()))
    if mode == "symlink-artifact":
        (out / "tasks" / "leak.png").symlink_to("/etc/passwd")
    elif mode == "nan-score":
        first["vfs"] = float("nan")
    elif mode == "score-7":
        first["final"] = 7
    elif mode == "unknown-task":
        results["not-a-task"] = dict(first)
    elif mode == "many-steps":  # every field consistent, but the task has far fewer actions
        first.update(steps_passed=900, steps_total=900, ifs=1.0, final=scoring.final(1.0, first["vfs"]),
                     steps=[{"k": k, "passed": True} for k in range(900)])
    elif mode == "bad-summary":
        summary["final"] = 1.0 if summary["final"] != 1.0 else 0.5


def _misbehave(mode: str, key: str) -> None:
    if mode == "worker-killed":  # the evaluator's pool names the task whose worker it killed, then gives up
        print(f"WARNING evaluator.runner: worker iwr-worker-1: worker process died (task {key})",
              file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "crash":
        raise RuntimeError("simulated evaluator bug")
    if mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "stopped":  # as a shutting-down machine stops it
        os.kill(os.getpid(), signal.SIGTERM)
    if mode == "hang":
        time.sleep(3600)
    if mode == "timeout-message":
        print("error: job exceeded its time limit and was killed", file=sys.stderr)
        sys.exit(1)


def _fake_result(page: Path, n_actions: int) -> dict:
    if not page.is_file():
        return {"ifs": 0.0, "vfs": 0.0, "final": 0.0, "low_level": 0.0, "high_level": 0.0, "steps_passed": 0,
                "steps_total": n_actions, "steps": [], "error": "missing"}
    digest = hashlib.sha256(page.read_bytes()).digest()
    passed = digest[0] % (n_actions + 1)
    ifs, visual = scoring.ifs(passed, n_actions), digest[1] / 255
    vfs = scoring.vfs(visual, visual)
    return {"ifs": ifs, "vfs": vfs, "final": scoring.final(ifs, vfs), "low_level": visual, "high_level": visual,
            "steps_passed": passed, "steps_total": n_actions, "steps": [{"k": 1, "passed": passed > 0}],
            "error": None}


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


# --------------------------------------------------------------------------- tiny datasets and bundles


def write_tiny_dataset(root: Path, split: str, n_tasks: int, n_actions: int = 2) -> Path:
    """A dataset of ``n_tasks`` 640x480 tasks whose pages (``reference_pages``) pass every action."""
    import shutil

    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    video = root / "video.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=white:s=64x48:d=1",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", str(video)], check=True, timeout=60)
    records = []
    for number in range(1, n_tasks + 1):
        key = f"{split}{number}"
        actions = [{"type": "Click", "parameters": {"description": f"Click the button labelled 'Step {k}'"},
                    "visual_evaluation_flag": True, "logical_assertion": None} for k in range(1, n_actions + 1)]
        records.append({"id": key, "classification": {"interaction_complexity": "L2", "visual_complexity": "V1",
                                                      "domain": "productivity", "sub_domain": "demo"},
                        "recording_details": {"resolution": f"{WIDTH}x{HEIGHT}", "environment": "test"},
                        "source_website": f"https://{key}.example/", "action_sequence": actions})
        folder = root / "data" / key
        for name in ("assets", "stitched_assets", "checkpoints"):
            (folder / name).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(video, folder / "video.mp4")
        Image.new("RGB", (16, 16), (200, 30, 30)).save(folder / "assets" / "asset001.png")
        Image.new("RGB", (64, 32), (240, 240, 240)).save(folder / "stitched_assets" / "stitched_image1.png")
        for k in range(n_actions + 1):
            Image.new("RGB", (WIDTH, HEIGHT), (255, 255, 255)).save(folder / "checkpoints" / f"step_{k}.png")
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root / "data.jsonl"


def reference_page(key: str, n_actions: int = 2) -> str:
    buttons = "".join(f'<button class="btn" onclick="this.textContent=\'Done {k}\'">Step {k}</button>'
                      for k in range(1, n_actions + 1))
    return f"<!doctype html><html><body><h1>Task {key}</h1>{buttons}</body></html>"


def write_bundle(path: Path, keys: list[str], n_actions: int = 2) -> Path:
    from evaluator.bundle import make_bundle_zip

    return make_bundle_zip({key: reference_page(key, n_actions) for key in keys}, path)


# --------------------------------------------------------------------------- worker nodes and the harness (test side)


def worker_environ(data_dir: Path, jobs_root: Path, settings: dict) -> dict:
    """The environment shared by the harness and the worker nodes: fresh data and jobs folders, plus ``settings``."""
    inherited = {key: value for key, value in os.environ.items() if key not in DEPLOYMENT_VARIABLES}
    return {**inherited, "DJANGO_SETTINGS_MODULE": "tests.settings", "IWR_ENV": "test",
            "IWR_DATA_DIR": str(data_dir), "IWR_JOBS_ROOT": str(jobs_root), "IWR_HEARTBEAT_SECONDS": "1",
            **settings}


def harness(environ: dict, *args) -> dict:
    """Run one harness command (below) in its own process; returns the JSON it printed last."""
    done = subprocess.run([sys.executable, "-m", "tests.leaderboard.pipeline_support", "harness", *map(str, args)],
                          cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


class Worker:
    """A real Celery worker node (prefork pool, embedded beat) in its own process group."""

    def __init__(self, environ: dict, node: str, log_path: Path, queues: str = "evaluate,default,housekeeping",
                 concurrency: int = 1):
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "leaderboard", "worker", "-Q", queues, "-c", str(concurrency),
             "-B", "-s", str(log_path.with_suffix(".beat")), "-n", f"{node}@%h", "--without-mingle",
             "--without-gossip", "--loglevel=INFO"],
            cwd=ROOT, env=environ, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def wait_for(check, timeout: float, what: str, worker: Worker, interval: float = 0.5):
    """The first true value of ``check()``, polled every ``interval`` s; past ``timeout``, fails showing the log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}\n--- worker log ---\n{worker.log()}")


# --------------------------------------------------------------------------- harness (separate process)


def _harness_main(argv: list[str]) -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    command, *rest = argv
    if command == "setup":
        print(json.dumps(_setup(int(rest[0]), int(rest[1]))))
    elif command == "state":
        print(json.dumps(_state(int(rest[0]))))
    elif command == "generation-setup":
        print(json.dumps(_generation_setup(rest[0], int(rest[1]), rest[2])))
    elif command == "generation-state":
        print(json.dumps(_generation_state(int(rest[0]))))
    return 0


def _setup(n_tasks: int, n_submissions: int) -> dict:
    import tempfile

    from django.core.management import call_command

    from evaluator.protocols import get_protocol
    from leaderboard import tasksets
    from leaderboard.intake import dispatch
    from leaderboard.intake.evaluations import queue_evaluation
    from leaderboard.models import Submission
    from tests.leaderboard.base import make_user

    call_command("migrate", verbosity=0)
    with tempfile.TemporaryDirectory() as tmp:
        data = write_tiny_dataset(Path(tmp) / "tiny", "dev", n_tasks)
        tasksets.import_dataset(data, "dev", "tiny")
        bundle = write_bundle(Path(tmp) / "bundle.zip", [f"dev{n}" for n in range(1, n_tasks + 1)])
        user = make_user("pipeline-owner")
        ids = []
        for number in range(n_submissions):
            submission = Submission.objects.create(owner=user, split="dev", model_name=f"model-{number}")
            with open(bundle, "rb") as handle:
                from django.core.files import File

                submission.bundle.save(f"run-{number}.zip", File(handle), save=True)
            evaluation = queue_evaluation(submission, get_protocol("iwr-det"))
            ids.append(evaluation.pk)
    for evaluation_id in ids:
        dispatch.evaluation(evaluation_id)
    return {"evaluations": ids}


def _state(evaluation_id: int) -> dict:
    from leaderboard.models import Evaluation

    evaluation = Evaluation.objects.get(pk=evaluation_id)
    fields = ("status", "attempts", "tasks_done", "tasks_total", "final", "ifs", "vfs", "final_ci_low",
              "final_ci_high", "failure_kind", "failure_reason", "worker")
    state = {name: getattr(evaluation, name) for name in fields}
    state["results"] = {row.task.key: {"final": row.final, "ifs": row.ifs, "vfs": row.vfs}
                        for row in evaluation.task_results.select_related("task")}
    state["result_rows"] = evaluation.task_results.count()
    state["charged"] = evaluation.submission.charged
    state["on_standby"] = "job given to the evaluator on standby" in evaluation.log  # leaderboard/worker/standby.py
    return state


def _generation_setup(base_url: str, n_tasks: int, api_key: str) -> dict:
    import tempfile

    from django.core.management import call_command

    from leaderboard import tasksets
    from leaderboard.intake import endpoints
    from tests.leaderboard.base import make_user

    call_command("migrate", verbosity=0)
    with tempfile.TemporaryDirectory() as tmp:
        tasksets.import_dataset(write_tiny_dataset(Path(tmp) / "tiny", "dev", n_tasks), "dev", "tiny")
    user = make_user("endpoint-owner")
    form = endpoints.EndpointForm({
        "split": "dev", "protocol": "iwr-det", "model_name": "Worker-VL", "public": "on", "base_url": base_url,
        "model_id": "worker-vl", "api_key": api_key, "max_tokens": "1000", "max_images": "70", "max_frames": "64",
    }, user=user)
    if not form.is_valid():
        raise SystemExit(f"setup form refused: {form.errors.as_json()}")
    return {"job": endpoints.accept(form, user).pk}  # its wake-up is sent once the rows are committed


def _generation_state(job_id: int) -> dict:
    import io
    import zipfile

    from leaderboard.models import GenerationJob

    job = GenerationJob.objects.select_related("submission").get(pk=job_id)
    submission = job.submission
    pages = []
    if submission.bundle:
        with submission.bundle.open("rb") as handle, zipfile.ZipFile(io.BytesIO(handle.read())) as archive:
            pages = sorted(archive.namelist())
    return {"status": job.status, "attempts": job.attempts, "worker": job.worker, "tasks_done": job.tasks_done,
            "task_errors": job.task_errors, "failure_reason": job.failure_reason,
            "key_stored": bool(bytes(job.api_key_encrypted)), "charged": submission.charged, "pages": pages,
            "evaluations": [e.status for e in submission.evaluations.order_by("pk")]}


if __name__ == "__main__":
    if sys.argv[1] == "fake-evaluator":
        sys.exit(fake_evaluator(sys.argv[2:]))
    sys.exit(_harness_main(sys.argv[2:]))

"""Peak resident memory, whole process trees: a scoring job, and the web process during an upload.

    .venv/bin/python bench/memory/run.py [--runs 3] [--sizes 20,200] [--skip-scoring] [--skip-upload]
                                         [--workers 2,4] [--json FILE]

- **scoring**: one job as the worker runs it (``python -m evaluator score --no-video`` on the
  sample benchmark's dev split with its reference pages: the bubblewrap sandbox, the
  evaluator's default workers or each of ``--workers 2,4``, Chromium per worker). The whole
  tree below the command (sandbox, evaluator workers, Playwright drivers, every Chromium
  process) is sampled.
- **upload**: the site under gunicorn (one sync worker, production settings, SQLite in a
  temporary data folder, the sample's dev tasks imported), a verified researcher posting a bundle
  of ``--sizes`` MB (just under: the limit is 200 MB) to ``/api/v1/submissions/`` with an API
  token, streamed from disk. The bundle is a stored (uncompressed) zip holding one task's page
  and assets of random bytes, so the intake reads every byte. The gunicorn tree (master and
  worker) is sampled from the first byte sent to the answer; its size before the upload is
  reported too.

Every ``--interval`` seconds the sampler sums the resident set (RSS, from /proc/PID/statm) and the
proportional set (PSS, /proc/PID/smaps_rollup: shared pages split between the processes sharing
them, so the sum does not count a library or a Chromium zygote page twice) over the tree; a run's
figure is the largest sum seen. Each measurement runs ``--runs`` times from a fresh process tree;
the medians are reported.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
ASSET_BYTES = 16 * 2**20
sys.path.insert(0, str(REPO / "bench" / "evaluator"))


# --------------------------------------------------------------------------- sampling


def tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def resident(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in bytes; (0, 0) once it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            rss = int(handle.read().split()[1]) * PAGE_SIZE
        pss = 0
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
        return rss, pss
    except (OSError, IndexError, ValueError):
        return 0, 0


class Sampler(threading.Thread):
    """Largest RSS and PSS sums over the process tree of ``root`` until stopped."""

    def __init__(self, root: int, interval: float):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_rss = self.peak_pss = self.peak_processes = 0
        self.done = threading.Event()

    def sample(self) -> None:
        pids = tree(self.root)
        sizes = [resident(pid) for pid in pids]
        self.peak_rss = max(self.peak_rss, sum(rss for rss, _ in sizes))
        self.peak_pss = max(self.peak_pss, sum(pss for _, pss in sizes))
        self.peak_processes = max(self.peak_processes, len(pids))

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.interval)

    def stop(self) -> dict:
        self.done.set()
        self.join()
        return {"rss_mb": round(self.peak_rss / 2**20, 1), "pss_mb": round(self.peak_pss / 2**20, 1),
                "processes": self.peak_processes}


# --------------------------------------------------------------------------- scoring


def scoring_run(work: Path, interval: float, workers: int | None = None) -> dict:
    from run import _reference_bundle  # bench/evaluator/run.py: the split's original pages as a bundle

    data = REPO / "var" / "benchmark" / "dev" / "data.jsonl"
    bundle = work / "bundle"
    if not bundle.exists():
        bundle = _reference_bundle(data, work / "bundles")
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "evaluator", "score", "--data", str(data), "--bundle", str(bundle),
               "--out", str(out), "--no-video", *(["--workers", str(workers)] if workers else [])]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env={**os.environ, "OMP_THREAD_LIMIT": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(process.pid, interval)
    sampler.start()
    _, stderr = process.communicate()
    peak = sampler.stop()
    if process.returncode != 0:
        raise SystemExit(f"evaluator score exited {process.returncode}: {stderr.strip()[-800:]}")
    results = json.loads((out / "results.json").read_text())
    return {**peak, "seconds": round(time.monotonic() - started, 1), "tasks": len(results["tasks"]),
            "workers": json.loads((out / "job.json").read_text())["workers"]}


# --------------------------------------------------------------------------- upload


def site_env(work: Path) -> dict:
    return {**os.environ, "IWR_ENV": "production", "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "DJANGO_SECRET_KEY": "bench-only-" + secrets.token_urlsafe(24), "IWR_DATA_DIR": str(work / "data"),
            "IWR_STATIC_ROOT": str(work / "static"), "IWR_LOG_LEVEL": "WARNING", "IWR_QUOTA_DEV_PER_DAY": "1000",
            "DATABASE_URL": "", "IWR_CACHE_URL": ""}


SETUP = """
import sys
import django
django.setup()
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
user = get_user_model().objects.create_user("bench-uploader", "uploader@example.org", "x" * 16)
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
print(Token.objects.create(user=user).key)
"""


def prepare_site(work: Path) -> tuple[dict, str, str]:
    """A migrated site with the dev tasks imported and a verified researcher: (env, token, a task key)."""
    env = site_env(work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    manage = [sys.executable, "manage.py"]
    data = REPO / "var" / "benchmark" / "dev" / "data.jsonl"
    for command in (["migrate", "--noinput", "-v0"], ["collectstatic", "--noinput", "-v0"],
                    ["import_tasks", str(data), "--split", "dev", "--task-set", "sample"]):
        done = subprocess.run(manage + command, cwd=REPO, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"manage.py {command[0]} failed: {done.stderr.strip()[-800:]}")
    token = subprocess.run([sys.executable, "-c", SETUP], cwd=REPO, env=env, check=True, capture_output=True,
                           text=True).stdout.strip().splitlines()[-1]
    key = json.loads(data.read_text().splitlines()[0])["id"]
    return env, token, key


def make_body(work: Path, key: str, megabytes: int) -> tuple[Path, str]:
    """A multipart body on disk (the form's fields and a stored zip of ``megabytes`` MB); its boundary."""
    bundle = work / f"bundle-{megabytes}.zip"
    with zipfile.ZipFile(bundle, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{key}/index.html", "<!doctype html><html><body><p>page</p></body></html>")
        left = megabytes * 2**20 - 64 * 1024  # room for the zip's own records: under the 200 MB limit
        for part in range(0, left, ASSET_BYTES):  # assets of at most 16 MB (the limit per file is 20 MB)
            with archive.open(f"{key}/assets/noise-{part // ASSET_BYTES:03d}.bin", "w") as blob:
                blob.write(os.urandom(min(ASSET_BYTES, left - part)))
    boundary = "bench" + secrets.token_hex(12)
    body = work / f"body-{megabytes}.bin"
    fields = {"split": "dev", "protocol": "iwr-det", "model_name": f"Memory-{megabytes}MB", "public": "off"}
    with body.open("wb") as out:
        for name, value in fields.items():
            out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="bundle.zip"\r\n'
                  f"Content-Type: application/zip\r\n\r\n".encode())
        with bundle.open("rb") as source:
            shutil.copyfileobj(source, out, 2**20)
        out.write(f"\r\n--{boundary}--\r\n".encode())
    bundle.unlink()
    return body, boundary


def serve(env: dict, port: int) -> subprocess.Popen:
    server = subprocess.Popen([str(REPO / ".venv" / "bin" / "gunicorn"), "leaderboard.wsgi", "--bind",
                               f"127.0.0.1:{port}", "--workers", "1", "--timeout", "600",
                               "--access-logfile", "/dev/null", "--log-level", "warning"],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the site did not start")


def upload_run(env: dict, token: str, body: Path, boundary: str, port: int, interval: float) -> dict:
    server = serve(env, port)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        connection.request("GET", "/")  # the worker loads its views and templates, as a serving one has
        connection.getresponse().read()
        idle = Sampler(server.pid, interval)
        idle.sample()
        sampler = Sampler(server.pid, interval)
        sampler.start()
        started = time.monotonic()
        with body.open("rb") as stream:
            connection.request("POST", "/api/v1/submissions/", body=stream, headers={
                "Authorization": f"Token {token}", "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Content-Length": str(body.stat().st_size), "X-Forwarded-Proto": "https"})
            response = connection.getresponse()
            answer = response.read()
        seconds = time.monotonic() - started
        peak = sampler.stop()
    finally:
        server.terminate()
        server.wait(30)
    if response.status != 201:
        raise SystemExit(f"the upload answered {response.status}: {answer[:500]!r}")
    return {**peak, "idle_rss_mb": round(idle.peak_rss / 2**20, 1), "idle_pss_mb": round(idle.peak_pss / 2**20, 1),
            "seconds": round(seconds, 1)}


# --------------------------------------------------------------------------- report


def medians(runs: list[dict]) -> dict:
    return {name: statistics.median(run[name] for run in runs) for name in runs[0] if name != "processes"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="20,200", help="bundle sizes to upload, MB")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between samples")
    parser.add_argument("--port", type=int, default=8896)
    parser.add_argument("--skip-scoring", action="store_true")
    parser.add_argument("--skip-upload", action="store_true")
    parser.add_argument("--workers", default="",
                        help="comma-separated scoring worker counts to measure each (default: the evaluator's default)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    report = {"command": "bench/memory/run.py " + " ".join(sys.argv[1:]), "load_avg_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="iwr-memory-") as folder:
        work = Path(folder)
        if not args.skip_upload:
            env, token, key = prepare_site(work)
            report["upload"] = {}
            for megabytes in (int(size) for size in args.sizes.split(",")):
                body, boundary = make_body(work, key, megabytes)
                runs = [upload_run(env, token, body, boundary, args.port, args.interval) for _ in range(args.runs)]
                body.unlink()
                report["upload"][f"{megabytes} MB"] = {"median": medians(runs), "runs": runs}
                print(f"upload {megabytes:>4} MB (medians of {args.runs}): {medians(runs)}")
        if not args.skip_scoring:
            counts = [int(n) for n in args.workers.split(",") if n.strip()] or [None]
            runs: dict = {count: [] for count in counts}
            for _ in range(args.runs):  # the counts alternate, so a change in load hits every count
                for count in counts:
                    runs[count].append(scoring_run(work, args.interval, count))
            report["scoring"] = {}
            for count, measured in runs.items():
                label = f"{count} workers" if count else "default workers"
                report["scoring"][label] = {"median": medians(measured), "runs": measured}
                print(f"scoring job, dev split, reference pages, {label} (medians of {args.runs}): "
                      f"{medians(measured)}")
    report["load_avg_after"] = os.getloadavg()
    print(f"load average before {report['load_avg_before']}, after {report['load_avg_after']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

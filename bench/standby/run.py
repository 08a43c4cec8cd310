"""What the evaluator on standby saves per job: a cold ``score`` against ``score --standby``, alternating.

    .venv/bin/python bench/standby/run.py [--rounds 5] [--tasks K1,K2] [--workers N] [--idle 10] [--out DIR]

A site's scoring worker starts the next job's evaluator while it is idle (leaderboard/worker/standby.py).
Per round this runs the same job twice, as whole processes, in the bubblewrap sandbox, on the sample's
reference pages (`var/benchmark/dev`, built by scripts/setup.sh):

- **cold**: ``python -m evaluator score --data ... --bundle ...``, timed from its start to its end;
- **standby**: ``python -m evaluator score --standby FOLDER``, left idle for ``--idle`` seconds (the
  worker's wait for its next claim), then timed from the job line on its standard input to its end.

The reference OCR cache is filled by an untimed first run. Reports the median of each, the saving per
job and the load average; both runs' scores must be identical (checked, else the run fails).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "var" / "benchmark" / "dev"
DEFAULT_TASKS = "2048-first-moves,todomvc-vanillajs-list"
MEMORY: list[dict] = []  # each waiting standby's process tree, just before its job line
sys.path.insert(0, str(ROOT))
from tests.evaluator.standby_support import reference_job_folder, timeless_results  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task ids of the dev split")
    parser.add_argument("--workers", type=int, default=None, help="evaluator workers (default: two per usable core)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds the standby waits before its job")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not (SAMPLE / "data.jsonl").is_file():
        raise SystemExit("the sample benchmark is not built: run scripts/setup.sh")
    work = args.out or Path(tempfile.mkdtemp(prefix="iwr-bench-standby-", dir="/var/tmp"))
    folder = standby_folder(work / "inputs", args.tasks.split(","))
    ocr = work / "ocr-cache"
    options = ["--no-video", "--ocr-cache", str(ocr), *(["--workers", str(args.workers)] if args.workers else [])]
    cold(folder, args.tasks, work / "warm-up", options)  # untimed: reads the reference checkpoints once
    rounds = []
    for n in range(args.rounds):
        cold_s, cold_out = cold(folder, args.tasks, work / f"cold-{n}", options)
        warm_s, warm_out = standby(folder, args.tasks, work / f"standby-{n}", options, args.idle)
        if timeless_results(cold_out)["tasks"] != timeless_results(warm_out)["tasks"]:
            raise SystemExit(f"round {n}: the standby's scores differ from the cold start's ({cold_out}, {warm_out})")
        rounds.append({"cold_s": cold_s, "standby_s": warm_s, "load": os.getloadavg()[0]})
        print(f"round {n}: cold {cold_s:.2f} s, standby {warm_s:.2f} s, load {rounds[-1]['load']:.1f}", flush=True)
    report = {"command": " ".join(sys.argv), "tasks": args.tasks, "workers": args.workers, "idle_s": args.idle,
              "rounds": rounds, "cold_median_s": statistics.median(r["cold_s"] for r in rounds),
              "standby_median_s": statistics.median(r["standby_s"] for r in rounds)}
    report["saved_per_job_s"] = report["cold_median_s"] - report["standby_median_s"]
    report["idle_standby"] = MEMORY
    report["idle_standby_pss_median_mb"] = statistics.median(m["pss_mb"] for m in MEMORY)
    report["idle_standby_rss_median_mb"] = statistics.median(m["rss_mb"] for m in MEMORY)
    report["paired_saving_median_s"] = statistics.median(r["cold_s"] - r["standby_s"] for r in rounds)
    (work / "bench.json").write_text(json.dumps(report, indent=1))
    loads = [r["load"] for r in rounds]
    n_tasks = len(args.tasks.split(","))
    print(f"\njob of {n_tasks} task(s), {args.rounds} rounds, load {min(loads):.1f}-{max(loads):.1f}")
    print(f"cold start  median {report['cold_median_s']:.2f} s")
    print(f"standby     median {report['standby_median_s']:.2f} s (from the job line, after {args.idle:.0f} s idle)")
    print(f"saved per job: {report['saved_per_job_s']:.2f} s (median of the paired differences "
          f"{report['paired_saving_median_s']:.2f} s); {work / 'bench.json'}")
    print(f"a waiting standby holds {report['idle_standby_rss_median_mb']:.0f} MB RSS / "
          f"{report['idle_standby_pss_median_mb']:.0f} MB PSS ({MEMORY[0]['processes']} processes, median)")
    return 0


def standby_folder(root: Path, keys: list[str]) -> Path:
    """The dev tasks and their reference pages as a bundle, in one folder (a standby reads only that)."""
    shutil.rmtree(root, ignore_errors=True)
    return reference_job_folder(root, keys)


def cold(folder: Path, tasks: str, out: Path, options: list[str]) -> tuple[float, Path]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "evaluator", "score", "--data", str(folder / "dev" / "data.jsonl"),
                           "--bundle", str(folder / "bundle"), "--tasks", tasks, "--out", str(out), *options],
                          cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"cold run failed: {done.stderr[-2000:]}")
    return elapsed, out


def standby(folder: Path, tasks: str, out: Path, options: list[str], idle: float) -> tuple[float, Path]:
    process = subprocess.Popen([sys.executable, "-m", "evaluator", "score", "--standby", str(folder),
                                "--out", str(out), *options], cwd=ROOT, text=True, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(idle)
    MEMORY.append(idle_memory_mb(process.pid))
    line = json.dumps({"data": str(folder / "dev" / "data.jsonl"), "bundle": str(folder / "bundle"), "tasks": tasks})
    started = time.monotonic()
    _out, err = process.communicate(line + "\n")
    elapsed = time.monotonic() - started
    if process.returncode != 0:
        raise SystemExit(f"standby run failed: {err[-2000:]}")
    return elapsed, out


def idle_memory_mb(pid: int) -> dict:
    """What a waiting standby holds: its whole process tree's resident and proportional sizes."""
    from evaluator.browser import process_descendants, rss_bytes
    from evaluator.sandbox import tree_memory_bytes

    pids = [pid, *process_descendants(pid)]
    return {"processes": len(pids), "rss_mb": round(sum(rss_bytes(p) for p in pids) / 2**20, 1),
            "pss_mb": round(tree_memory_bytes(pid) / 2**20, 1)}


if __name__ == "__main__":
    raise SystemExit(main())

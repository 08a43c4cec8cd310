"""Do scores repeat on a busy machine? Score the reference pages several times beside CPU-bound processes.

    .venv/bin/python bench/repeat/run.py [--split dev|test|both] [--tasks K1,K2] [--protocol P]
        [--runs 3] [--burners 2] [--workers 1] [--json FILE] [--benchmark DIR]

Issue 14's repeatability proof: three runs of the same pages with two CPU-bound processes beside the
job must give identical results for every task. Each run is a whole ``python -m evaluator score``
(no video, a fresh OCR cache per run so no run reads another's readings) while ``--burners``
processes spin at full speed on the same cores; every task's per-step verdicts (executed, passed,
assertion verdict, reason) and its IFS, VFS and Final are compared across runs, bit for bit. The
report names each task that differs and where (the first step, or the score that moved), prints the
load average, and exits 1 when any task differs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: the evaluator package is the checkout's
BENCHMARK = REPO / "var" / "benchmark"


def burn(stop) -> None:
    """One CPU-bound process: arithmetic until told to stop."""
    value = 0
    while not stop.is_set():
        for _ in range(200_000):
            value = (value * 1103515245 + 12345) & 0x7FFFFFFF


def evaluator(*args: str) -> None:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    proc = subprocess.run([sys.executable, "-m", "evaluator", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"evaluator {args[0]} exited {proc.returncode}:\n{proc.stderr[-3000:]}")


def sandbox_args() -> list[str]:
    from evaluator.sandbox import bubblewrap_problem

    return [] if bubblewrap_problem() is None else ["--sandbox", "none", "--allow-unsandboxed"]


def fingerprint(task: dict) -> dict:
    """What must repeat: each step's verdict and reason, and the task's scores."""
    steps = [{"index": step.get("index"), "executed": step.get("executed"), "passed": step.get("passed"),
              "assertion": (step.get("assertion") or {}).get("passed"), "reason": step.get("reason") or ""}
             for step in task.get("steps", [])]
    visual = {str(step.get("index")): [step["visual"].get("low_level"), step["visual"].get("high_level")]
              for step in task.get("steps", [])
              if isinstance(step.get("visual"), dict) and "low_level" in step["visual"]}
    return {"steps": steps, "ifs": task.get("ifs"), "vfs": task.get("vfs"), "final": task.get("final"),
            "error": task.get("error"), "visual": visual}


def difference(runs: list[dict]) -> str:
    """Where the runs of one task part ways (empty when identical)."""
    first = runs[0]
    for other in runs[1:]:
        if other == first:
            continue
        for a, b in zip(first["steps"], other["steps"], strict=False):
            if a != b:
                return f"step {a['index']}: {a} vs {b}"
        if len(first["steps"]) != len(other["steps"]):
            return f"{len(first['steps'])} vs {len(other['steps'])} steps"
        moved = [f"{name} {first[name]!r} vs {other[name]!r}" for name in ("ifs", "vfs", "final", "error")
                 if first[name] != other[name]]
        moved += [f"checkpoint {k} {v!r} vs {other['visual'].get(k)!r}" for k, v in first["visual"].items()
                  if other["visual"].get(k) != v]
        return "; ".join(moved)
    return ""


def splits(choice: str) -> list[str]:
    return ["dev", "test"] if choice == "both" else [choice]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--tasks", default="", help="comma-separated task ids (default: every task of the split)")
    parser.add_argument("--protocol", default=None, help="scoring protocol (default: the evaluator's default)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside every run")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write every run's fingerprints here")
    parser.add_argument("--benchmark", type=Path, default=BENCHMARK, help="the built sample benchmark")
    args = parser.parse_args(argv)
    benchmark = args.benchmark.resolve()
    if not (benchmark / "dev" / "data.jsonl").is_file():
        raise SystemExit(f"{benchmark} is not built: run scripts/setup.sh")
    wanted = {key.strip() for key in args.tasks.split(",") if key.strip()}
    by_task: dict[str, list[dict]] = {}
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,), daemon=True) for _ in range(args.burners)]
    for process in burners:
        process.start()
    loads = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="iwr-repeat-") as tmp:
            work = Path(tmp)
            for split in splits(args.split):
                data = benchmark / split / "data.jsonl"
                keys = [json.loads(line)["id"] for line in data.read_text().splitlines() if line.strip()]
                keys = [str(key) for key in keys if not wanted or str(key) in wanted]
                if not keys:
                    continue
                evaluator("baselines", "--data", str(data), "--out", str(work / split / "bundles"),
                          "--kinds", "reference")
                for run in range(args.runs):
                    out = work / split / f"run-{run}"
                    command = ["score", "--data", str(data), "--bundle", str(work / split / "bundles" / "reference"),
                               "--out", str(out), "--tasks", ",".join(keys), "--workers", str(args.workers),
                               "--no-video", "--ocr-cache", str(work / split / f"ocr-{run}"), *sandbox_args()]
                    if args.protocol:
                        command += ["--protocol", args.protocol]
                    evaluator(*command)
                    loads.append(os.getloadavg()[0])
                    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
                    for key, task in results["tasks"].items():
                        by_task.setdefault(key, []).append(fingerprint(task))
                    print(f"{split} run {run + 1}/{args.runs}: {len(results['tasks'])} tasks, "
                          f"load {loads[-1]:.1f}", file=sys.stderr)
    finally:
        stop.set()
        for process in burners:
            process.join(timeout=5)
    differing = {key: difference(runs) for key, runs in sorted(by_task.items()) if difference(runs)}
    print(f"{len(by_task)} tasks x {args.runs} runs beside {args.burners} CPU-bound processes, "
          f"{time.monotonic() - started:.0f} s, load {min(loads, default=0):.1f}-{max(loads, default=0):.1f}")
    print(f"identical in every run: {len(by_task) - len(differing)} / {len(by_task)}")
    for key, where in differing.items():
        print(f"  DIFFERS {key}: {where}")
    if args.json:
        args.json.write_text(json.dumps({"tasks": by_task, "differing": differing}, indent=1))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

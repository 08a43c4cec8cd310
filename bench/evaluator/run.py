"""Evaluator benchmark: seconds per action scoring the whole sample benchmark, against the floor and a naive harness.

The three harnesses replay the original (reference) pages of every task of every split of the
sample benchmark. Each measurement is one whole process per split (start-up, imports, browsers
and OCR included), taken ``--rounds`` times with the harnesses alternating so that a change in
machine load hits all three; the fastest round counts (``--median`` for the median round).

    python bench/evaluator/run.py [--rounds 3] [--median] [--workers N] [--video] [--cold-ocr] [--out DIR]

- evaluator: ``python -m evaluator score --no-video`` (bubblewrap sandbox, ``--workers``,
  default two per usable core, evaluator/capacity.py), as the leaderboard runs it: with
  ``--ocr-cache``, so the reference checkpoints' OCR, the same for every submission, is read
  once (an untimed first run per split) and kept; ``--cold-ocr`` measures without it (every run reads every screenshot).
- floor: ``bench/evaluator/floor.py``: only what any judge must do, in the same browser with the
  same number of workers: per task a fresh context and the page loaded offline; per action, the
  action by its known selector, one animation frame, a viewport screenshot.
- naive: ``bench/evaluator/naive.py``: a new browser per task, fixed 1 s / 0.5 s waits, one
  task after another, the evaluator's own metrics.

Seconds per action = wall time / actions replayed. Prints a table (overall and per task), the evaluator's
profile (``score --profile``: its phases per action) and each harness's CPU seconds by kind of process
(bench/evaluator/cpu.py: with two workers per core the runs are CPU-bound), and writes OUT/bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run as a script from anywhere

from bench.evaluator.cpu import run_measured  # noqa: E402
from evaluator.capacity import default_workers  # noqa: E402  (what the evaluator and the floor run)

NAIVE = Path(__file__).resolve().parent / "naive.py"
FLOOR = Path(__file__).resolve().parent / "floor.py"
SPLITS = ("dev", "test")
HARNESSES = ("evaluator", "floor", "naive")
TARGET_FLOOR_RATIO = 1.25  # evaluator / floor, at most
TARGET_SPEEDUP = 5.0  # naive / evaluator, at least
NOT_RUN = "task time limit reached"  # the evaluator records an action it never started this way


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    load_at_start = os.getloadavg()
    out = args.out or Path(tempfile.mkdtemp(prefix="iwr-bench-evaluator-"))
    splits = _splits(args.benchmark)
    bundles = {split: _reference_bundle(data, out / "bundles" / split) for split, data in splits.items()}
    args.ocr_cache = None if args.cold_ocr else out / "ocr-cache"
    if args.ocr_cache:
        _measure("evaluator", splits, bundles, out / "warm-up", args)  # untimed: reads the references once
    rounds = []
    for n in range(1, args.rounds + 1):
        measured = {harness: _measure(harness, splits, bundles, out / f"round{n}", args) for harness in HARNESSES}
        rounds.append({**measured, "load_avg": os.getloadavg()})
        print(f"round {n}: " + ", ".join(f"{h} {m['seconds']:.1f} s" for h, m in measured.items())
              + f", load average {os.getloadavg()[0]:.2f}", flush=True)
    report = _report(rounds, args)
    report["machine"]["load_avg_at_start"] = load_at_start
    (out / "bench.json").write_text(json.dumps(report, indent=1))
    _print(report, out)
    return 0


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="whole-process runs of each harness")
    parser.add_argument("--median", action="store_true", help="report the median round, not the fastest")
    parser.add_argument("--workers", type=int, default=None, help="evaluator workers (default: two per usable core)")
    parser.add_argument("--video", action="store_true", help="let the evaluator record replay videos too")
    parser.add_argument("--cold-ocr", action="store_true",
                        help="no reference OCR cache between runs: every run reads every screenshot")
    parser.add_argument("--benchmark", type=Path, default=REPO / "var" / "benchmark", help="built sample benchmark")
    parser.add_argument("--out", type=Path, default=None, help="working folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def _splits(benchmark: Path) -> dict[str, Path]:
    splits = {split: benchmark / split / "data.jsonl" for split in SPLITS}
    missing = [str(p) for p in splits.values() if not p.is_file()]
    if missing:
        raise SystemExit(f"error: sample benchmark not built ({', '.join(missing)}): run scripts/setup.sh")
    return splits


def _reference_bundle(data: Path, out: Path) -> Path:
    """The split's original pages as a bundle (``evaluator baselines --kinds reference``)."""
    _run([sys.executable, "-m", "evaluator", "baselines", "--data", str(data), "--out", str(out),
          "--kinds", "reference"])
    return out / "reference"


def _measure(harness: str, splits: dict, bundles: dict, out: Path, args) -> dict:
    """One whole-process run per split; seconds, actions and scores summed over the splits."""
    seconds, actions, finals, per_split, per_task, engine, cpu = 0.0, 0, [], {}, {}, None, None
    profiles: dict[str, dict] = {}
    for split, data in splits.items():
        target = out / harness / split
        shutil.rmtree(target, ignore_errors=True)
        started, started_epoch = time.monotonic(), time.time()
        used = _run(_command(harness, data, bundles[split], target, args), measure_cpu=True)
        cpu = _add_cpu(cpu, used)
        elapsed, ended_epoch = time.monotonic() - started, time.time()
        results = json.loads((target / "results.json").read_text())
        if harness == "evaluator":
            profiles[split] = _split_profile(target, started_epoch, ended_epoch)
        n = sum(_actions_run(task) for task in results["tasks"].values())
        seconds, actions = seconds + elapsed, actions + n
        finals += [task["final"] for task in results["tasks"].values() if "final" in task]
        per_split[split] = {"seconds": round(elapsed, 2), "actions": n}
        stopped = {key: task["failed"] for key, task in results["tasks"].items() if task.get("failed")}
        if stopped:  # the floor's tasks stop at an action they could not carry out (bench/evaluator/floor.py)
            per_split[split]["failed"] = stopped
            print(f"{harness} {split}: stopped early: {stopped}", file=sys.stderr)
        per_task.update({key: round(task["elapsed_s"] / max(_actions_run(task), 1), 4)
                         for key, task in results["tasks"].items() if "elapsed_s" in task})
        engine = results.get("ocr_engine", engine)
    measured = {"seconds": seconds, "actions": actions, "s_per_action": seconds / max(actions, 1),
                "mean_final": statistics.fmean(finals) if finals else None, "splits": per_split,
                "task_s_per_action": per_task, "ocr_engine": engine,
                "task_seconds": round(sum(_task_seconds(out / harness / split) for split in splits), 3),
                "cpu_s": cpu}
    if profiles:
        measured["profile"] = _profile(profiles, actions)
    return measured


def _add_cpu(total: dict | None, used: dict) -> dict:
    """CPU seconds of two runs together (the splits of one harness)."""
    if total is None:
        return used
    kinds = set(total["by_kind"]) | set(used["by_kind"])
    return {"total": round(total["total"] + used["total"], 2),
            "by_kind": {k: round(total["by_kind"].get(k, 0.0) + used["by_kind"].get(k, 0.0), 2) for k in sorted(kinds)}}


def _task_seconds(target: Path) -> float:
    """The tasks' own time, summed over the workers (a fresh context, the page, every action)."""
    results = json.loads((target / "results.json").read_text())
    return sum(float(task.get("elapsed_s") or 0.0) for task in results["tasks"].values())


def _split_profile(target: Path, started: float, ended: float) -> dict:
    """The evaluator's phases summed over a split's tasks (``score --profile``), and the process's start-up
    (its start to the first task's) and shutdown (the last task's end to its exit)."""
    profiles = [json.loads(path.read_text()) for path in sorted(target.glob("tasks/*/profile.json"))]
    phases: dict[str, float] = {}
    for profile in profiles:
        for name, ms in profile["phases_ms"].items():
            phases[name] = phases.get(name, 0.0) + ms
    first = min((p["started"] for p in profiles), default=started)
    last = max((p["ended"] for p in profiles), default=ended)
    return {"phases_ms": phases, "startup_s": first - started, "shutdown_s": ended - last}


def _profile(profiles: dict[str, dict], actions: int) -> dict:
    """Milliseconds per replayed action of every phase, summed over the workers; start-up and shutdown per job."""
    names = sorted({name for p in profiles.values() for name in p["phases_ms"]})
    per_action = {name: round(sum(p["phases_ms"].get(name, 0.0) for p in profiles.values()) / max(actions, 1), 2)
                  for name in names}
    return {"ms_per_action": per_action,
            "startup_s": {split: round(p["startup_s"], 3) for split, p in profiles.items()},
            "shutdown_s": {split: round(p["shutdown_s"], 3) for split, p in profiles.items()}}


def _command(harness: str, data: Path, bundle: Path, out: Path, args) -> list[str]:
    if harness == "naive":
        return [sys.executable, str(NAIVE), "--data", str(data), "--bundle", str(bundle), "--out", str(out)]
    if harness == "floor":
        workers = ["--workers", str(args.workers)] if args.workers else []
        return [sys.executable, str(FLOOR), "--data", str(data), "--bundle", str(bundle), "--out", str(out), *workers]
    command = [sys.executable, "-m", "evaluator", "score", "--data", str(data), "--bundle", str(bundle),
               "--out", str(out), "--profile"]
    if args.workers:
        command += ["--workers", str(args.workers)]
    if not args.video:
        command.append("--no-video")
    if args.ocr_cache:
        command += ["--ocr-cache", str(args.ocr_cache)]
    return command


def _actions_run(task: dict) -> int:
    """Actions the harness carried out on the task (the failing one included)."""
    if "actions_run" in task:
        return task["actions_run"]
    return sum(1 for step in task["steps"]
               if step.get("index", 0) > 0 and not str(step.get("reason", "")).startswith(NOT_RUN))


def _run(command: list[str], measure_cpu: bool = False) -> dict | None:
    """Run a harness; with ``measure_cpu`` its whole process tree's CPU seconds (bench/evaluator/cpu.py)."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    if measure_cpu:
        proc, cpu = run_measured(command, cwd=REPO, env=env)
    else:
        proc, cpu = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True), None
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(command[1:4])} exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
    return cpu


def _report(rounds: list[dict], args) -> dict:
    pick = _median_round if args.median else _fastest_round
    chosen = {h: pick([r[h] for r in rounds]) for h in HARNESSES}
    floor_ratio = chosen["evaluator"]["seconds"] / chosen["floor"]["seconds"]
    speedup = chosen["naive"]["seconds"] / chosen["evaluator"]["seconds"]
    return {
        "command": "python bench/evaluator/run.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()},
        "workers": args.workers or default_workers(), "video": args.video, "reference_ocr_cache": not args.cold_ocr,
        "round_chosen": "median" if args.median else "fastest",
        "rounds": rounds, "chosen": chosen,
        "floor_ratio": floor_ratio, "speedup": speedup,
        "targets": {"floor_ratio_max": TARGET_FLOOR_RATIO, "speedup_min": TARGET_SPEEDUP,
                    "floor_ratio_met": floor_ratio <= TARGET_FLOOR_RATIO, "speedup_met": speedup >= TARGET_SPEEDUP},
    }


def _median_round(runs: list[dict]) -> dict:
    """The round with the median wall time (its actions and scores stay consistent with it)."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return ordered[(len(ordered) - 1) // 2]


def _fastest_round(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["seconds"])


def _print(report: dict, out: Path) -> None:
    rows = [("harness", f"s ({report['round_chosen']})", "actions", "s/action", "mean Final")]
    for harness, m in report["chosen"].items():
        final = "-" if m["mean_final"] is None else f"{m['mean_final']:.3f}"
        rows.append((harness, f"{m['seconds']:.1f}", str(m["actions"]), f"{m['s_per_action']:.3f}", final))
    for row in rows:
        print(f"{row[0]:<10} {row[1]:>13} {row[2]:>8} {row[3]:>9} {row[4]:>11}")
    print("per task, s/action (evaluator / floor / naive):")
    chosen = report["chosen"]
    for key in sorted(chosen["evaluator"]["task_s_per_action"]):
        values = [chosen[h]["task_s_per_action"].get(key) for h in HARNESSES]
        print(f"  {key:<36} " + " / ".join("-" if v is None else f"{v:.3f}" for v in values))
    targets = report["targets"]
    met = {key: "met" if targets[key] else "NOT met" for key in ("floor_ratio_met", "speedup_met")}
    print(f"evaluator / floor {report['floor_ratio']:.2f}x (target <= {TARGET_FLOOR_RATIO:g}x: "
          f"{met['floor_ratio_met']}); naive / evaluator {report['speedup']:.2f}x (target >= {TARGET_SPEEDUP:g}x: "
          f"{met['speedup_met']}); load average {report['machine']['load_avg_at_start'][0]:.2f} at the start, "
          f"{report['machine']['load_avg'][0]:.2f} at the end; details in {out / 'bench.json'}")
    _print_profile(chosen)
    _print_cpu(chosen)
    ocr = "kept between runs" if report["reference_ocr_cache"] else "none (--cold-ocr)"
    print(f"OCR engine: {chosen['evaluator']['ocr_engine']}; reference OCR cache: {ocr}")


def _print_profile(chosen: dict) -> None:
    """Where the evaluator's time goes, per action, beside the floor's own task time per action."""
    profile = chosen["evaluator"].get("profile")
    if not profile:
        return
    actions = {h: max(chosen[h]["actions"], 1) for h in ("evaluator", "floor")}
    own = {h: 1000 * chosen[h]["task_seconds"] / actions[h] for h in ("evaluator", "floor")}
    print(f"profile, ms per action summed over the workers: the evaluator's tasks {own['evaluator']:.0f} "
          f"(the floor's {own['floor']:.0f}, {own['evaluator'] - own['floor']:+.0f}):")
    for name, ms in sorted(profile["ms_per_action"].items(), key=lambda item: -item[1]):
        note = " (background thread, overlaps the rest)" if name == "visual" else ""
        print(f"  {name:<20} {ms:7.1f}{note}")
    print("  start-up per job (s): " + ", ".join(f"{k} {v:.2f}" for k, v in profile["startup_s"].items())
          + "; shutdown per job (s): " + ", ".join(f"{k} {v:.2f}" for k, v in profile["shutdown_s"].items()))


def _print_cpu(chosen: dict) -> None:
    """CPU seconds of each harness's whole process tree, by kind of process, beside its wall time."""
    print("CPU seconds, whole process tree (both splits; by kind, read from /proc every 0.2 s):")
    for harness, m in chosen.items():
        cpu = m.get("cpu_s")
        if not cpu:
            continue
        kinds = ", ".join(f"{kind} {s:.1f}" for kind, s in sorted(cpu["by_kind"].items(), key=lambda kv: -kv[1]))
        print(f"  {harness:<10} {cpu['total']:6.1f} in {m['seconds']:.1f} s wall "
              f"({cpu['total'] / max(m['seconds'], 1e-9):.2f} cores busy): {kinds}")


if __name__ == "__main__":
    sys.exit(main())

"""Score the calibration corpus and print its figures per half (``python -m tests.evaluator.calibration.report``).

For every task of the chosen halves (halves.json): the baselines and calibration variants are
scored with the real evaluator (tests.evaluator.calibration.build), the step-level truth is
replayed by the builder (tests.evaluator.calibration.truth), and per half it prints the
relations that hold, each reference page's IFS and Final, the judge's step verdicts against
the truth as precision and recall of "step passed", and whether the snapshot, text-list and
broken pages stop exactly where the truth says. ``--json FILE`` writes the same figures.

    python -m tests.evaluator.calibration.report                      # both halves, every task
    python -m tests.evaluator.calibration.report --half tuning --json var/calibration.json
    python -m tests.evaluator.calibration.report --tasks mixitup-color-filter,owl-basic-carousel
    python -m tests.evaluator.calibration.report --half tuning --protocol iwr-det-17
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.evaluator.calibration import figures, halves


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    chosen = halves.HALF_NAMES if args.half == "both" else (args.half,)
    keys = [key for half in chosen for key in halves.half_tasks(half)]
    if args.tasks:
        wanted = [key.strip() for key in args.tasks.split(",") if key.strip()]
        unknown = sorted(set(wanted) - set(keys))
        if unknown:
            print(f"error: not in the chosen halves: {', '.join(unknown)}", file=sys.stderr)
            return 2
        keys = [key for key in keys if key in wanted]
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="iwr-calibration-"))
    started = time.monotonic()
    report = build_report(keys, workdir, log=lambda line: print(line, file=sys.stderr, flush=True),
                          protocol=args.protocol, truth_from=Path(args.truth_from) if args.truth_from else None)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    report["protocol"] = args.protocol or "default"
    print(render(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.evaluator.calibration.report",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--half", choices=[*halves.HALF_NAMES, "both"], default="both")
    parser.add_argument("--tasks", help="comma-separated task keys (default: every task of the halves)")
    parser.add_argument("--workdir", help="where bundles and scores are written (default: a new temporary folder)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--protocol", help="scoring protocol, e.g. iwr-det-17 (default: the evaluator's default)")
    parser.add_argument("--truth-from", help="take the step-level truth from an earlier --json report instead of "
                                             "replaying it (the truth is the builder's, whatever the judge)")
    return parser


def build_report(keys: list[str], workdir: Path, log=print, protocol: str | None = None,
                 truth_from: Path | None = None) -> dict:
    """Score ``keys`` under ``protocol`` (default: the evaluator's), replay their truth (or read it from
    ``truth_from``, an earlier report's JSON), and gather the figures per half."""
    from tests.evaluator.calibration.build import Workspace

    workspace = Workspace(workdir, keys=keys, protocol=protocol)
    log(f"scoring {len(keys)} tasks (baselines and variants) in {workdir}")
    table = workspace.scores()
    if truth_from is not None:
        earlier = json.loads(truth_from.read_text(encoding="utf-8"))["tasks"]
        missing = sorted(set(keys) - set(earlier))
        if missing:
            raise SystemExit(f"error: {truth_from} has no truth for {', '.join(missing)}")
        truth = {key: earlier[key]["truth"] for key in keys}
    else:
        log("replaying the step-level truth")
        truth = replay_truth(workspace, log)
    per_task = {key: task_figures(workspace, key, table[key], truth[key]) for key in keys}
    return {"halves": {half: summarize([per_task[k] for k in keys if halves.half_of(k) == half])
                       for half in halves.HALF_NAMES if any(halves.half_of(k) == half for k in keys)},
            "tasks": per_task}


def replay_truth(workspace, log) -> dict[str, dict[str, int | None]]:
    """task key -> variant -> first divergent step (None: the page does every step like the reference)."""
    from evaluator.browser import launch
    from tests.evaluator.calibration import truth
    from tests.evaluator.calibration.build import IMPLEMENTATION_PREFIX

    out: dict[str, dict[str, int | None]] = {}
    with launch() as browser:
        for task in workspace.dataset.tasks:
            script = _script(task.key)
            assets = Path(task.root) / "assets"
            reference = truth.replay_page(browser, Path(task.root) / "reference" / "site" / "index.html", assets,
                                          script)
            out[task.key] = {"reference": truth.first_divergence(reference, reference)}
            for variant, index in variant_pages(workspace, task.key).items():
                replay = truth.replay_page(browser, index, assets, script)
                same = not variant.startswith(IMPLEMENTATION_PREFIX)
                out[task.key][variant] = truth.first_divergence(reference, replay, same_document=same)
            log(f"  truth {task.key}: {out[task.key]}")
    return out


def variant_pages(workspace, key: str) -> dict[str, Path]:
    """variant name -> its page (index.html) for one task."""
    from tests.evaluator.calibration.build import DERIVED, implementation_variant
    from tests.evaluator.calibration.taskset import variant_key

    pages = {kind: workspace.baseline_bundles / kind / key / "index.html" for kind in ("snapshot", "empty")}
    bundle = workspace.variant_set.bundle
    for variant in DERIVED:
        pages[variant] = bundle / variant_key(key, variant) / "index.html"
    for example in workspace.variant_set.implementations.get(key, ()):
        name = implementation_variant(example)
        pages[name] = bundle / variant_key(key, name) / "index.html"
    return pages


def task_figures(workspace, key: str, row: dict, divergences: dict) -> dict:
    from tests.evaluator.calibration.build import implementation_variant
    from tests.evaluator.calibration.expectations import needs_scripts, scroll_allowance

    task = workspace.dataset.task(key)
    equivalents = [implementation_variant(e) for e in workspace.variant_set.implementations.get(key, ())]
    rel = figures.relations(row, equivalents, needs_scripts(task), scroll_allowance(task))
    n = len(task.actions)
    verdicts = figures.Verdicts()
    for variant, divergence in divergences.items():
        verdicts.add(figures.step_verdicts(key, variant, row[variant], divergence, n))
    stops = {v: figures.stops_where_truth_says(row[v], divergences[v], n) for v in figures.STOPPING}
    return {"task": key, "half": halves.half_of(key), "steps": n,
            "reference": {m: row["reference"][m] for m in ("ifs", "vfs", "final")},
            "relations": [{"relation": name, "held": held} for name, held in rel],
            "truth": divergences, "broken_at": workspace.variant_set.breaks[key].k,
            "judge_steps_passed": {v: r["steps_passed"] for v, r in row.items()},
            "stops_at_truth": stops,
            "verdicts": {"tp": verdicts.tp, "fp": verdicts.fp, "fn": verdicts.fn, "tn": verdicts.tn,
                         "misses": [list(m) for m in verdicts.misses]}}


def summarize(tasks: list[dict]) -> dict:
    held = sum(r["held"] for t in tasks for r in t["relations"])
    total = sum(len(t["relations"]) for t in tasks)
    counts = figures.Verdicts()
    for t in tasks:
        v = t["verdicts"]
        counts.add(figures.Verdicts(v["tp"], v["fp"], v["fn"], v["tn"]))
    stops = [ok for t in tasks for ok in t["stops_at_truth"].values()]
    refs = [t["reference"] for t in tasks]
    return {"tasks": len(tasks), "relations_held": held, "relations_total": total,
            "relations_rate": held / total if total else None,
            "reference_ifs_1": sum(r["ifs"] >= 1 - figures.EPS for r in refs),
            "reference_final_097": sum(r["final"] >= 0.97 for r in refs),
            "step_precision": counts.precision, "step_recall": counts.recall,
            "verdicts": {"tp": counts.tp, "fp": counts.fp, "fn": counts.fn, "tn": counts.tn},
            "stops_at_truth": sum(stops), "stops_total": len(stops)}


def render(report: dict) -> str:
    lines = []
    for half, s in report["halves"].items():
        lines.append(f"== {half}: {s['tasks']} tasks")
        lines.append(f"relations held: {s['relations_held']}/{s['relations_total']} ({_pct(s['relations_rate'])})")
        lines.append(f"reference pages with IFS 1.0: {s['reference_ifs_1']}/{s['tasks']}; "
                     f"with Final >= 0.97: {s['reference_final_097']}/{s['tasks']}")
        lines.append(f"step verdicts vs truth: precision {_num(s['step_precision'])}, recall {_num(s['step_recall'])} "
                     f"(tp {s['verdicts']['tp']}, fp {s['verdicts']['fp']}, fn {s['verdicts']['fn']}, "
                     f"tn {s['verdicts']['tn']})")
        lines.append(f"snapshot / text list / broken stop at the truth's step: "
                     f"{s['stops_at_truth']}/{s['stops_total']}")
        for t in (t for t in report["tasks"].values() if t["half"] == half):
            failed = [r["relation"] for r in t["relations"] if not r["held"]]
            ref = t["reference"]
            lines.append(f"  {t['task']:<28} IFS {ref['ifs']:.3f} Final {ref['final']:.3f}  "
                         f"relations {len(t['relations']) - len(failed)}/{len(t['relations'])}"
                         + (f"  failed: {'; '.join(failed)}" if failed else ""))
    return "\n".join(lines)


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _num(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _script(key: str):
    from evaluator.authoring import load_script
    from evaluator.sample.build import load_manifest

    for sample in load_manifest()[1]:
        if sample.script.stem == key:
            return load_script(sample.script)
    raise KeyError(f"{key} is not a sample task")


if __name__ == "__main__":
    sys.exit(main())

"""The floor: what any judge must do to replay a task, and nothing more.

In the evaluator's own browser (Debian's Chromium headless shell, the same launch flags and
offline routing) and with the same number of worker processes, per task: a fresh context, the
page loaded offline from the bundle and the task's assets (served as the evaluator serves them, asset
placeholders and all), a viewport screenshot; per action: perform it through the authoring script's known
selector (no element search, the evaluator's own waits for an element to take it), wait one animation frame,
take a viewport screenshot. No settle, no page-state reads, no assertion judge, no visual metrics, no OCR.
An action it cannot carry out stops that task (without a settle, a click may come while a menu still slides
in), as the evaluator stops at a failed step; the results say where. ``bench/evaluator/run.py`` measures the
evaluator against it.

    python bench/evaluator/floor.py --data var/benchmark/dev/data.jsonl --bundle BUNDLE_DIR --out OUT_DIR [--workers N]

Writes OUT/results.json: per task the actions carried out, the seconds taken and, where it stopped early, why.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run as a script from anywhere

from evaluator.agents.params import TargetingParams  # noqa: E402
from evaluator.capacity import default_workers  # noqa: E402  (the same default as the evaluator's)

# The evaluator's own waits for an element to take a click or text.
ACTION_WAITS = TargetingParams()

SCRIPTS = REPO / "evaluator" / "sample" / "tasks"
FRAME_JS = "() => new Promise(done => requestAnimationFrame(() => done()))"


def selectors(scripts: Path) -> dict[str, list[str | None]]:
    """Task id -> the known selector of each action (None where the action needs none)."""
    found = {}
    for path in sorted(scripts.glob("*.json")):
        script = json.loads(path.read_text())
        found[str(script["id"])] = [action.get("selector") for action in script["action_sequence"]]
    return found


def worker(jobs, results) -> None:
    """One worker process: one browser, tasks taken from the queue until it is empty."""
    from evaluator.browser import launch

    with launch(sandbox=True) as browser:
        for job in iter(jobs.get, None):
            results.put(replay(browser, job))


def replay(browser, job: dict) -> dict:
    """Replay one task's actions by selector; returns the actions carried out and the seconds."""
    from evaluator.agents.actions import SCROLL_JS
    from evaluator.bundle import read_page
    from evaluator.page_session import SiteMap, page_session

    shots = Path(job["shots"])
    shots.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # The page as the evaluator serves it: its asset placeholders pointed at the task's assets (a page loaded
    # as written asks for '__PLACEHOLDER_ASSETS_BASE_DIR__/...' and shows no image).
    page_file = Path(job["page"])
    site = SiteMap.for_page(page_file, Path(job["assets"]) if job["assets"] else None, index_text=read_page(page_file))
    done, failed = 0, None
    with page_session(browser, site, job["width"], job["height"], clock=None) as session:
        page = session.page
        page.screenshot(path=str(shots / "step_0.png"))
        for k, (action, selector) in enumerate(zip(job["actions"], job["selectors"], strict=True), 1):
            try:
                _perform(page, action, selector, SCROLL_JS)
            except Exception as exc:  # the task stops there, as the evaluator stops at a failed step; others go on
                failed = f"action {k}: {str(exc).strip().splitlines()[0][:200]}"
                break
            page.evaluate(FRAME_JS)
            page.screenshot(path=str(shots / f"step_{k}.png"))
            done += 1
    result = {"key": job["key"], "actions_run": done, "elapsed_s": round(time.monotonic() - started, 3)}
    if failed:
        result["failed"] = failed
    return result


def _perform(page, action: dict, selector: str | None, scroll_js: str) -> None:
    limits = ACTION_WAITS
    kind = action["type"]
    if kind == "Click":
        page.click(selector, timeout=limits.click_timeout_ms)
    elif kind == "Type":
        page.fill(selector, "", timeout=limits.type_timeout_ms)
        page.type(selector, action["text"] or "", timeout=limits.type_timeout_ms)
    elif kind == "Press":
        if selector:
            page.focus(selector, timeout=limits.type_timeout_ms)
        page.keyboard.press(action["key"])
    elif kind == "Scroll":
        page.evaluate(scroll_js % {"min": 5})


def _jobs(data: Path, bundle: Path, out: Path) -> list[dict]:
    from evaluator.dataset import load_dataset

    dataset, known = load_dataset(data), selectors(SCRIPTS)
    jobs = []
    for task in dataset.tasks:
        page = bundle / task.key / "index.html"
        if task.key not in known or not page.is_file():
            raise SystemExit(f"error: task {task.key}: no authoring script in {SCRIPTS} or no page in {bundle}")
        jobs.append({"key": task.key, "page": str(page), "assets": str(task.assets_dir) if task.assets_dir else None,
                     "width": task.width, "height": task.height, "selectors": known[task.key],
                     "actions": [{"type": a.type, "text": a.text, "key": a.key} for a in task.actions],
                     "shots": str(out / "tasks" / task.key)})
    return sorted(jobs, key=lambda job: -len(job["actions"]))  # longest first, as the evaluator orders them


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--bundle", required=True, type=Path, help="bundle folder (<id>/index.html)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes (default: the evaluator's own default, evaluator/capacity.py)")
    args = parser.parse_args(argv)
    jobs = _jobs(args.data, args.bundle, args.out)
    context = multiprocessing.get_context("spawn")
    jobs_queue, results_queue = context.Queue(), context.Queue()
    n_workers = max(1, min(args.workers or default_workers(), len(jobs)))
    for job in [*jobs, *[None] * n_workers]:
        jobs_queue.put(job)
    workers = [context.Process(target=worker, args=(jobs_queue, results_queue)) for _ in range(n_workers)]
    for process in workers:
        process.start()
    results = {}
    for _ in jobs:
        result = results_queue.get(timeout=600)
        results[result["key"]] = result
    for process in workers:
        process.join(timeout=60)
    if any(process.exitcode != 0 for process in workers):
        raise SystemExit("error: a floor worker failed: " + ", ".join(str(p.exitcode) for p in workers))
    args.out.mkdir(parents=True, exist_ok=True)
    document = {"harness": "floor", "tasks": results}
    (args.out / "results.json").write_text(json.dumps(document, indent=1))
    failed = {key: r["failed"] for key, r in results.items() if r.get("failed")}
    print(json.dumps({"tasks": len(results), "actions": sum(r["actions_run"] for r in results.values()),
                      "failed": failed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

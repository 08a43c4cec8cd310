"""A naive scoring harness: the evaluator's own metrics, driven the way the official code drives them.

It does the same work per task as ``python -m evaluator score`` (the same element finding,
actions, page-state capture, assertion judge, visual metrics and score formulas, imported
from ``evaluator``) but with the official harness's simple choices instead of ours:

- a new Chromium for every task (ours: one per worker, a fresh context per task);
- a fixed 1 s wait after load and 0.5 s after every action, real time (ours: settle on
  network quiet + animation frames + a short quiet period, with a paused, stepped clock);
- one task after another in one process, visual checkpoints scored after the replay
  (ours: parallel workers, checkpoints scored in the background while the browser goes on).

    python bench/evaluator/naive.py --data var/benchmark/dev/data.jsonl --bundle BUNDLE_DIR --out OUT_DIR

Writes OUT/results.json with the same task fields and summary as the evaluator.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run as a script from anywhere

LOAD_WAIT_MS = 1000  # the official harness sleeps 1 s after opening the page
ACTION_WAIT_MS = 500  # ... and 0.5 s after every action
TARGETED = ("Click", "Type")


def replay(task, page_path: Path, params: dict, numbering: str, shots: Path) -> dict:
    """Replay one task in its own browser and score it; returns the task result."""
    from evaluator.browser import launch
    from evaluator.bundle import read_page
    from evaluator.page_session import ORIGIN, SiteMap, page_session

    site = SiteMap.for_page(page_path, task.assets_dir, index_text=read_page(page_path))
    shots.mkdir(parents=True, exist_ok=True)
    with launch(sandbox=True) as browser, page_session(browser, site, task.width, task.height, clock=None,
                                                       url=None) as session:
        page = session.page
        page.goto(ORIGIN + "/", wait_until="load")
        page.wait_for_timeout(LOAD_WAIT_MS)
        state = _snapshot(page, shots / "step_0.png")
        reached, passed = [(0, state)], 0
        for k, action in enumerate(task.actions, 1):
            ok, state = _act(page, task, k, action, state, params, shots)
            if state is not None:
                reached.append((k, state))
            if not ok:
                break
            passed += 1
    return _score(task, passed, reached, params, numbering, shots)


def _act(page, task, k: int, action, before, params: dict, shots: Path):
    """One action: find, perform, fixed wait, screenshot, judge. Returns (passed, after-state or None)."""
    from evaluator.agents.actions import perform
    from evaluator.agents.targeting import find_target
    from evaluator.judges.assertion import judge
    from evaluator.judges.reference import reference_delta

    target = find_target(page, action, params) if action.type in TARGETED else None
    executed, _reason = perform(page, action, target, params)
    if not executed:
        return False, None
    page.wait_for_timeout(ACTION_WAIT_MS)
    after = _snapshot(page, shots / f"step_{k}.png")
    if not action.logical_assertion:
        return True, after
    verdict = judge(action, before, after, reference_delta(task, k, {}, params), params)
    return bool(verdict.passed), after


def _snapshot(page, path: Path):
    from evaluator.judges.state import capture_state

    page.screenshot(path=str(path), animations="disabled", caret="hide")
    return capture_state(page, screenshot=path)


def _score(task, passed: int, reached: list, params: dict, numbering: str, shots: Path) -> dict:
    """Visual checkpoints (screenshot 0 and the flagged steps reached), then the official formulas."""
    from evaluator.metrics.checkpoint import score_checkpoint
    from evaluator.scoring import task_score

    flagged = set(task.flagged_steps) | {0}
    checkpoints = []
    for k, state in reached:
        ref = task.checkpoint_for_step(k, numbering)
        if k not in flagged or ref is None or not Path(ref).is_file():
            continue
        ref_blocks = (task.load_reference(k) or {}).get("blocks")
        gen_blocks = state.blocks if ref_blocks is not None else None
        checkpoints.append(score_checkpoint(ref, shots / f"step_{k}.png", params.get("visual"),
                                            ref_blocks=ref_blocks, gen_blocks=gen_blocks))
    scores = task_score(passed, len(task.actions), checkpoints)
    return {**scores, "steps_passed": passed, "steps_total": len(task.actions),
            "actions_run": min(passed + 1, len(task.actions)), "error": None}


def score_all(data: Path, bundle: Path, out: Path) -> dict:
    """Score every task of ``data`` that has ``bundle/<key>/index.html``, one after another."""
    from evaluator.dataset import load_dataset
    from evaluator.protocols import get_protocol
    from evaluator.scoring import summarize

    dataset = load_dataset(data)
    params = get_protocol("iwr-det").params
    missing = [task.key for task in dataset.tasks if not (bundle / task.key / "index.html").is_file()]
    if missing:
        raise SystemExit(f"error: no page in {bundle} for task(s) {', '.join(missing)}")
    results = {}
    for task in dataset.tasks:
        page = bundle / task.key / "index.html"
        started = time.monotonic()
        results[task.key] = replay(task, page, params, dataset.numbering, out / "tasks" / task.key)
        results[task.key]["elapsed_s"] = round(time.monotonic() - started, 3)
    document = {"harness": "naive", "tasks": results, "summary": summarize(results, dataset.tasks)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(document, indent=1))
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="the task set's data.jsonl")
    parser.add_argument("--bundle", required=True, type=Path, help="bundle folder (<id>/index.html)")
    parser.add_argument("--out", required=True, type=Path, help="output folder")
    args = parser.parse_args(argv)
    for path, what in ((args.data, "--data"), (args.bundle, "--bundle")):
        if not path.exists():
            parser.error(f"{what} {path}: does not exist")
    summary = score_all(args.data, args.bundle, args.out)["summary"]
    print(json.dumps({k: summary.get(k) for k in ("final", "ifs", "vfs", "n_tasks")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

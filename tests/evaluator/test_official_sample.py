"""Protocol iwr-official on the sample benchmark: reference pages, a judge that answers as the truth says.

Three sample tasks' reference pages are scored by the score command with a scripted judge on a
local HTTP server (tests.evaluator.truth_judge): grounding picks the element the task's authoring
selector names, recorded on the reference page before the run; every assertion is answered Yes
but one No and one unparseable answer; the rubric is "Score: 80/100" at every checkpoint; the
visual models are the fixed stand-in (OCR and DINO similarity 1, so low level 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.authoring import load_script
from tests.evaluator.calibration.taskset import benchmark_splits, merge_task_sets
from tests.evaluator.truth_judge import MIN_OVERLAP, TruthJudge, overlap, record_truth, truth_index

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "evaluator" / "sample" / "tasks"
FIXED_MODELS = "tests.evaluator.fake_judge:FixedModels"
KEYS = ("todomvc-vanillajs-list", "mixitup-sort-by-date", "sb-admin-register-form")
# todomvc-vanillajs-list: action 4's assertion gets an unparseable answer, action 7's a No.
UNPARSEABLE = "'Walk the dog' is added to the list"
REFUSED = "'Buy milk' is crossed out as completed"
VERDICTS = {UNPARSEABLE: "Hard to say from these pictures.", REFUSED: '{"answer": "No"}'}
RUBRIC = "Score: 80/100"
EXPECTED = {  # task -> (IFS, VFS, Final), computed by hand in the test's docstring
    "todomvc-vanillajs-list": (0.545455, 0.9, 0.651818),  # IFS 6/11
    "mixitup-sort-by-date": (1.0, 0.9, 0.97),
    "sb-admin-register-form": (1.0, 0.9, 0.97),
}
CHECKPOINTS = {"todomvc-vanillajs-list": [0, 2, 4, 7], "mixitup-sort-by-date": [0, 1, 2],
               "sb-admin-register-form": [0, 2, 3, 5]}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    try:
        sources = benchmark_splits()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    from evaluator.baselines import build_baselines
    from evaluator.browser import launch
    from evaluator.dataset import load_dataset

    tmp_path = tmp_path_factory.mktemp("official-sample")
    data = merge_task_sets(sources, tmp_path / "set", list(KEYS))
    build_baselines(data, tmp_path / "bundles", ["reference"])
    truth = {}
    with launch() as browser:
        for task in load_dataset(data).tasks:
            record_truth(browser, load_script(TASKS / f"{task.key}.json"), task.root, truth)
    with TruthJudge(truth, VERDICTS, rubric=RUBRIC) as judge:
        proc = score(data, tmp_path / "bundles" / "reference", tmp_path, judge)
    results = tmp_path / "out" / "results.json"
    return {"proc": proc, "results": json.loads(results.read_text()) if results.is_file() else None,
            "judge": judge, "truth": truth}


def score(data: Path, bundle: Path, tmp_path: Path, judge: TruthJudge) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-sample-truth",
           "IWR_GENERATION_ALLOW_PLAIN_HTTP": "1", "IWR_OFFICIAL_VISUAL_FACTORY": FIXED_MODELS,
           **{k: v for k, v in os.environ.items() if k in ("IWR_CHROMIUM", "PLAYWRIGHT_BROWSERS_PATH")}}
    command = [sys.executable, "-m", "evaluator", "score", "--data", str(data), "--bundle", str(bundle),
               "--out", str(tmp_path / "out"), "--protocol", "iwr-official", "--judge-base-url", judge.base_url,
               "--judge-model", "judge-1", "--grounding-model", "grounder-1", "--judge-cache", str(tmp_path / "cache"),
               "--workers", "2", "--no-video", "--sandbox", "none", "--allow-unsandboxed"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)


def test_the_truthful_judge_gives_the_hand_computed_scores(scored):
    """Hand-computed from the script and each task's action list (protocol.md 3.4, evaluator.scoring).

    Every checkpoint scores low level (OCR 1 + DINO 1) / 2 = 1 and high level 80/100 = 0.8, so any
    task's VFS is 0.5 * 1 + 0.5 * 0.8 = 0.9 whatever checkpoints it reached; Final = 0.7 IFS + 0.3 VFS.

    todomvc-vanillajs-list, 11 actions: Type, Press (asserted: Yes), Type, Press (asserted: unparseable,
    a pass by the official quirk), Type, Press, Click the checkbox (asserted: No). Actions 1-6 pass,
    7 fails and the run stops: IFS 6/11 = 0.545455. Checkpoints: the initial screen and the flagged
    actions reached, 2, 4 and 7 (it was done, its assertion failed). Final 0.7 * 6/11 + 0.27 = 0.651818.
    mixitup-sort-by-date, 4 Clicks, assertions at 1 and 2 (Yes): IFS 1; checkpoints 0, 1, 2; Final 0.97.
    sb-admin-register-form, 5 Types, assertions at 1 and 3 (Yes): IFS 1; checkpoints 0, 2, 3, 5; Final 0.97.
    Mean Final (0.651818 + 0.97 + 0.97) / 3 = 0.863939; mean IFS (6/11 + 2) / 3 = 0.848485.
    """
    proc, results = scored["proc"], scored["results"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    tasks = results["tasks"]
    for key, (ifs, vfs, final) in EXPECTED.items():
        assert tasks[key]["error"] is None, tasks[key]["error"]
        got = (tasks[key]["ifs"], tasks[key]["vfs"], tasks[key]["final"])
        assert got == pytest.approx((ifs, vfs, final), abs=1e-6), key
    assert tasks["todomvc-vanillajs-list"]["steps_passed"] == 6
    assert results["summary"]["final"] == pytest.approx(0.863939, abs=1e-6)
    assert results["summary"]["ifs"] == pytest.approx(0.848485, abs=1e-6)
    assert results["protocol"] == "iwr-official-1"


def test_the_checkpoints_scored_are_the_initial_screen_and_the_flagged_actions_reached(scored):
    """Each task's visual scores come from exactly the checkpoints counted by hand, each 1 low and 0.8 high."""
    for key, expected in CHECKPOINTS.items():
        steps = scored["results"]["tasks"][key]["steps"]
        visual = {step["index"]: step["visual"] for step in steps if "mllm" in (step.get("visual") or {})}
        assert sorted(visual) == expected, key
        assert all(v["low_level"] == 1.0 and v["high_level"] == pytest.approx(0.8) for v in visual.values()), key


def test_every_grounded_action_acted_on_the_element_its_selector_names(scored):
    """Each Click and Type reached was grounded by index on the selector's element (label matching would
    take 'Password' for 'Repeat Password' and the 'Buy milk' label for its checkbox)."""
    truth = scored["truth"]
    for key in EXPECTED:
        actions = load_script(TASKS / f"{key}.json").actions
        for step in scored["results"]["tasks"][key]["steps"][1:]:
            action = actions[step["index"] - 1]
            if action.type not in ("Click", "Type"):
                continue
            assert step["judge"]["grounding"] == "index", (key, step["index"])
            box = tuple(step["target"]["box"])
            assert overlap(box, truth[action.parameters["description"]]) >= MIN_OVERLAP, (key, step["index"])
    register = scored["results"]["tasks"]["sb-admin-register-form"]["steps"]
    assert [step["target"]["id"] for step in register[1:]] == [
        "exampleFirstName", "exampleLastName", "exampleInputEmail", "exampleInputPassword", "exampleRepeatPassword"]


def test_the_assertion_verdicts_are_the_scripted_ones(scored):
    """Action 4 of the TodoMVC task passed by the unparseable-answer quirk, action 7 failed on the No."""
    steps = scored["results"]["tasks"]["todomvc-vanillajs-list"]["steps"]
    assert "official quirk" in steps[4]["assertion"]["reason"] and steps[4]["passed"]
    assert steps[7]["assertion"]["passed"] is False and steps[7]["executed"] and len(steps) == 8
    asked = [r.text for r in scored["judge"].requests if "ASSERTION (trusted)" in r.text]
    # Asserted actions reached: TodoMVC 2, 4, 7; mixitup 1, 2; register form 1, 3.
    assert len(asked) == 7


def test_the_truth_index_follows_the_recorded_box_not_the_label():
    """On the grounding prompt's own list, 'Repeat Password' is the second password field, and an unknown
    description or a box no candidate covers gets no index."""
    from evaluator.official.prompts import grounding

    fields = [{"tag": "input", "type": "password", "placeholder": name, "box": [607 + 277 * i, 280.8, 253.5, 50]}
              for i, name in enumerate(("Password", "Repeat Password"))]
    truth = {"Type into the 'Repeat Password' field": (884.48, 280.8, 253.48, 50),
             "Type into the footer": (0, 700, 40, 20)}

    def asked(description: str) -> int | None:
        messages = grounding(description, "Type", fields, "(tree)")
        return truth_index(truth, messages[1]["content"])

    assert asked("Type into the 'Repeat Password' field") == 1
    assert asked("Type into the footer") is None
    assert asked("Type into the 'Password' field") is None

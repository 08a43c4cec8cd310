"""What a job writes is checked before anything is kept: one test per rule of evaluator/outputs.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluator import scoring
from evaluator.outputs import (
    OutputError,
    OutputLimits,
    check_results,
    copy_artifacts,
    read_appended,
    read_log_tail,
    read_results,
    read_task_result,
    strip_server_paths,
)


def task(key: str, n_actions: int = 2, level: str = "L1") -> SimpleNamespace:
    return SimpleNamespace(key=key, actions=[object()] * n_actions, interaction_complexity=level,
                           visual_complexity="V1", domain="productivity")


TASKS = [task("a"), task("b", 3, "L2")]


def result(passed: int, total: int, low: float = 0.5, high: float = 0.25, error=None) -> dict:
    scores = scoring.task_score(passed, total, [{"low_level": low, "high_level": high}])
    steps = [{"index": i, "type": "Click", "passed": i <= passed, "reason": "clicked"} for i in range(total + 1)]
    return {**scores, "steps_passed": passed, "steps_total": total, "steps": steps, "error": error}


def document() -> dict:
    tasks = {"a": result(2, 2), "b": result(1, 3)}
    return {"protocol": "iwr-det-2", "evaluator_version": "0.2.0", "ocr_engine": "tesseract 5", "browser": "chromium",
            "tasks": tasks, "summary": scoring.summarize(tasks, TASKS)}


def rejected(doc: dict, rule: str) -> OutputError:
    with pytest.raises(OutputError) as caught:
        check_results(doc, TASKS)
    assert caught.value.rule == rule, str(caught.value)
    assert f"({rule})" in str(caught.value)
    return caught.value


def test_a_well_formed_document_passes_with_its_summary_recomputed():
    doc = document()
    checked = check_results(doc, TASKS)
    assert checked["summary"] == scoring.summarize(doc["tasks"], TASKS)
    assert checked["summary"]["final"] == pytest.approx((doc["tasks"]["a"]["final"] + doc["tasks"]["b"]["final"]) / 2)


def test_a_summary_that_disagrees_with_its_tasks_is_rejected():
    doc = document()
    doc["summary"]["final"] = 0.99
    rejected(doc, "summary")
    doc = document()
    doc["summary"]["by_category"]["interaction_complexity"]["L1"]["final"] = 1.0
    rejected(doc, "summary")


def test_a_task_id_outside_the_job_is_rejected():
    doc = document()
    doc["tasks"]["held-out-7"] = result(2, 2)
    assert "held-out-7" in str(rejected(doc, "unknown task"))


def test_score_seven_is_rejected():
    doc = document()
    doc["tasks"]["a"]["final"] = 7
    assert "outside [0, 1]" in str(rejected(doc, "score out of range"))


def test_a_nan_score_is_rejected_parsed_or_in_memory(tmp_path: Path):
    doc = document()
    doc["tasks"]["a"]["vfs"] = float("nan")
    rejected(doc, "score not finite")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document()).replace('"vfs": 0.375', '"vfs": NaN', 1))
    assert "NaN" in path.read_text()
    with pytest.raises(OutputError) as caught:
        read_results(path, TASKS)
    assert caught.value.rule == "score not finite"


def test_scores_that_do_not_follow_from_their_steps_are_rejected():
    doc = document()
    doc["tasks"]["b"].update(ifs=1.0, final=scoring.final(1.0, doc["tasks"]["b"]["vfs"]))  # 1 of 3 steps passed
    rejected(doc, "scores disagree")


def test_step_counts_are_bounded_by_the_task():
    doc = document()
    doc["tasks"]["a"]["steps"] *= 1000
    rejected(doc, "step count")
    doc = document()
    doc["tasks"]["a"] = result(5, 5)  # the task has 2 actions
    rejected(doc, "step count")


def test_step_counts_are_bounded_for_task_rows_that_only_know_how_many_actions_they_have():
    """The leaderboard's task rows carry ``n_actions``, not the actions: the count is checked all the same."""
    rows = [SimpleNamespace(key=t.key, n_actions=len(t.actions), interaction_complexity=t.interaction_complexity,
                            visual_complexity="V1", domain="productivity") for t in TASKS]
    assert check_results(document(), rows)["summary"]["n_tasks"] == 2
    doc = document()
    doc["tasks"]["a"] = result(40, 40)  # 40 steps, each a small object: a cheap way to fill the worker's memory
    with pytest.raises(OutputError, match=r"steps_total 40, the task has 2 actions") as caught:
        check_results(doc, rows)
    assert caught.value.rule == "step count"


def test_a_task_whose_action_count_is_unknown_still_has_a_bounded_step_count():
    unknown = [SimpleNamespace(key=t.key, interaction_complexity=t.interaction_complexity, visual_complexity="V1",
                               domain="productivity") for t in TASKS]
    doc = document()
    doc["tasks"]["a"] = result(1500, 1500)
    with pytest.raises(OutputError, match=r"steps_total 1500 \(at most 1000\)"):
        check_results(doc, unknown)
    doc["tasks"]["a"] = result(2, 2)
    assert check_results(doc, unknown)["tasks"]["a"]["steps_total"] == 2


def test_long_strings_deep_nesting_and_stray_fields_are_rejected():
    doc = document()
    doc["tasks"]["a"]["steps"][0]["reason"] = "x" * 30_000
    rejected(doc, "string length")
    doc = document()
    nested: list = []
    for _ in range(40):
        nested = [nested]
    doc["tasks"]["a"]["steps"][0]["extra"] = nested
    rejected(doc, "nesting")
    doc = document()
    doc["secret"] = "x"
    rejected(doc, "schema")


def test_results_files_are_read_bounded_and_only_as_regular_files(tmp_path: Path):
    big = tmp_path / "results.json"
    big.write_text(json.dumps(document()))
    assert read_results(big, TASKS)["tasks"]["a"]["ifs"] == 1.0
    with pytest.raises(OutputError, match=r"\(file size\)"):
        read_results(big, TASKS, OutputLimits(results_bytes=100))
    link = tmp_path / "link.json"
    link.symlink_to(big)
    with pytest.raises(OutputError, match=r"\(symlink\)"):
        read_results(link, TASKS)
    one = tmp_path / "result.json"
    one.write_text(json.dumps(result(2, 2)))
    assert read_task_result(one, TASKS[0])["steps_passed"] == 2
    with pytest.raises(OutputError, match=r"\(missing\)"):
        read_results(tmp_path / "absent.json", TASKS)


def out_folder(root: Path) -> Path:
    out = root / "out"
    (out / "tasks" / "a").mkdir(parents=True)
    (out / "tasks" / "a" / "step_0.png").write_bytes(b"\x89PNG" + b"0" * 100)
    (out / "tasks" / "a" / "result.json").write_text("{}")
    (out / "progress.jsonl").write_text("{}\n")
    return out


def test_artifacts_are_copied_as_regular_files(tmp_path: Path):
    out = out_folder(tmp_path)
    copied = copy_artifacts(out, tmp_path / "kept")
    assert sorted(p.relative_to(tmp_path / "kept").as_posix() for p in copied) == [
        "progress.jsonl", "tasks/a/result.json", "tasks/a/step_0.png"]
    assert (tmp_path / "kept" / "tasks" / "a" / "step_0.png").read_bytes() == (out / "tasks/a/step_0.png").read_bytes()


def test_a_symlinked_artifact_is_rejected_and_its_target_not_copied(tmp_path: Path):
    out = out_folder(tmp_path)
    secret = tmp_path / "secret_key.json"
    secret.write_text('"canary"')
    (out / "tasks" / "a" / "key.json").symlink_to(secret)
    with pytest.raises(OutputError) as caught:
        copy_artifacts(out, tmp_path / "kept")
    assert caught.value.rule == "symlink" and "key.json" in str(caught.value)
    assert not any("canary" in p.read_text(errors="replace") for p in (tmp_path / "kept").rglob("*") if p.is_file())
    (out / "tasks" / "a" / "key.json").unlink()
    (out / "tasks" / "b").symlink_to(tmp_path, target_is_directory=True)  # a folder link: a path escape
    with pytest.raises(OutputError, match=r"\(symlink\)"):
        copy_artifacts(out, tmp_path / "kept2")


def test_a_fifo_artifact_is_rejected_without_blocking(tmp_path: Path):
    out = out_folder(tmp_path)
    os.mkfifo(out / "tasks" / "a" / "step_1.png")
    began = time.monotonic()
    with pytest.raises(OutputError) as caught:
        copy_artifacts(out, tmp_path / "kept")
    assert caught.value.rule == "not a regular file" and "FIFO" in str(caught.value)
    assert time.monotonic() - began < 5
    with pytest.raises(OutputError, match="FIFO"):
        read_results(out / "tasks" / "a" / "step_1.png", TASKS)


def test_artifact_types_names_and_sizes_are_bounded(tmp_path: Path):
    out = out_folder(tmp_path)
    (out / "run.sh").write_text("#!/bin/sh")
    with pytest.raises(OutputError, match=r"\(artifact type\)"):
        copy_artifacts(out, tmp_path / "k1")
    (out / "run.sh").unlink()
    (out / ".hidden.json").write_text("{}")
    with pytest.raises(OutputError, match=r"\(unsafe name\)"):
        copy_artifacts(out, tmp_path / "k2")
    (out / ".hidden.json").unlink()
    with pytest.raises(OutputError, match=r"\(artifact size\)"):
        copy_artifacts(out, tmp_path / "k3", OutputLimits(artifact_bytes={".png": 10, ".json": 10, ".jsonl": 10}))
    with pytest.raises(OutputError, match=r"\(artifacts size\)"):
        copy_artifacts(out, tmp_path / "k4", OutputLimits(artifacts_bytes=50))
    assert [p.name for p in copy_artifacts(out, tmp_path / "k5", skip=["tasks"])] == ["progress.jsonl"]


def test_a_two_gigabyte_log_is_read_as_its_tail_only(tmp_path: Path):
    log = tmp_path / "evaluator.log"
    tail = b"\nlast line of log\n"
    with open(log, "wb") as handle:  # sparse: 2 GB long, a few blocks on disk
        handle.seek(2 * 2**30 - len(tail))
        handle.write(tail)
    assert log.stat().st_size > 2 * 2**30 - 1
    began = time.monotonic()
    text, truncated = read_log_tail(log, 1000)
    assert truncated and len(text) <= 1000 and text.rstrip().endswith("last line of log")
    assert time.monotonic() - began < 2
    assert read_log_tail(tmp_path / "none.log") == ("", False)
    lines, offset = read_appended(log, 2 * 2**30 - len(tail))
    assert lines[-1] == b"last line of log" and offset == log.stat().st_size
    with pytest.raises(OutputError, match=r"\(line length\)"):
        read_appended(log, 0, max_bytes=4096)  # a NUL-filled "line" of 2 GB


def test_reasons_in_results_name_files_never_by_their_server_path():
    """Whatever wrote them, the error and step reasons the worker keeps carry no absolute path."""
    doc = document()
    doc["tasks"]["b"]["error"] = "MetricError: cannot read image '/srv/iwr/var/tasks/b/checkpoints/step_3.png': bad"
    step = doc["tasks"]["a"]["steps"][1]
    step.update(reason="timeout: /tmp/job/out/tasks/a/x.webm gone", visual={"error": "OSError: /job/out/a/step_1.png"},
                assertion={"passed": True, "reason": "seen at http://page.test/a/b and tasks/a/step_1.png"})
    doc["summary"] = scoring.summarize(doc["tasks"], TASKS)  # a task with an error counts differently
    checked = check_results(doc, TASKS)
    assert checked["tasks"]["b"]["error"] == "MetricError: cannot read image 'step_3.png': bad"
    kept = checked["tasks"]["a"]["steps"][1]
    assert kept["reason"] == "timeout: x.webm gone" and kept["visual"]["error"] == "OSError: step_1.png"
    assert kept["assertion"]["reason"] == "seen at http://page.test/a/b and tasks/a/step_1.png"  # no server path


def test_strip_server_paths_leaves_urls_relative_paths_and_routes():
    for text in ("GET http://page.test/a/b.css", "tasks/t1/step_3.png", "load: / aborted", "file:///x/y"):
        assert strip_server_paths(text) == text
    assert strip_server_paths("at /opt/iwr/evaluator/replay.py, line 3") == "at replay.py, line 3"

"""Loading task sets into typed objects, writing them back, numbering and references."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.dataset import (
    AFTER_ACTION,
    FLAGGED,
    UNKNOWN,
    Action,
    Dataset,
    DatasetError,
    Task,
    UnknownTaskError,
    append_record,
    load_dataset,
    render_jsonl,
    validate_dataset,
    write_dataset,
)
from tests.evaluator.fixtures.dataset_builder import build_dataset, record, write_jsonl, write_task_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_path(tmp_path: Path) -> Path:
    return build_dataset(tmp_path / "set")


def test_it_loads_records_into_typed_tasks(data_path: Path):
    """Every record field lands in the typed Task and Action objects."""
    dataset = load_dataset(data_path)
    task = dataset.tasks[0]
    assert isinstance(dataset, Dataset) and isinstance(task, Task) and isinstance(task.actions[0], Action)
    assert (task.interaction_complexity, task.visual_complexity, task.domain, task.sub_domain) == (
        "L2", "V1", "productivity", "todo")
    assert (task.width, task.height, task.environment) == (320, 200, "desktop")
    assert task.source_website == "https://todo.example.test/"
    assert [a.type for a in task.actions] == ["Click", "Type", "Press", "Scroll"]
    assert task.actions[1].text == "milk" and task.actions[1].element_index == 0
    assert task.actions[2].key == "Enter" and task.actions[3].direction == "down"
    assert task.actions[3].scroll_page == "half"
    assert task.actions[0].logical_assertion == "A new empty item appears" and task.actions[0].has_assertion
    assert task.flagged_steps == [1, 3]


def test_it_keeps_string_and_integer_ids_as_given(data_path: Path):
    """Ids keep their JSON type; keys are their string form and name the folders."""
    dataset = load_dataset(data_path)
    assert [t.id for t in dataset.tasks] == [1, "todo-b"]
    assert dataset.keys == ["1", "todo-b"]
    assert dataset.task(1) is dataset.task("1") is dataset.tasks[0]
    assert dataset.task("todo-b").root == data_path.parent / "data" / "todo-b"
    assert dataset.data_dir == data_path.parent / "data"


def test_it_reads_label_strings_from_the_data(tmp_path: Path):
    """Labels never seen before are taken as spelled."""
    rec = record(5, classification={"interaction_complexity": "Level-9", "visual_complexity": "very busy",
                                    "domain": "space travel", "sub_domain": "booking"})
    task = load_dataset(build_dataset(tmp_path, [rec])).tasks[0]
    assert (task.interaction_complexity, task.visual_complexity, task.domain) == ("Level-9", "very busy",
                                                                                 "space travel")


def test_unknown_task_key_raises_a_clear_error(data_path: Path):
    """Asking for a missing key names it (and is a KeyError as well as a DatasetError)."""
    with pytest.raises(UnknownTaskError, match="no task 'nope'") as caught:
        load_dataset(data_path).task("nope")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, DatasetError)


def test_task_paths_follow_the_official_layout(data_path: Path):
    """The path helpers point at the files of the official layout."""
    task = load_dataset(data_path).task("1")
    assert task.video_path == task.root / "video.mp4" and task.video_path.is_file()
    assert task.assets_dir.is_dir() and task.stitched_dir.is_dir()
    assert task.checkpoint_path(3) == task.root / "checkpoints" / "step_3.png"
    assert task.reference_path(2) == task.root / "reference" / "step_2.json"


@pytest.mark.parametrize("dumps", [
    lambda r: json.dumps(r, ensure_ascii=False),
    lambda r: json.dumps(r),
    lambda r: json.dumps(r, separators=(",", ":")),
    lambda r: json.dumps(r, ensure_ascii=False, separators=(",", ":")),
])
def test_load_then_write_is_byte_identical(tmp_path: Path, dumps):
    """Canonical data.jsonl (any json.dumps spelling) comes back byte for byte, unknown fields included."""
    records = [record(1, extra={"crawl": "2025-06-01", "note": "café ☕"}), record("b")]
    records[1]["action_sequence"][0]["parameters"]["unknown_param"] = [1, 2.5, None, True]
    path = build_dataset(tmp_path, records)
    original = "".join(dumps(r) + "\n" for r in records).encode("utf-8")
    path.write_bytes(original)
    dataset = load_dataset(path)
    assert dataset.tasks[0].raw["extra"]["note"] == "café ☕"
    write_dataset(dataset, tmp_path / "copy.jsonl")
    assert (tmp_path / "copy.jsonl").read_bytes() == original
    write_dataset(dataset)
    assert path.read_bytes() == original


def test_write_keeps_odd_spelling_of_unchanged_records_and_restyles_changed_ones(tmp_path: Path):
    """Unchanged lines are written exactly as read; an edited record is written in the file's style."""
    path = build_dataset(tmp_path, [record(1), record(2)])
    lines = [json.dumps(record(1), indent=None, separators=(" ,", " : ")), json.dumps(record(2))]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    dataset = load_dataset(path)
    dataset.tasks[1].raw["source_website"] = "https://changed.test/"
    dataset.tasks[1].actions[0].raw["visual_evaluation_flag"] = False  # Action.raw is the record's own dict
    text = render_jsonl(dataset)
    first, second, end = text.split("\r\n")
    assert first == lines[0] and end == ""
    assert json.loads(second)["source_website"] == "https://changed.test/"
    assert json.loads(second)["action_sequence"][0]["visual_evaluation_flag"] is False


def test_write_with_copy_files_makes_a_complete_task_set(tmp_path: Path, data_path: Path):
    """copy_files puts each task folder next to the new data.jsonl, and the copy validates."""
    target = write_dataset(load_dataset(data_path), tmp_path / "out" / "subset.jsonl", copy_files=True)
    assert (tmp_path / "out" / "subset" / "todo-b" / "video.mp4").is_file()
    assert validate_dataset(target).ok


def test_append_record_adds_a_line_in_the_file_style(tmp_path: Path):
    """append_record writes one line in the existing style and refuses a repeated id."""
    path = build_dataset(tmp_path, [record(1)])
    path.write_text(json.dumps(record(1), separators=(",", ":")), encoding="utf-8")  # no final newline
    task = append_record(path, record("new"))
    assert task.key == "new"
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[1] == json.dumps(record("new"), separators=(",", ":")) and lines[2] == ""
    with pytest.raises(DatasetError, match='a task with id "new" is already there'):
        append_record(path, record("new"))


def test_append_record_refuses_a_defective_record(tmp_path: Path):
    """A record with a blocking defect is not written and the error says why."""
    path = tmp_path / "data.jsonl"
    bad = record(3)
    bad["action_sequence"][0]["type"] = "Hover"
    with pytest.raises(DatasetError, match="unknown action type 'Hover'"):
        append_record(path, bad)
    assert not path.exists()
    append_record(path, record(3))
    assert json.loads(path.read_text(encoding="utf-8"))["id"] == 3


def test_resolution_falls_back_to_metadata_then_the_default(tmp_path: Path):
    """Without a resolution in the record, metadata.json gives it, else 1920x1080."""
    first, second = record(1), record(2)
    del first["recording_details"]["resolution"]
    del second["recording_details"]
    path = build_dataset(tmp_path, [first, second])
    (tmp_path / "data" / "1" / "metadata.json").write_text(
        json.dumps({"recording_details": {"resolution": "1280x720"}}), encoding="utf-8")
    one, two = load_dataset(path).tasks
    assert (one.width, one.height, one.resolution_source) == (1280, 720, "metadata")
    assert (two.width, two.height, two.resolution_source) == (1920, 1080, "default")


def test_record_resolution_wins_over_metadata(tmp_path: Path):
    """The record's own resolution is used even when metadata.json disagrees."""
    path = build_dataset(tmp_path, [record(1)])
    (tmp_path / "data" / "1" / "metadata.json").write_text(
        json.dumps({"recording_details": {"resolution": "1280x720"}}), encoding="utf-8")
    task = load_dataset(path).tasks[0]
    assert (task.width, task.height, task.resolution_source) == (320, 200, "record")


def test_numbering_one_checkpoint_per_action_is_detected(data_path: Path):
    """step_0..step_N for N actions means step_k is the state after action k."""
    dataset = load_dataset(data_path)
    assert dataset.numbering == AFTER_ACTION
    task = dataset.task("1")
    assert dataset.checkpoint_for(task, 0) == task.checkpoint_path(0)
    assert dataset.checkpoint_for(task, 3) == task.checkpoint_path(3)


def test_numbering_by_flagged_step_is_detected(tmp_path: Path):
    """step_0..step_F for F flagged actions means step_k follows the k-th flagged action."""
    dataset = load_dataset(build_dataset(tmp_path, numbering="flagged"))
    assert dataset.numbering == FLAGGED
    task = dataset.task("1")
    assert dataset.checkpoint_for(task, 3) == task.checkpoint_path(2)  # action 3 is the 2nd flagged one
    assert dataset.checkpoint_for(task, 2) is None  # action 2 carries no visual check


def test_numbering_says_after_action_when_every_action_is_flagged(tmp_path: Path):
    """When both numberings fit (all actions flagged) the dataset says after_action."""
    rec = record(1)
    for action in rec["action_sequence"]:
        action["visual_evaluation_flag"] = True
    assert load_dataset(build_dataset(tmp_path, [rec])).numbering == AFTER_ACTION


def test_numbering_is_unknown_when_tasks_disagree(tmp_path: Path):
    """One task numbered per action and one per flagged step leave the numbering unknown."""
    path = build_dataset(tmp_path, [record(1)])
    write_jsonl(path, [record(1), record(2)])
    write_task_files(tmp_path / "data", record(2), numbering="flagged")
    dataset = load_dataset(path)
    assert dataset.numbering == UNKNOWN
    assert dataset.checkpoint_for(dataset.task(2), 1) is None


def test_load_reference_reads_optional_reference_data(data_path: Path):
    """load_reference returns the JSON object, None when absent, and refuses broken files."""
    task = load_dataset(data_path).task(1)
    assert task.load_reference(1) is None
    task.reference_dir.mkdir()
    task.reference_path(1).write_text(json.dumps({"url": "http://iwr.test/", "text": "Hi"}), encoding="utf-8")
    assert task.load_reference(1)["text"] == "Hi"
    task.reference_path(2).write_text("[1, 2", encoding="utf-8")
    with pytest.raises(DatasetError, match="unreadable reference data"):
        task.load_reference(2)


def test_load_raises_one_line_error_naming_line_task_and_field(tmp_path: Path):
    """An unusable record stops loading with one line: file, line, task, field and reason."""
    bad = record(7, recording_details={"resolution": "wide"})
    path = build_dataset(tmp_path, [record(1), bad])
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path}/data.jsonl:2: task 7: recording_details.resolution: resolution 'wide'")


def test_load_counts_further_problems_in_its_message(tmp_path: Path):
    """With several defects the message names the first and counts the rest."""
    path = tmp_path / "data.jsonl"
    path.write_text("{bad\n[]\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"data.jsonl:1: not valid JSON: .* \(and 1 more problem; "):
        load_dataset(path)


def test_load_tolerates_gaps_an_llm_judge_could_fill(tmp_path: Path):
    """A Type action without text is a validation problem but does not block loading."""
    rec = record(1)
    del rec["action_sequence"][1]["parameters"]["text"]
    path = build_dataset(tmp_path, [rec])
    assert load_dataset(path).tasks[0].actions[1].text is None
    assert not validate_dataset(path).ok


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02garbage\xff", b"[1, 2]\n", b"   \n\n"])
def test_load_refuses_garbage_with_a_dataset_error(tmp_path: Path, content: bytes):
    """Garbage input raises DatasetError, never another exception."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError):
        load_dataset(path)


def test_load_stays_fast_and_does_not_import_pillow(tmp_path: Path):
    """Loading 200 tasks takes well under a second and needs no image library."""
    records = [record(i) for i in range(200)]
    path = write_jsonl(tmp_path / "data.jsonl", records)
    for i in range(200):
        folder = tmp_path / "data" / str(i) / "checkpoints"
        folder.mkdir(parents=True)
        for k in range(5):
            (folder / f"step_{k}.png").touch()
    code = ("import sys, time; from evaluator.dataset import load_dataset; t = time.perf_counter(); "
            f"d = load_dataset({str(path)!r}); print(time.perf_counter() - t, 'PIL' in sys.modules, d.numbering)")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    seconds, pillow, numbering = out.split()
    assert float(seconds) < 1.0 and pillow == "False" and numbering == AFTER_ACTION
    assert time.perf_counter() - started < 10

"""Validating task sets: the summary, one test per kind of defect, garbage input, the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evaluator.cli import main
from evaluator.dataset import Limits, validate_dataset
from evaluator.dataset.files import sniff
from tests.evaluator.fixtures.dataset_builder import (
    FAKE_MP4,
    FAKE_WEBM,
    SVG,
    build_dataset,
    image_bytes,
    record,
    write_jsonl,
    write_task_files,
)


def messages(report) -> list[str]:
    return [str(problem) for problem in report.problems]


def only_problem(report) -> str:
    assert len(report.problems) == 1, messages(report)
    return str(report.problems[0])


def build(tmp_path: Path, records: list | None = None, **kwargs) -> Path:
    return build_dataset(tmp_path, records, **kwargs)


def task_dir(tmp_path: Path, key: str = "1") -> Path:
    return tmp_path / "data" / key


# -- a valid set and its summary ------------------------------------------------------


def test_a_valid_task_set_passes_with_its_summary(tmp_path: Path):
    """A correct set has no problems and the summary counts what it holds."""
    other = record(2, classification={"interaction_complexity": "L4", "visual_complexity": "V3",
                                      "domain": "gaming", "sub_domain": "2048"})
    report = validate_dataset(build(tmp_path, [record(1), record("b"), other]))
    assert report.ok and report.problems == [] and report.warnings == []
    summary = report.summary
    assert (summary["tasks"], summary["actions"], summary["assertions"], summary["visual_flags"]) == (3, 12, 6, 6)
    assert summary["action_types"] == {"Click": 3, "Press": 3, "Scroll": 3, "Type": 3}
    assert summary["interaction_complexity"] == {"L2": 2, "L4": 1}
    assert summary["visual_complexity"] == {"V1": 2, "V3": 1}
    assert summary["domain"] == {"gaming": 1, "productivity": 2}
    assert summary["id_types"] == {"integer": 2, "string": 1}
    assert summary["numbering"] == "after_action" and summary["numbering_fits"] == {"after_action": 3}
    assert summary["files"]["checkpoints"] == 15 and summary["files"]["videos"] == 3


def test_the_summary_reports_flagged_numbering(tmp_path: Path):
    """Checkpoints one per flagged step are detected and stated."""
    report = validate_dataset(build(tmp_path, numbering="flagged"))
    assert report.ok
    assert report.summary["numbering"] == "flagged"
    assert "checkpoint numbering: flagged (k-th flagged step" in report.format_text()


def test_the_text_report_lists_counts_per_category(tmp_path: Path):
    """The printed summary names tasks, actions, assertions, flags and the label counts."""
    text = validate_dataset(build(tmp_path)).format_text()
    assert "2 tasks, 8 actions (Click 2, Press 2, Scroll 2, Type 2), 4 assertions, 4 visual flags" in text
    assert "interaction_complexity: L2 2" in text and "domain: productivity 2" in text
    assert text.endswith("OK: valid task set")


def test_label_counts_sort_numbers_naturally(tmp_path: Path):
    """L10 is listed after L2."""
    records = [record(i, classification={"interaction_complexity": level, "visual_complexity": "V1",
                                         "domain": "d", "sub_domain": "s"}) for i, level in enumerate(["L10", "L2"])]
    assert list(validate_dataset(build(tmp_path, records)).summary["interaction_complexity"]) == ["L2", "L10"]


# -- record defects -------------------------------------------------------------------


def test_it_reports_an_unreadable_json_line(tmp_path: Path):
    """A line that is not JSON is named by file and line, and other lines are still checked."""
    path = build(tmp_path)
    path.write_text(path.read_text().replace('{"id": "todo-b"', '{"id": "todo-b",,'), encoding="utf-8")
    report = validate_dataset(path)
    assert messages(report) == ["data.jsonl:2: not valid JSON: Expecting property name enclosed in double quotes "
                                "(column 17)"]
    assert report.summary["tasks"] == 1


def test_it_reports_a_missing_field(tmp_path: Path):
    """A missing required field is named with its path."""
    rec = record(1)
    del rec["classification"]["domain"]
    assert only_problem(validate_dataset(build(tmp_path, [rec]))) == (
        "data.jsonl:1: task 1: classification.domain: missing (expected a string)")


def test_it_reports_a_missing_action_sequence(tmp_path: Path):
    """A record without actions cannot be replayed."""
    rec = record(1)
    del rec["action_sequence"]
    report = validate_dataset(build(tmp_path, [rec]))
    assert "data.jsonl:1: task 1: action_sequence: missing (expected an array of actions)" in messages(report)


def test_it_reports_an_empty_action_sequence(tmp_path: Path):
    """An empty action list is a defect (IFS would divide by zero)."""
    report = validate_dataset(build(tmp_path, [record(1, action_sequence=[])]))
    assert "data.jsonl:1: task 1: action_sequence: has no actions" in messages(report)


def test_it_reports_a_wrong_typed_field(tmp_path: Path):
    """A field of the wrong JSON type says what was expected and what was found."""
    rec = record(1)
    rec["action_sequence"][2]["visual_evaluation_flag"] = "yes"
    rec["source_website"] = 42
    report = validate_dataset(build(tmp_path, [rec]))
    assert messages(report)[:2] == [
        "data.jsonl:1: task 1: source_website: expected a string, got a number (42)",
        'data.jsonl:1: task 1: action_sequence[2].visual_evaluation_flag: expected true or false, got a string ("yes")',
    ]


def test_it_reports_an_id_of_the_wrong_type(tmp_path: Path):
    """Ids must be strings or integers (not booleans or fractions)."""
    path = build(tmp_path, [record(1)])
    write_jsonl(path, [record(1), record(2.5), record(True)])
    assert messages(validate_dataset(path)) == [
        "data.jsonl:2: id: expected a string or an integer, got a number (2.5)",
        "data.jsonl:3: id: expected a string or an integer, got a boolean (true)",
    ]


def test_it_refuses_an_id_that_cannot_name_a_folder(tmp_path: Path):
    """An id such as ../x would point outside the data folder."""
    path = build(tmp_path, [record(1)])
    write_jsonl(path, [record(1), record("../x")])
    assert messages(validate_dataset(path)) == [
        "data.jsonl:2: id: id '../x' cannot name a folder (empty, too long, leading dot, slash or control character)"]


def test_it_reports_an_unknown_action_type(tmp_path: Path):
    """Unknown types are named, with a hint when only the case differs."""
    rec = record(1)
    rec["action_sequence"][0]["type"] = "Hover"
    rec["action_sequence"][1]["type"] = "click"
    rec["action_sequence"][1]["parameters"]["description"] = "x"
    assert messages(validate_dataset(build(tmp_path, [rec]))) == [
        "data.jsonl:1: task 1: action_sequence[0].type: unknown action type 'Hover' "
        "(expected one of Click, Type, Scroll, Press)",
        "data.jsonl:1: task 1: action_sequence[1].type: unknown action type 'click' "
        "(expected one of Click, Type, Scroll, Press); did you mean 'Click'?",
    ]


def test_it_reports_a_type_action_without_text(tmp_path: Path):
    """Type needs the text to type."""
    rec = record(1)
    del rec["action_sequence"][1]["parameters"]["text"]
    assert only_problem(validate_dataset(build(tmp_path, [rec]))) == (
        "data.jsonl:1: task 1: action_sequence[1].parameters.text: Type action has no text to type")


def test_it_reports_a_press_action_without_key_or_description(tmp_path: Path):
    """Press needs a key, or at least a description to infer it from."""
    rec = record(1)
    rec["action_sequence"][2]["parameters"] = {"description": " "}
    assert only_problem(validate_dataset(build(tmp_path, [rec]))) == (
        "data.jsonl:1: task 1: action_sequence[2].parameters.key: Press action has neither a key nor a description")


def test_a_press_action_with_only_a_description_is_accepted(tmp_path: Path):
    """A described Press without key is valid (the key can be inferred)."""
    rec = record(1)
    del rec["action_sequence"][2]["parameters"]["key"]
    assert validate_dataset(build(tmp_path, [rec])).ok


def test_it_reports_a_resolution_that_is_not_w_x_h(tmp_path: Path):
    """Resolutions must read WIDTHxHEIGHT within sane bounds."""
    records = [record(1, recording_details={"resolution": "1920*1080"}),
               record(2, recording_details={"resolution": "10x10"})]
    path = build(tmp_path, records)
    assert messages(validate_dataset(path)) == [
        "data.jsonl:1: task 1: recording_details.resolution: resolution '1920*1080' is not \"WxH\" "
        "(for example \"1920x1080\")",
        "data.jsonl:2: task 2: recording_details.resolution: resolution '10x10' is outside 64..8192 pixels per side",
    ]


def test_it_reports_a_bad_resolution_in_metadata(tmp_path: Path):
    """metadata.json's resolution is checked as well, naming that file."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "metadata.json").write_text(
        json.dumps({"recording_details": {"resolution": "big"}}), encoding="utf-8")
    assert only_problem(validate_dataset(path)) == (
        "data/1/metadata.json: task 1: recording_details.resolution: resolution 'big' is not \"WxH\" "
        "(for example \"1920x1080\")")


def test_it_reports_unreadable_metadata(tmp_path: Path):
    """A metadata.json that is not a JSON object is a defect."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "metadata.json").write_text("[]", encoding="utf-8")
    assert only_problem(validate_dataset(path)) == "data/1/metadata.json: task 1: must hold a JSON object"


def test_it_reports_duplicate_ids(tmp_path: Path):
    """A repeated id, or an int and a string naming the same folder, is reported with the first line."""
    path = build(tmp_path, [record(1)])
    write_jsonl(path, [record(1), record(1), record("1")])
    assert messages(validate_dataset(path)) == [
        "data.jsonl:2: task 1: id: duplicate id 1 (first used on line 1)",
        'data.jsonl:3: task 1: id: id "1" names the same folder as id 1 on line 1',
    ]


def test_it_reports_a_repeated_key_inside_one_record(tmp_path: Path):
    """JSON with a key twice is ambiguous and reported."""
    path = build(tmp_path, [record(1)])
    path.write_text(path.read_text().replace('{"id": 1,', '{"id": 1, "id": 1,'), encoding="utf-8")
    assert only_problem(validate_dataset(path)) == "data.jsonl:1: key 'id' appears more than once in one object"


# -- files of a task ------------------------------------------------------------------


def test_it_reports_a_missing_video(tmp_path: Path):
    """Each task needs its recording."""
    path = build(tmp_path)
    (task_dir(tmp_path, "todo-b") / "video.mp4").unlink()
    assert only_problem(validate_dataset(path)) == "data/todo-b/video.mp4: task todo-b: missing video"


def test_it_reports_a_video_that_is_not_mp4(tmp_path: Path):
    """The video's first bytes must be an MP4 (ISO media) header."""
    path = build(tmp_path)
    (task_dir(tmp_path) / "video.mp4").write_bytes(FAKE_WEBM)
    (task_dir(tmp_path, "todo-b") / "video.mp4").write_bytes(b"<html>not a video</html>")
    assert messages(validate_dataset(path)) == [
        "data/1/video.mp4: task 1: is not an MP4 video (found WebM data)",
        "data/todo-b/video.mp4: task todo-b: is not an MP4 video (found an HTML document)",
    ]


def test_it_reports_a_missing_task_folder(tmp_path: Path):
    """A record without its folder is reported once, not once per file."""
    path = build(tmp_path)
    for child in sorted(task_dir(tmp_path).rglob("*"), reverse=True):
        child.rmdir() if child.is_dir() else child.unlink()
    task_dir(tmp_path).rmdir()
    assert only_problem(validate_dataset(path)) == "data/1: task 1: missing task folder"


def test_it_reports_a_missing_data_folder(tmp_path: Path):
    """Without the folder named after the jsonl stem, one problem says so."""
    path = build(tmp_path)
    (tmp_path / "data").rename(tmp_path / "other")
    assert only_problem(validate_dataset(path)) == "data: missing task folder data/ next to data.jsonl"


def test_it_reports_missing_checkpoints_and_which_numbering_fits(tmp_path: Path):
    """A missing step is named, with what each numbering would need."""
    path = build(tmp_path)
    (task_dir(tmp_path) / "checkpoints" / "step_4.png").unlink()
    assert only_problem(validate_dataset(path)) == (
        "data/1/checkpoints: task 1: 4 checkpoint files fit neither numbering: "
        "after_action (one per action, step_k after action k) expects step_0..step_4: missing step_4.png; "
        "flagged (step_k after the k-th flagged step) expects step_0..step_2: extra step_3.png")


def test_it_reports_extra_checkpoints(tmp_path: Path):
    """A checkpoint beyond the last action is named."""
    path = build(tmp_path)
    (task_dir(tmp_path) / "checkpoints" / "step_5.png").write_bytes(image_bytes((320, 200)))
    assert only_problem(validate_dataset(path)) == (
        "data/1/checkpoints: task 1: 6 checkpoint files fit neither numbering: "
        "after_action (one per action, step_k after action k) expects step_0..step_4: extra step_5.png; "
        "flagged (step_k after the k-th flagged step) expects step_0..step_2: extra step_3.png..step_5.png")


def test_it_reports_a_task_numbered_differently_from_the_others(tmp_path: Path):
    """A task whose files fit the other numbering is named, and the disagreement too."""
    records = [record(1), record(2), record(3)]
    path = build(tmp_path, records)
    write_task_files(tmp_path / "data", record(4), numbering="flagged")
    write_jsonl(path, [*records, record(4)])
    report = validate_dataset(path)
    assert report.summary["numbering"] == "unknown"
    assert messages(report) == [
        "data: tasks disagree on checkpoint numbering: 3 fit only after_action (1, 2, 3); 1 fit only flagged (4)",
        "data/4/checkpoints: task 4: checkpoints fit flagged (step_k after the k-th flagged step) but most tasks "
        "use after_action (one per action, step_k after action k): missing step_3.png, step_4.png",
    ]


def test_it_reports_a_missing_checkpoints_folder(tmp_path: Path):
    """Each task needs its reference screenshots."""
    path = build(tmp_path)
    for png in (task_dir(tmp_path) / "checkpoints").iterdir():
        png.unlink()
    (task_dir(tmp_path) / "checkpoints").rmdir()
    report = validate_dataset(path)
    assert only_problem(report) == "data/1/checkpoints: task 1: missing checkpoints folder"
    assert report.summary["numbering_fits"] == {"after_action": 1, "no_checkpoints": 1}


def test_it_reports_misnamed_non_png_and_damaged_checkpoints(tmp_path: Path):
    """Checkpoints must be step_<k>.png, real PNGs, and intact."""
    path = build(tmp_path)
    folder = task_dir(tmp_path) / "checkpoints"
    (folder / "step_01.png").write_bytes(image_bytes())
    (folder / "step_1.png").write_bytes(image_bytes((320, 200), kind="JPEG"))
    (folder / "step_2.png").write_bytes(image_bytes((320, 200))[:-30])
    (folder / "notes.txt").write_text("hi")
    report = validate_dataset(path)
    assert messages(report) == [
        "data/1/checkpoints/step_01.png: task 1: is not named step_<k>.png with k a plain number",
        "data/1/checkpoints/step_1.png: task 1: is not a PNG image (found binary data)",
        "data/1/checkpoints/step_2.png: task 1: is a damaged PNG (truncated: no end chunk)",
    ]
    assert [str(w) for w in report.warnings] == ["data/1/checkpoints/notes.txt: task 1: is not a checkpoint (ignored)"]


def test_it_warns_about_a_checkpoint_of_another_size(tmp_path: Path):
    """A checkpoint not at the task's resolution is a warning, not a defect."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "checkpoints" / "step_2.png").write_bytes(image_bytes((100, 100)))
    report = validate_dataset(path)
    assert report.ok
    assert [str(w) for w in report.warnings] == [
        "data/1/checkpoints/step_2.png: task 1: is 100x100 but the task's resolution is 320x200"]


def test_it_reports_an_asset_referenced_in_the_record_but_missing(tmp_path: Path):
    """Asset names in the record (placeholder paths, anonymised names, asset lists) must exist."""
    rec = record(1, assets=["asset001.png", "logo.svg"])
    rec["action_sequence"][0]["parameters"]["description"] = "Click the cart icon (asset007.png)"
    rec["action_sequence"][2]["logical_assertion"] = "The banner __PLACEHOLDER_ASSETS_BASE_DIR__/hero%20wide.jpg shows"
    report = validate_dataset(build(tmp_path, [rec]))
    assert messages(report) == [
        "data.jsonl:1: task 1: action_sequence[0].parameters.description: "
        "asset 'asset007.png' is referenced but not in assets/",
        "data.jsonl:1: task 1: action_sequence[2].logical_assertion: "
        "asset 'hero wide.jpg' is referenced but not in assets/",
        "data.jsonl:1: task 1: assets[1]: asset 'logo.svg' is referenced but not in assets/",
    ]


def test_it_reports_an_asset_referenced_in_reference_data_but_missing(tmp_path: Path):
    """Reference data naming an asset that is not there is a defect."""
    path = build(tmp_path, [record(1)])
    reference = {"url": "http://iwr.test/", "scroll": [0, 0], "viewport": [320, 200], "text": "Hi",
                 "blocks": [{"text": "Hi", "box": [0, 0, 10, 10], "color": [0, 0, 0], "bg": [255, 255, 255],
                             "image": "/__assets__/asset002.png"}]}
    (task_dir(tmp_path) / "reference").mkdir()
    (task_dir(tmp_path) / "reference" / "step_1.json").write_text(json.dumps(reference), encoding="utf-8")
    report = validate_dataset(path)
    assert only_problem(report) == (
        "data/1/reference/step_1.json: task 1: blocks[0].image: asset 'asset002.png' is referenced but not in assets/")
    assert report.summary["files"]["references"] == 1


def test_it_reports_malformed_reference_data(tmp_path: Path):
    """Reference data must follow its schema."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "reference").mkdir()
    (task_dir(tmp_path) / "reference" / "step_2.json").write_text(json.dumps(
        {"url": "u", "scroll": [0], "viewport": [320, 200], "text": "x", "blocks": [{"text": "a", "box": [0, 0, 1, 1],
                                                                                      "color": [0, 0, 300]}]}))
    assert messages(validate_dataset(path)) == [
        "data/1/reference/step_2.json: task 1: scroll: expected [x, y] numbers, got an array ([0])",
        "data/1/reference/step_2.json: task 1: blocks[0].color: expected [r, g, b] integers 0..255, "
        "got an array ([0, 0, 300])",
        "data/1/reference/step_2.json: task 1: blocks[0].bg: missing (expected [r, g, b] integers 0..255)",
    ]


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("tool.exe", b"MZ\x90\x00" + bytes(60),
     ".exe is not an accepted asset type (a Windows executable; accepted: "
     "avif, bmp, gif, ico, jpeg, jpg, mp4, png, svg, webm, webp)"),
    ("page.html", b"<!DOCTYPE html><html></html>",
     ".html is not an accepted asset type (an HTML document; accepted: "
     "avif, bmp, gif, ico, jpeg, jpg, mp4, png, svg, webm, webp)"),
    ("app.js", b"alert(1)",
     ".js is not an accepted asset type (text; accepted: avif, bmp, gif, ico, jpeg, jpg, mp4, png, svg, webm, webp)"),
    ("asset002.png", b"<html><script>alert(1)</script></html>",
     "is not an image or video: the content is an HTML document"),
    ("asset003.gif", b"GIF89a" + bytes(20), "is not a readable GIF image"),
])
def test_it_reports_a_non_image_asset(tmp_path: Path, name: str, content: bytes, expected: str):
    """Only images, SVG and videos are accepted, judged by their first bytes."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "assets" / name).write_bytes(content)
    assert only_problem(validate_dataset(path)) == f"data/1/assets/{name}: task 1: {expected}"


def test_it_accepts_every_image_and_video_kind(tmp_path: Path):
    """png, jpg, gif, webp, svg, ico, mp4 and webm assets pass (magic bytes checked)."""
    path = build(tmp_path, [record(1)])
    assets = task_dir(tmp_path) / "assets"
    files = {"a.jpg": image_bytes(kind="JPEG"), "b.gif": image_bytes(kind="GIF"), "c.webp": image_bytes(kind="WEBP"),
             "d.svg": SVG, "e.ico": image_bytes((16, 16), kind="ICO"), "f.mp4": FAKE_MP4, "g.webm": FAKE_WEBM}
    for name, content in files.items():
        (assets / name).write_bytes(content)
    report = validate_dataset(path)
    assert report.ok and report.warnings == []
    assert [sniff(content) for content in files.values()] == ["jpeg", "gif", "webp", "svg", "ico", "mp4", "webm"]


def test_it_warns_when_an_asset_extension_hides_another_image_kind(tmp_path: Path):
    """A JPEG saved as .png works in a browser, so it is only a warning."""
    path = build(tmp_path, [record(1)])
    (task_dir(tmp_path) / "assets" / "asset009.png").write_bytes(image_bytes(kind="JPEG"))
    report = validate_dataset(path)
    assert report.ok
    assert [str(w) for w in report.warnings] == [
        "data/1/assets/asset009.png: task 1: holds JPEG data under a .png name"]


def test_it_reports_a_symbolic_link_in_a_task(tmp_path: Path):
    """A link could expose files outside the task to the judged page."""
    path = build(tmp_path, [record(1)])
    (tmp_path / "secret.png").write_bytes(image_bytes())
    os.symlink(tmp_path / "secret.png", task_dir(tmp_path) / "assets" / "asset005.png")
    assert only_problem(validate_dataset(path)) == (
        "data/1/assets/asset005.png: task 1: is a symbolic link (not allowed: it could expose files outside the task)")


def test_a_fifo_among_the_assets_is_reported_without_hanging(tmp_path: Path):
    """Special files are never opened (a FIFO would block the reader)."""
    path = build(tmp_path, [record(1)])
    os.mkfifo(task_dir(tmp_path) / "assets" / "asset006.png")
    assert only_problem(validate_dataset(path)) == "data/1/assets/asset006.png: task 1: is not a regular file"


def test_it_reports_oversize_files(tmp_path: Path):
    """Each size limit applies to its kind of file and is configurable."""
    path = build(tmp_path, [record(1)])
    limits = Limits(video_bytes=40, asset_bytes=50, checkpoint_bytes=100_000, image_pixels=60_000)
    report = validate_dataset(path, limits=limits)
    assert messages(report)[:2] == [
        "data/1/video.mp4: task 1: is 44 bytes, over the limit of 40 bytes",
        f"data/1/assets/asset001.png: task 1: is {len(image_bytes())} bytes, over the limit of 50 bytes",
    ]
    assert messages(report)[2] == "data/1/checkpoints/step_0.png: task 1: has 64,000 pixels, over the limit of 60,000"
    assert len(report.problems) == 7  # and every other checkpoint


def test_it_reports_an_oversize_data_jsonl(tmp_path: Path):
    """The task file itself has a size limit."""
    path = build(tmp_path, [record(1)])
    assert only_problem(validate_dataset(path, Limits(jsonl_bytes=100))).startswith(
        "data.jsonl: is 942 bytes, over the limit of 100 bytes")


def test_it_reports_all_problems_at_once(tmp_path: Path):
    """Several defects in several files are all listed, in file order."""
    rec = record(1)
    del rec["action_sequence"][1]["parameters"]["text"]
    path = build(tmp_path, [rec, record(2)])
    (task_dir(tmp_path, "2") / "video.mp4").unlink()
    (task_dir(tmp_path) / "assets" / "x.exe").write_bytes(b"MZ")
    report = validate_dataset(path)
    assert [p.code for p in report.problems] == ["type_without_text", "asset_type", "missing_video"]


def test_problems_are_structured_data(tmp_path: Path):
    """Each problem exposes file, line, task, field and message for the importer."""
    rec = record("x")
    del rec["action_sequence"][1]["parameters"]["text"]
    problem = validate_dataset(build(tmp_path, [rec])).to_dict()["problems"][0]
    assert problem == {"message": "Type action has no text to type", "code": "type_without_text",
                       "file": "data.jsonl", "line": 1, "task": "x", "field": "action_sequence[1].parameters.text",
                       "severity": "error"}


def test_it_warns_about_folders_no_task_claims(tmp_path: Path):
    """A folder in data/ with no record is a warning."""
    path = build(tmp_path, [record(1)])
    (tmp_path / "data" / "99").mkdir()
    report = validate_dataset(path)
    assert report.ok and [str(w) for w in report.warnings] == ["data/99: matches no task in the jsonl file"]


# -- garbage in -----------------------------------------------------------------------


@pytest.mark.parametrize(("content", "expected"), [
    (b"", ["data.jsonl: is empty: a task set needs one JSON object per line"]),
    (b"\n  \n", ["data.jsonl: is empty: a task set needs one JSON object per line"]),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["data.jsonl: is a binary file, not JSON Lines text"]),
    (b'[]\n3\n"x"\nnull\ntrue\n', [
        "data.jsonl:1: expected a JSON object (one task per line), got an array",
        "data.jsonl:2: expected a JSON object (one task per line), got a number",
        "data.jsonl:3: expected a JSON object (one task per line), got a string",
        "data.jsonl:4: expected a JSON object (one task per line), got null",
        "data.jsonl:5: expected a JSON object (one task per line), got a boolean"]),
    (b'{"id": NaN}\n{"id": 1}\xff\n', [
        "data.jsonl:1: not valid JSON: NaN is not valid JSON",
        "data.jsonl:2: is not UTF-8 text (byte 10)"]),
    (b"{}\n", ["data.jsonl:1: id: missing (expected a string or an integer)",
               "data.jsonl:1: classification: missing (expected an object)",
               "data.jsonl:1: action_sequence: missing (expected an array of actions)"]),
])
def test_garbage_input_is_reported_not_crashed_on(tmp_path: Path, content: bytes, expected: list[str]):
    """Empty, binary, non-object and non-UTF-8 input each give a specific problem."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(content)
    assert messages(validate_dataset(path)) == expected


def test_a_directory_instead_of_the_file_is_reported(tmp_path: Path):
    """Passing the folder names the file that was probably meant."""
    build(tmp_path)
    assert only_problem(validate_dataset(tmp_path)) == (
        f"{tmp_path.name}: is a directory, not a data.jsonl file; did you mean {tmp_path / 'data.jsonl'}?")


def test_a_missing_file_is_reported(tmp_path: Path):
    """A path that does not exist is one problem."""
    assert only_problem(validate_dataset(tmp_path / "none.jsonl")) == "none.jsonl: does not exist"


def test_a_flood_of_bad_lines_is_capped(tmp_path: Path):
    """Thousands of bad lines give a bounded report that says how many were left out."""
    path = tmp_path / "data.jsonl"
    path.write_text("x\n" * 3000, encoding="utf-8")
    report = validate_dataset(path, Limits(max_problems=50))
    assert len(report.problems) == 51 and str(report.problems[-1]) == "2950 more problems not listed"


# -- command line ---------------------------------------------------------------------


def test_cli_exits_zero_and_prints_the_summary_for_a_valid_set(tmp_path: Path, capsys):
    """`validate` prints the summary and exits 0 on a valid set."""
    assert main(["validate", "--data", str(build(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "2 tasks, 8 actions" in out and "checkpoint numbering: after_action" in out


def test_cli_exits_non_zero_and_names_each_problem(tmp_path: Path, capsys):
    """A defect makes the exit status 1 and is printed with its location."""
    path = build(tmp_path)
    (task_dir(tmp_path) / "video.mp4").unlink()
    assert main(["validate", "--data", str(path)]) == 1
    out = capsys.readouterr().out
    assert "  data/1/video.mp4: task 1: missing video" in out and out.rstrip().endswith("INVALID: 1 problem")


def test_cli_json_prints_a_machine_readable_report(tmp_path: Path, capsys):
    """--json puts the structured report on stdout and the text on stderr."""
    path = build(tmp_path)
    (task_dir(tmp_path) / "video.mp4").unlink()
    assert main(["validate", "--data", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["ok"] is False and report["summary"]["tasks"] == 2
    assert report["problems"][0]["file"] == "data/1/video.mp4" and report["problems"][0]["task"] == "1"
    assert "INVALID" in captured.err


def test_cli_limits_are_configurable(tmp_path: Path, capsys):
    """--limit changes a limit; an unknown limit name is a usage error."""
    path = build(tmp_path)
    assert main(["validate", "--data", str(path), "--limit", "video=0.00001"]) == 1
    assert "over the limit of 10 bytes" in capsys.readouterr().out
    assert main(["validate", "--data", str(path), "--limit", "vidoe=3"]) == 2
    assert "error: unknown limit 'vidoe'" in capsys.readouterr().err


def test_cli_on_garbage_prints_no_traceback(tmp_path: Path, capsys):
    """A binary file given as data gives a one-line problem and exit 1."""
    path = tmp_path / "data.jsonl"
    path.write_bytes(os.urandom(2048) + b"\x00")
    assert main(["validate", "--data", str(path)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err and "is a binary file" in captured.out


@pytest.mark.parametrize(("line", "expected"), [
    ("[" * 5000 + "]" * 5000, "data.jsonl:1: nested deeper than 64 levels"),
    ('{"id": "a' + "\\ud800" + '"}', "data.jsonl:1: holds a lone surrogate escape, which is not valid Unicode text"),
])
def test_pathological_json_is_reported(tmp_path: Path, line: str, expected: str):
    """Very deep nesting and invalid Unicode escapes are refused cleanly."""
    path = tmp_path / "data.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert messages(validate_dataset(path)) == [expected]


def test_an_undecodable_file_name_is_reported_printably(tmp_path: Path, capsys):
    """A file name that is not UTF-8 is named with escapes, and printing it works."""
    path = build(tmp_path, [record(1)])
    os.close(os.open(os.fsencode(task_dir(tmp_path) / "assets") + b"/bad\xff.exe", os.O_CREAT | os.O_WRONLY))
    assert main(["validate", "--data", str(path), "--json"]) == 1
    problem = json.loads(capsys.readouterr().out)["problems"][0]
    assert problem["file"] == "data/1/assets/bad\\udcff.exe"


def test_asset_names_inside_web_addresses_are_not_taken_for_assets(tmp_path: Path):
    """A crawled page's own URL may contain asset-like names; they are not task assets."""
    rec = record(1, source_website="https://cdn.example.test/img/asset042.png")
    rec["action_sequence"][0]["parameters"]["description"] = "Click the logo (see https://x.test/asset043.png)"
    assert validate_dataset(build(tmp_path, [rec])).ok


def test_every_limit_has_a_command_line_name():
    """Each Limits field can be changed with --limit."""
    from dataclasses import fields

    from evaluator.dataset.files import LIMIT_OPTIONS

    assert sorted(attr for attr, _, _ in LIMIT_OPTIONS.values()) == sorted(f.name for f in fields(Limits))


def test_other_private_reference_material_is_left_alone(tmp_path: Path):
    """Files in reference/ other than step_<k>.json (the authored page) are not checked; misnamed steps warn."""
    path = build(tmp_path, [record(1)])
    site = task_dir(tmp_path) / "reference" / "site"
    site.mkdir(parents=True)
    (site / "index.html").write_text("<html></html>")
    (task_dir(tmp_path) / "reference" / "step_01.json").write_text("{}")
    report = validate_dataset(path)
    assert report.ok
    assert [str(w) for w in report.warnings] == [
        "data/1/reference/step_01.json: task 1: is not named step_<k>.json with k a plain number (ignored)"]

"""What the visual metrics derive from a reference checkpoint alone, kept between runs beside the reference OCR
(evaluator.metrics.reference): read instead of decoded, scored exactly as without it, never trusted damaged."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evaluator.cli import build_parser
from evaluator.commands import score as score_command
from evaluator.commands.ocr_cache import fill
from evaluator.dataset import load_dataset
from evaluator.judges.pixels import PAIRS
from evaluator.metrics import ocr, visual_params
from evaluator.metrics import reference as kept_module
from evaluator.metrics.checkpoint import score_checkpoint
from evaluator.metrics.ocr import OcrCache
from evaluator.metrics.reference import FOLDER, STALE_VERSION_S, KeptReferences, code_version
from evaluator.protocols import get_protocol
from evaluator.replay import ReferenceUnreadable, TaskRun, _score_one
from evaluator.runner import score
from evaluator.sandbox import bubblewrap_problem
from tests.evaluator.conftest import render_page
from tests.evaluator.test_ocr_cache import checkpoint, task_set
from tests.evaluator.test_replay import ACTIONS, GOOD_PAGE

SETTINGS = visual_params(get_protocol().params.get("visual"))  # what the replay scores with
OTHER_PAGE = ["Welcome to the Dashboard", "Weekly earnings", "Contact support"]


@pytest.fixture(autouse=True)
def _forget_pixel_changes():
    """A fill also keeps the judge's reference pixel changes in a process-wide memory: forgotten after each test,
    so that a later test's fill writes its own files (tests/evaluator/test_ocr_cache.py counts them)."""
    yield
    PAIRS.clear()


@pytest.fixture
def pictures(tmp_path) -> tuple[Path, Path]:
    """A reference checkpoint and a generated screenshot that differs from it (text, colour)."""
    ref, gen = tmp_path / "ref.png", tmp_path / "gen.png"
    render_page().save(ref)
    render_page(OTHER_PAGE, color=(150, 30, 30), dy=12).save(gen)
    return ref, gen


@pytest.fixture
def decodes(monkeypatch) -> list:
    """Every picture the kept references decode (a path or an image per decoding)."""
    calls = []
    real = kept_module.load_image
    monkeypatch.setattr(kept_module, "load_image", lambda img: calls.append(img) or real(img))
    return calls


def kept_files(cache: Path) -> list[Path]:
    return sorted((cache / FOLDER / code_version()).glob("*.bin"))


def keep(cache: Path, ref: Path, gen: Path | Image.Image, settings: dict = SETTINGS) -> tuple[dict, bool]:
    """Score ``gen`` against ``ref`` through the kept folder ``cache`` and keep what was derived: the scores, and
    whether anything new was written."""
    reference = KeptReferences(cache).open(ref, settings)
    scores = score_checkpoint(reference, gen, settings, cache=OcrCache())
    return scores, reference.keep()


def test_a_second_scoring_reads_the_kept_reference_instead_of_decoding_it(tmp_path, pictures, decodes,
                                                                          tesseract_runs):
    """The first scoring decodes and reads the reference and keeps what it derived; the next one, in a new store
    as a new job has, decodes nothing of it and runs Tesseract on the generated screenshot only."""
    ref, gen = pictures
    first = KeptReferences(tmp_path / "cache").open(ref, SETTINGS)
    expected = score_checkpoint(first, gen, SETTINGS, cache=OcrCache())
    assert not first.was_kept and decodes == [ref] and len(tesseract_runs) == 2
    assert first.keep() and len(kept_files(tmp_path / "cache")) == 1
    decodes.clear()
    tesseract_runs.clear()
    second = KeptReferences(tmp_path / "cache").open(ref, SETTINGS)
    assert second.was_kept
    assert score_checkpoint(second, gen, SETTINGS, cache=OcrCache()) == expected
    assert decodes == [] and len(tesseract_runs) == 1
    assert not second.keep()  # nothing new derived: nothing written


@pytest.mark.parametrize("gen_kind", ["other page", "blank page", "taller page", "narrower page", "same page"])
def test_scores_are_identical_with_and_without_the_kept_folder(tmp_path, pictures, gen_kind):
    """Bit for bit, on the canvas of the reference's own size and on a larger one (a taller screenshot pads the
    reference: kept in a file of its own), whether the reference side is derived, derived and kept, or read back."""
    ref, _ = pictures
    gen = {"other page": render_page(OTHER_PAGE, color=(150, 30, 30), dy=12),
           "blank page": Image.new("RGB", (1280, 720), "white"),
           "taller page": render_page(OTHER_PAGE, size=(1280, 900)),
           "narrower page": render_page(size=(900, 720)),
           "same page": render_page()}[gen_kind]
    expected = score_checkpoint(ref, gen, SETTINGS, cache=OcrCache())
    assert keep(tmp_path / "cache", ref, gen) == (expected, True)  # derived, then kept
    assert keep(tmp_path / "cache", ref, gen) == (expected, False)  # read back: nothing new to keep
    assert len(kept_files(tmp_path / "cache")) == 1


@pytest.mark.parametrize("damage", ["truncated", "byte flipped", "header changed", "empty", "another picture's"])
def test_a_damaged_file_is_ignored_and_written_again(tmp_path, pictures, decodes, damage):
    """A kept file that is cut short, altered or kept under another picture's name is not trusted: the reference
    is decoded, scores as before, and the file is written again, whole."""
    ref, gen = pictures
    cache = tmp_path / "cache"
    expected, _ = keep(cache, ref, gen)
    (path,) = kept_files(cache)
    whole = path.read_bytes()
    if damage == "another picture's":
        other = tmp_path / "other.png"
        render_page(OTHER_PAGE).save(other)
        keep(cache, other, gen)
        path.write_bytes(next(p for p in kept_files(cache) if p != path).read_bytes())
    else:
        header_at = whole.index(b'"key"')
        path.write_bytes({"truncated": whole[:len(whole) // 2],
                          "byte flipped": whole[:-40] + bytes([whole[-40] ^ 1]) + whole[-39:],
                          "header changed": whole[:header_at] + b'"kez"' + whole[header_at + 5:],
                          "empty": b""}[damage])
    decodes.clear()
    reopened = KeptReferences(cache).open(ref, SETTINGS)
    assert not reopened.was_kept and decodes == [ref]
    assert score_checkpoint(reopened, gen, SETTINGS, cache=OcrCache()) == expected
    assert reopened.keep() and path.read_bytes() == whole


def test_other_settings_engines_code_and_canvases_do_not_share_a_file(tmp_path, pictures, monkeypatch):
    """Values kept under one set of visual settings are not read under another, nor under another OCR engine or
    another version of the metrics' code."""
    ref, gen = pictures
    cache = tmp_path / "cache"
    for settings in (SETTINGS, {**SETTINGS, "global_long_side": 300}, {**SETTINGS, "pad_rgb": [0, 0, 0]}):
        keep(cache, ref, gen, settings)
    assert len(kept_files(cache)) == 3
    assert not KeptReferences(cache).open(ref, {**SETTINGS, "histogram_bins": 4}).was_kept
    assert KeptReferences(cache).open(ref, {**SETTINGS, "pad_rgb": [0, 0, 0]}).was_kept
    monkeypatch.setattr(ocr, "ocr_engine", lambda: "tesseract 9.9")
    assert not KeptReferences(cache).open(ref, SETTINGS).was_kept
    monkeypatch.undo()
    monkeypatch.setattr(kept_module, "code_version", lambda: "0123456789abcdef")
    assert not KeptReferences(cache).open(ref, SETTINGS).was_kept


def test_a_reference_prepared_under_other_settings_is_refused(pictures):
    """A reference carries the settings its values were derived under; scoring it under others would mix them."""
    ref, gen = pictures
    reference = KeptReferences(ref.parent / "cache").open(ref, SETTINGS)
    with pytest.raises(ValueError, match="other visual settings"):
        score_checkpoint(reference, gen, {**SETTINGS, "global_long_side": 300}, cache=OcrCache())


def test_a_folder_that_cannot_be_written_keeps_values_in_memory(tmp_path, pictures):
    """Where the folder cannot be written (a scoring job's read-only view), scoring goes on and nothing is kept."""
    ref, gen = pictures
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the folder would be")
    store = KeptReferences(blocked)
    reference = store.open(ref, SETTINGS)
    assert score_checkpoint(reference, gen, SETTINGS, cache=OcrCache()) == score_checkpoint(ref, gen, SETTINGS,
                                                                                            cache=OcrCache())
    assert reference.keep() is False and store.open(ref, SETTINGS).keep() is False


def test_parallel_writers_never_leave_a_half_written_file(tmp_path, pictures):
    """Workers of several jobs may keep the same reference at once: a reader meanwhile finds a whole file or none."""
    ref, gen = pictures
    derived = KeptReferences(tmp_path / "cache").open(ref, SETTINGS)
    score_checkpoint(derived, gen, SETTINGS, cache=OcrCache())
    digest, values = derived._digest, derived.values
    stop, seen, failed = threading.Event(), [], []

    def write():
        store = KeptReferences(tmp_path / "cache")
        while not stop.is_set():
            if not store.write(digest, SETTINGS, (1280, 720), values):
                failed.append("a write failed")

    writers = [threading.Thread(target=write) for _ in range(4)]
    for writer in writers:
        writer.start()
    try:
        reader = KeptReferences(tmp_path / "cache")
        for _ in range(200):
            read = reader.read(digest, SETTINGS, (1280, 720))
            seen.append(read is not None)
            if read is not None:
                assert read.keys() == values.keys() and np.array_equal(read["pixels"], values["pixels"])
    finally:
        stop.set()
        for writer in writers:
            writer.join()
    assert any(seen) and failed == []
    assert [p.name for p in (tmp_path / "cache" / FOLDER / code_version()).iterdir()] == [kept_files(
        tmp_path / "cache")[0].name]  # no temporary file left behind


def test_the_fill_keeps_every_reference_a_job_scores_once_and_removes_old_versions(tmp_path, monkeypatch):
    """The trusted fill derives each checkpoint a job may score for its own canvas, once: a later fill derives
    nothing. Folders of other code versions go once nobody has written to them for a day."""
    data = task_set(tmp_path / "set")
    cache = tmp_path / "cache"
    old, recent = cache / FOLDER / "0123456789abcdef", cache / FOLDER / "fedcba9876543210"
    for folder, age in ((old, STALE_VERSION_S + 60), (recent, 3600)):
        folder.mkdir(parents=True)
        os.utime(folder, (time.time() - age, time.time() - age))
    fill(data, cache)
    assert not old.exists() and recent.exists()
    flagged = [k for k, action in enumerate(ACTIONS, 1) if action["visual_evaluation_flag"]]
    store = KeptReferences(cache)
    assert all(store.open(checkpoint(data, k), SETTINGS).was_kept for k in (0, *flagged))
    assert len(kept_files(cache)) == 1 + len(flagged)
    monkeypatch.setattr("evaluator.metrics.checkpoint.derive_reference", lambda *_: pytest.fail("derived again"))
    fill(data, cache)


def test_a_job_scores_a_kept_reference_without_decoding_it_and_as_without_it(tmp_path, decodes):
    """The replay's checkpoint scoring with the filled folder decodes no reference and gives the same scores as
    without it; an unreadable reference is reported the same way with the folder as without."""
    data = task_set(tmp_path / "set")
    cache = tmp_path / "cache"
    fill(data, cache)
    dataset = load_dataset(data)
    gen = tmp_path / "gen.png"
    render_page(["Checkpoint number 1", "Generated text"], size=(640, 400)).save(gen)
    params = get_protocol().params

    def run(kept: KeptReferences | None) -> TaskRun:
        return TaskRun(dataset.tasks[0], None, tmp_path / "out", params, dataset.numbering, cache=OcrCache(),
                       reference_cache=OcrCache(directory=cache), kept_references=kept)

    decodes.clear()
    with_kept = _score_one(run(KeptReferences(cache)), checkpoint(data, 0), gen, None)
    assert decodes == []
    assert with_kept == _score_one(run(None), checkpoint(data, 0), gen, None)
    broken = tmp_path / "step_0.png"
    broken.write_bytes(b"not a png")
    reasons = []
    for kept in (KeptReferences(cache), None):
        with pytest.raises(ReferenceUnreadable) as raised:
            _score_one(run(kept), broken, gen, None)
        reasons.append(str(raised.value))
    assert reasons[0] == reasons[1] and "step_0.png" in reasons[0]


@pytest.mark.browser
@pytest.mark.skipif(bubblewrap_problem() is not None, reason="bubblewrap is not usable here")
def test_a_sandboxed_job_reads_the_filled_folder_and_scores_every_checkpoint_as_without_it(tmp_path):
    """``score --ocr-cache`` on a filled folder: every visual checkpoint scores as with no folder at all, and the
    job, which may only read the folder, changes no kept file."""
    data = task_set(tmp_path / "set")
    (tmp_path / "bundle" / "1").mkdir(parents=True)
    (tmp_path / "bundle" / "1" / "index.html").write_text(GOOD_PAGE)
    fill(data, tmp_path / "cache")
    before = {path: path.read_bytes() for path in (tmp_path / "cache" / FOLDER).rglob("*") if path.is_file()}
    plain = score(data, tmp_path / "bundle", tmp_path / "plain", workers=1, record_video=False)
    args = build_parser().parse_args(["score", "--data", str(data), "--bundle", str(tmp_path / "bundle"),
                                      "--out", str(tmp_path / "kept"), "--ocr-cache", str(tmp_path / "cache"),
                                      "--workers", "1", "--no-video"])
    assert score_command.run(args) == 0
    kept = json.loads((tmp_path / "kept" / "results.json").read_text())["tasks"]["1"]
    visual = [[step.get("visual") for step in task["steps"]] for task in (kept, plain["tasks"]["1"])]
    assert visual[0] == visual[1] and sum(v is not None for v in visual[0]) >= 2
    assert before == {path: path.read_bytes() for path in (tmp_path / "cache" / FOLDER).rglob("*") if path.is_file()}

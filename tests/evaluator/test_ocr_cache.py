"""The reference OCR cache scoring jobs share: filled by a trusted step from the task set alone,
read-only to the jobs, which run untrusted pages (``python -m evaluator ocr-cache``, ``score --ocr-cache``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evaluator.cli import build_parser
from evaluator.commands import score as score_command
from evaluator.commands.ocr_cache import fill
from evaluator.dataset import load_dataset
from evaluator.judges.reference import judged_pairs
from evaluator.metrics import ocr, visual_params
from evaluator.metrics.ocr import OcrCache, ocr_page
from evaluator.protocols import get_protocol
from evaluator.runner import score
from evaluator.sandbox import bubblewrap_problem, run_job
from tests.evaluator.conftest import render_page
from tests.evaluator.fixtures.dataset_builder import build_dataset, record
from tests.evaluator.test_replay import ACTIONS, GOOD_PAGE

needs_bwrap = pytest.mark.skipif(bubblewrap_problem() is not None, reason="bubblewrap is not usable here")
JOB_PARAMS = visual_params(get_protocol().params.get("visual"))  # what the replay reads references with
# Run inside the sandbox with the mounts a job gets: try to add a reading and to replace one.
PLANT = """import pathlib, sys
cache, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for name in ("planted.json", sorted(p.name for p in cache.glob("*.json"))[0]):
    try:
        (cache / name).write_text("[]"); print("WROTE", name)
    except OSError:
        print("cache read-only")
(out / "ok").write_text("1")
"""


def task_set(root: Path, actions=ACTIONS) -> Path:
    """One task whose checkpoints are distinct rendered pictures (step_k says k); returns data.jsonl."""
    data = build_dataset(root, [record(1, action_sequence=actions,
                                       recording_details={"resolution": "640x400", "environment": "desktop"})])
    for path in (root / "data" / "1" / "checkpoints").glob("step_*.png"):
        render_page([f"Checkpoint number {path.stem[5:]}", "Reference text"], size=(640, 400)).save(path)
    return data


def checkpoint(data: Path, k: int) -> Path:
    return data.parent / "data" / "1" / "checkpoints" / f"step_{k}.png"


def test_a_fill_reads_every_checkpoint_a_job_may_score_once(tmp_path, tesseract_runs):
    """The initial view and each visually checked action's checkpoint (not the others) are read once; a later
    fill decodes no picture; a job then finds every reading under the key it looks up."""
    data = task_set(tmp_path / "set")
    flagged = [k for k, action in enumerate(ACTIONS, 1) if action["visual_evaluation_flag"]]
    assert fill(data, tmp_path / "cache") == (1 + len(flagged), 1 + len(flagged))
    assert len(tesseract_runs) == 1 + len(flagged)
    dataset = load_dataset(data)
    pairs = judged_pairs(dataset.tasks[0], dataset.numbering)
    assert pairs and len(list((tmp_path / "cache").glob("pixels-*.json"))) == len(set(pairs))  # the judge's side
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ocr, "load_image", lambda *_: pytest.fail("a kept picture was decoded again"))
        assert fill(data, tmp_path / "cache") == (0, 1 + len(flagged))
    tesseract_runs.clear()
    job_view = OcrCache(directory=tmp_path / "cache")
    for k in (0, *flagged):
        assert "Checkpoint number" in ocr_page(checkpoint(data, k), JOB_PARAMS, job_view).text
    assert tesseract_runs == []
    unflagged = next(k for k in range(1, len(ACTIONS) + 1) if k not in flagged)
    ocr_page(checkpoint(data, unflagged), JOB_PARAMS, job_view)
    assert len(tesseract_runs) == 1  # never filled: no job compares against it


def test_a_fill_for_the_official_protocol_keeps_only_the_readings(tmp_path, tesseract_runs):
    """Under iwr-official the LLM judges assertions and its own models score checkpoints: the fill reads the
    checkpoints and keeps neither the deterministic judge's pixel changes nor the visual metrics' reference side
    (it failed on the official protocol's params before)."""
    data = task_set(tmp_path / "set")
    flagged = [k for k, action in enumerate(ACTIONS, 1) if action["visual_evaluation_flag"]]
    assert fill(data, tmp_path / "cache", protocol="iwr-official") == (1 + len(flagged), 1 + len(flagged))
    assert list((tmp_path / "cache").glob("pixels-*.json")) == []
    assert not (tmp_path / "cache" / "reference-sides").exists()


def test_a_fill_skips_a_picture_it_cannot_read_and_stops_at_its_deadline(tmp_path, tesseract_runs):
    """A damaged checkpoint costs only its own reading; past the deadline no new picture starts."""
    data = task_set(tmp_path / "set")
    checkpoint(data, 0).write_bytes(b"not a png")
    assert fill(data, tmp_path / "late", time_limit=1e-9)[0] == 0 and tesseract_runs == []
    read, total = fill(data, tmp_path / "cache")
    assert (read, total) == (total - 1, 3)


@needs_bwrap
def test_a_sandboxed_reader_of_a_read_only_cache_works_from_memory(tmp_path, capfd):
    """Inside the job sandbox the cache cannot be written: readings come from it, new ones stay in memory."""
    data = task_set(tmp_path / "set")
    fill(data, tmp_path / "cache")
    before = {path: path.read_bytes() for path in (tmp_path / "cache").rglob("*") if path.is_file()}
    code = ("import sys\nfrom PIL import Image\nfrom evaluator.metrics.ocr import OcrCache, ocr_page\n"
            "cache = OcrCache(directory=sys.argv[1])\n"
            "print(ocr_page(sys.argv[2], cache=cache).text)\n"
            "print(ocr_page(Image.new('RGB', (64, 64), 'white'), cache=cache).text or 'blank read')\n")
    out = tmp_path / "out"
    out.mkdir()
    done = run_job([sys.executable, "-c", code, str(tmp_path / "cache"), str(checkpoint(data, 0))], [out],
                   readable=[tmp_path / "cache", tmp_path / "set"], env=_env())
    assert done.returncode == 0, done.stderr_tail
    assert capfd.readouterr().out.splitlines()[-2:] == ["Checkpoint number 0 Reference text", "blank read"]
    assert before == {path: path.read_bytes() for path in (tmp_path / "cache").rglob("*") if path.is_file()}


@needs_bwrap
def test_a_read_only_folder_inside_a_writable_one_stays_read_only(tmp_path):
    """Mounts apply outer folders first: a cache kept inside the output folder is still read-only to the job,
    and an output folder inside the read-only code folder is still writable."""
    cache, out = tmp_path / "out" / "cache", tmp_path / "out"
    cache.mkdir(parents=True)
    (cache / "entry.json").write_text("[]")
    done = run_job([sys.executable, "-c", PLANT, str(cache), str(out)], [out], readable=[cache])
    assert done.returncode == 0, done.stderr_tail
    assert (out / "ok").read_text() == "1" and not (cache / "planted.json").exists()
    inner = tmp_path / "code" / "results"
    inner.mkdir(parents=True)
    assert run_job(["touch", str(inner / "x")], [inner], readable=[tmp_path / "code"]).returncode == 0
    assert (inner / "x").exists()


@needs_bwrap
def test_score_fills_the_cache_beside_the_job_and_the_job_cannot_write_it(tmp_path, monkeypatch, capfd):
    """``score --ocr-cache`` fills the cache while the job runs; with the very mounts the job gets, neither a
    new reading nor a replaced one can be written."""
    data = task_set(tmp_path / "set")
    (tmp_path / "bundle" / "1").mkdir(parents=True)
    (tmp_path / "bundle" / "1" / "index.html").write_text(GOOD_PAGE)
    cache, out = tmp_path / "cache", tmp_path / "out"
    fill(data, cache, task_keys=["1"], time_limit=0)  # creates the folder and reads nothing
    (cache / "kept.json").write_text("[]")  # an entry already there for the job to try to replace
    seen = {}

    def plant_instead(argv, writable, **kwargs):
        seen["readable"] = kwargs.get("readable")
        return run_job([sys.executable, "-c", PLANT, str(cache), str(out)], writable, **kwargs)

    monkeypatch.setattr("evaluator.sandbox.run_job", plant_instead)
    monkeypatch.delenv("IWR_SANDBOX_ACTIVE", raising=False)
    args = build_parser().parse_args(["score", "--data", str(data), "--bundle", str(tmp_path / "bundle"),
                                      "--out", str(out), "--ocr-cache", str(cache), "--workers", "1"])
    assert score_command.run(args) == 0
    assert cache.resolve() in seen["readable"]
    assert capfd.readouterr().out.count("cache read-only") == 2 and (out / "ok").exists()
    assert not (cache / "planted.json").exists() and (cache / "kept.json").read_text() == "[]"
    # The fill ran beside the job and is finished when score returns: the initial view and the two
    # visually checked actions are kept.
    assert fill(data, cache) == (0, 3)


@pytest.mark.browser
@needs_bwrap
def test_scores_with_the_read_only_cache_equal_scores_without_it(tmp_path):
    """The CLI with a filled, read-only cache scores exactly as a run with no cache at all."""
    data = task_set(tmp_path / "set")
    (tmp_path / "bundle" / "1").mkdir(parents=True)
    (tmp_path / "bundle" / "1" / "index.html").write_text(GOOD_PAGE)
    plain = score(data, tmp_path / "bundle", tmp_path / "plain", workers=1, record_video=False)
    args = build_parser().parse_args(["score", "--data", str(data), "--bundle", str(tmp_path / "bundle"),
                                      "--out", str(tmp_path / "cached"), "--ocr-cache", str(tmp_path / "cache"),
                                      "--workers", "1", "--no-video"])
    assert score_command.run(args) == 0
    cached = json.loads((tmp_path / "cached" / "results.json").read_text())
    fields = ("ifs", "vfs", "final", "low_level", "high_level", "steps_passed")
    assert {f: cached["tasks"]["1"][f] for f in fields} == {f: plain["tasks"]["1"][f] for f in fields}
    assert plain["tasks"]["1"]["steps_passed"] >= 1


def _env() -> dict:
    import os

    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root}

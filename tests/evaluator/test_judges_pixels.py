"""Pixel change for the assertion judge: the same fractions as the plain numpy formula, each picture
decoded once, reference pairs kept between runs."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from evaluator.judges import pixels
from evaluator.judges.pixels import PAIRS, SCALED, ScaledMemo, pair_fraction, pixel_change_fraction
from evaluator.judges.reference import judged_pairs, keep_pixel_changes, reference_delta
from evaluator.metrics.ocr import OcrCache
from evaluator.replay import TaskRun, _reference_delta
from tests.evaluator.conftest import BENCHMARK, render_page, sample_checkpoints


def numpy_fraction(png_a: bytes, png_b: bytes, scale: float = 0.5, tolerance: float = 24) -> float:
    """The formula the judge has always used: decode, box-scale, int16 difference, largest channel."""
    a, b = (Image.open(io.BytesIO(data)).convert("RGB") for data in (png_a, png_b))
    if a.size != b.size:
        return 1.0
    if scale != 1:
        size = (max(1, round(a.width * scale)), max(1, round(a.height * scale)))
        a, b = a.resize(size, Image.Resampling.BOX), b.resize(size, Image.Resampling.BOX)
    diff = np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max(axis=2)
    return float((diff > tolerance).mean())


def png(img: Image.Image) -> bytes:
    buffer = io.BytesIO()
    img.save(buffer, format="PNG")
    return buffer.getvalue()


def noisy(size, seed: int, mode: str = "RGB") -> Image.Image:
    """Random pixels around mid-grey: many differences sit right at the tolerance."""
    rng = np.random.default_rng(seed)
    pixels_ = rng.integers(80, 176, size=(size[1], size[0], 4), dtype=np.uint8)
    image = Image.fromarray(pixels_, "RGBA")
    return image if mode == "RGBA" else image.convert("RGB").convert(mode)


@pytest.fixture(autouse=True)
def fresh_memory():
    """Each test starts as a new process would: nothing decoded, no pair fraction remembered."""
    SCALED.clear()
    PAIRS.clear()
    yield
    SCALED.clear()
    PAIRS.clear()


class PairTask:
    """A task with two checkpoint files and their authored text, as evaluator.dataset gives it."""

    def __init__(self, root: Path, first: bytes, second: bytes):
        self.root = root
        (root / "step_0.png").write_bytes(first)
        (root / "step_1.png").write_bytes(second)

    def checkpoint_path(self, k):
        return self.root / f"step_{k}.png"

    def load_reference(self, k):
        return {"text": f"Step {k} of the reference", "url": "http://iwr.test/", "scroll": [0, 0]}


# --------------------------------------------------------------------------- same numbers


def test_it_matches_the_numpy_formula_on_crafted_pairs():
    """Noise, small moves, odd sizes, other colour modes, scales and tolerances: identical floats."""
    cases = [(noisy((97, 61), 1), noisy((97, 61), 2)),
             (noisy((64, 48), 3, "RGBA"), noisy((64, 48), 4, "P")),
             (noisy((33, 17), 5, "L"), noisy((33, 17), 6)),
             (render_page(size=(401, 303)), render_page(size=(401, 303), dx=1)),
             (render_page(size=(320, 240)), render_page(size=(320, 240), color=(60, 37, 41)))]
    for (a, b), scale, tolerance in itertools.product(cases, (0.5, 1, 0.25, 0.3), (24, 0, 23.5, 254, 255, -1)):
        want = numpy_fraction(png(a), png(b), scale, tolerance)
        got = pixel_change_fraction(png(a), png(b), scale, tolerance)
        assert type(got) is float and got == want, (a.size, scale, tolerance)
    assert any(numpy_fraction(png(a), png(b)) not in (0.0, 1.0) for a, b in cases)


def test_it_keeps_the_edge_cases():
    """Identical pictures change nothing, different sizes change everything, no picture says nothing."""
    a = png(render_page(size=(200, 100)))
    assert pixel_change_fraction(a, a) == 0.0
    assert pixel_change_fraction(a, png(render_page(size=(200, 101)))) == 1.0
    assert pixel_change_fraction(None, a) is None and pixel_change_fraction(a, None) is None
    with pytest.raises(OSError):
        pixel_change_fraction(a, b"not a png")


def test_it_matches_the_numpy_formula_on_the_sample_checkpoints():
    """Each sample task's consecutive checkpoints (real Chromium screenshots): identical floats."""
    shots = sample_checkpoints()
    assert shots, "the sample benchmark is not built (scripts/setup.sh)"
    by_task: dict[Path, list[Path]] = {}
    for path in shots:
        by_task.setdefault(path.parent, []).append(path)
    compared = 0
    for paths in by_task.values():
        ordered = sorted(paths, key=lambda path: int(path.stem.split("_")[1]))
        for first, second in itertools.pairwise(ordered[:5]):
            a, b = first.read_bytes(), second.read_bytes()
            assert pixel_change_fraction(a, b) == numpy_fraction(a, b), (first, second)
            compared += 1
    assert compared >= 30


# --------------------------------------------------------------------------- decoded once, memory bounded


def test_each_picture_is_decoded_once(monkeypatch):
    """The after-state of step k is the before-state of step k + 1: it is not decoded again."""
    decoded = []
    real = pixels._decode
    monkeypatch.setattr(pixels, "_decode", lambda data, scale: decoded.append(data) or real(data, scale))
    shots = [png(render_page(size=(300, 200), dy=dy)) for dy in (0, 4, 8)]
    pixel_change_fraction(shots[0], shots[1])
    pixel_change_fraction(shots[1], shots[2])
    assert decoded == shots
    pixel_change_fraction(shots[1], shots[2], scale=1)  # another scale is another picture
    assert len(decoded) == 5


def test_the_memo_is_bounded_in_count_and_bytes():
    """Old pictures go first; a picture larger than the whole budget is never kept."""
    memo = ScaledMemo(max_entries=3, max_bytes=200 * 100 * 4 * 2)
    shots = [png(noisy((400, 200), seed)) for seed in range(5)]
    for shot in shots:
        memo.get(shot, 0.5)  # 200 x 100 each once scaled
        assert len(memo) <= 2 and memo.nbytes <= memo.max_bytes
    assert memo.get(shots[-1], 0.5) is memo.get(shots[-1], 0.5)
    memo.get(png(noisy((400, 400), 9)), 1)
    assert len(memo) == 2 and memo.nbytes <= memo.max_bytes
    counted = ScaledMemo(max_entries=3)
    for shot in shots:
        counted.get(shot, 0.5)
    assert len(counted) == 3


def test_the_default_memo_holds_a_few_full_hd_screenshots_at_most():
    """1920x1080 screenshots at half scale: the shared memo stays within its byte budget."""
    for shade in range(SCALED.max_entries + 2):
        pixel_change_fraction(png(Image.new("RGB", (1920, 1080), (shade, 0, 0))),
                              png(Image.new("RGB", (1920, 1080), (0, shade, 0))))
    assert 0 < len(SCALED) <= SCALED.max_entries and SCALED.nbytes <= SCALED.max_bytes


# --------------------------------------------------------------------------- reference pairs kept


def _kept_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("pixels-*.json"))


def _forbid_computing(monkeypatch):
    def refuse(*args):
        raise AssertionError("computed although kept")

    monkeypatch.setattr(pixels, "pixel_change_fraction", refuse)


def test_a_kept_pair_is_read_back_in_a_new_run(tmp_path, monkeypatch):
    """The first run writes one small file per pair; the next run (fresh memory) reads it instead."""
    task = PairTask(tmp_path, png(render_page(size=(320, 240))), png(render_page(size=(320, 240), dy=3)))
    kept = tmp_path / "kept"
    first = pair_fraction(task.checkpoint_path(0), task.checkpoint_path(1), 0.5, 24, kept)
    assert first == numpy_fraction(task.checkpoint_path(0).read_bytes(), task.checkpoint_path(1).read_bytes())
    assert len(_kept_files(kept)) == 1 and first > 0
    PAIRS.clear()
    _forbid_computing(monkeypatch)
    assert pair_fraction(task.checkpoint_path(0), task.checkpoint_path(1), 0.5, 24, kept) == first
    assert not list(kept.glob("*.tmp"))


def test_a_changed_picture_or_parameter_is_computed_again(tmp_path):
    """The key holds both pictures' digests and the parameters: nothing stale is reused."""
    task = PairTask(tmp_path, png(render_page(size=(320, 240))), png(render_page(size=(320, 240), dy=3)))
    kept = tmp_path / "kept"
    before, after = task.checkpoint_path(0), task.checkpoint_path(1)
    first = pair_fraction(before, after, 0.5, 24, kept)
    assert pair_fraction(before, after, 0.5, 200, kept) < first
    assert pair_fraction(before, after, 1, 24, kept) != first
    after.write_bytes(before.read_bytes())
    PAIRS.clear()
    assert pair_fraction(before, after, 0.5, 24, kept) == 0.0
    assert len(_kept_files(kept)) == 4


def test_a_damaged_kept_file_is_computed_again_and_rewritten(tmp_path):
    """Half-written, foreign or out-of-range contents are ignored and replaced."""
    task = PairTask(tmp_path, png(render_page(size=(320, 240))), png(render_page(size=(320, 240), dx=5)))
    kept = tmp_path / "kept"
    want = pair_fraction(task.checkpoint_path(0), task.checkpoint_path(1), 0.5, 24, kept)
    (path,) = _kept_files(kept)
    for damage in ('{"fraction": 0.', "[1, 2]", '{"fraction": 7.5}', '{"fraction": "0.1"}', ""):
        path.write_text(damage)
        PAIRS.clear()
        assert pair_fraction(task.checkpoint_path(0), task.checkpoint_path(1), 0.5, 24, kept) == want
        assert json.loads(path.read_text()) == {"fraction": want}


def test_a_read_only_folder_costs_nothing_but_speed(tmp_path):
    """A folder that cannot be written still gives the fraction."""
    task = PairTask(tmp_path, png(render_page(size=(120, 90))), png(render_page(size=(120, 90), dx=9)))
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    fraction = pair_fraction(task.checkpoint_path(0), task.checkpoint_path(1), 0.5, 24, blocked)
    assert fraction == numpy_fraction(task.checkpoint_path(0).read_bytes(), task.checkpoint_path(1).read_bytes())


def test_the_replay_keeps_reference_pairs_beside_the_reference_ocr(tmp_path, monkeypatch):
    """A run with a kept OCR folder stores the pair there; the next run reads it and scores the same."""
    task = PairTask(tmp_path, png(render_page(size=(320, 240))), png(render_page(size=(320, 240), dy=7)))
    task.flagged_steps = [1]
    kept = tmp_path / "ocr-cache"
    run = TaskRun(task, None, tmp_path / "out", {}, reference_cache=OcrCache(directory=kept))
    first = _reference_delta(run, 1)
    assert first.detail["pixel_fraction"] == round(numpy_fraction(*(task.checkpoint_path(k).read_bytes()
                                                                     for k in (0, 1))), 6) > 0
    assert len(_kept_files(kept)) == 1
    PAIRS.clear()
    _forbid_computing(monkeypatch)
    flagged = TaskRun(task, None, tmp_path / "out", {}, numbering="flagged", reference_cache=OcrCache(directory=kept))
    assert _reference_delta(flagged, 1).to_dict() == first.to_dict()
    assert reference_delta(task, 1, {}, {}, cache_dir=kept).changed is first.changed is True


def test_without_a_folder_reference_pairs_stay_in_memory(tmp_path):
    """No kept OCR folder: nothing is written, and the pair is computed once per process."""
    task = PairTask(tmp_path, png(render_page(size=(200, 150))), png(render_page(size=(200, 150), dx=2)))
    run = TaskRun(task, None, tmp_path / "out", {})
    SCALED.clear()
    first = _reference_delta(run, 1).detail["pixel_fraction"]
    decoded = len(SCALED)
    SCALED.clear()
    assert _reference_delta(run, 1).detail["pixel_fraction"] == first and decoded == 2
    assert len(SCALED) == 0  # read from the remembered pair, not decoded again
    assert not [p for p in tmp_path.rglob("pixels-*.json")]


def test_the_random_crafted_pairs_agree_at_the_protocol_parameters():
    """Many random small edits of one page, shades near the tolerance, at the protocol's parameters."""
    rng = random.Random(7)
    base = render_page(size=(257, 191))
    for _ in range(40):
        edited = base.copy()
        draw = ImageDraw.Draw(edited)
        x, y = rng.randrange(250), rng.randrange(185)
        shade = (255 - rng.choice((23, 24, 25, 26, 200)),) * 3  # around the tolerance, on white
        draw.rectangle([x, y, x + rng.randrange(1, 30), y + rng.randrange(1, 20)], fill=shade)
        assert pixel_change_fraction(png(base), png(edited)) == numpy_fraction(png(base), png(edited))


# --------------------------------------------------------------------------- filled before the job


class Step:
    def __init__(self, assertion: str | None, flagged: bool):
        self.logical_assertion, self.visual_evaluation_flag = assertion, flagged


def test_the_listed_pairs_are_the_ones_the_replay_compares(tmp_path, monkeypatch):
    """Under both numberings, judged_pairs names exactly the checkpoints the replay asks for."""
    import evaluator.judges.reference as reference

    task = PairTask(tmp_path, png(render_page(size=(80, 60))), png(render_page(size=(80, 60), dx=1)))
    task.actions = [Step("A", True), Step(None, True), Step("B", False), Step("C", True), Step("", False)]
    task.flagged_steps = [k for k, step in enumerate(task.actions, 1) if step.visual_evaluation_flag]
    asked = []
    monkeypatch.setattr(reference, "reference_delta",
                        lambda task, k, *args, before_k=None, **kw: asked.append((k - 1 if before_k is None
                                                                                   else before_k, k)))
    for numbering in ("after_action", "flagged"):
        asked.clear()
        run = TaskRun(task, None, tmp_path / "out", {}, numbering=numbering)
        for k, step in enumerate(task.actions, 1):
            if step.logical_assertion:
                _reference_delta(run, k)
        assert asked == judged_pairs(task, numbering)
    assert judged_pairs(task, "after_action") == [(0, 1), (2, 3), (3, 4)]
    assert judged_pairs(task, "flagged") == [(0, 1), (2, 3)]


def test_a_filled_folder_serves_every_pair_of_the_sample_replay(tmp_path, monkeypatch):
    """The trusted fill keeps each judged pair of the sample's test split; the replay then only reads."""
    from evaluator.dataset import load_dataset
    from evaluator.protocols import get_protocol

    data = BENCHMARK / "test" / "data.jsonl"
    assert data.is_file(), "the sample benchmark is not built (scripts/setup.sh)"
    dataset, params = load_dataset(data), get_protocol().params
    kept = tmp_path / "ocr-cache"
    filled = sum(keep_pixel_changes(task, dataset.numbering, params, kept) for task in dataset.tasks)
    # One file per distinct pair of pictures (pairs are kept by content: two judged pairs showing the very
    # same two screens share their file).
    distinct = {tuple(hashlib.sha256(task.checkpoint_path(n).read_bytes()).hexdigest() for n in (start, k))
                for task in dataset.tasks for start, k in judged_pairs(task, dataset.numbering)}
    assert filled >= len(distinct) == len(_kept_files(kept)) >= 8
    assert all(oct(path.stat().st_mode)[-3:] == "644" for path in _kept_files(kept))
    PAIRS.clear()
    _forbid_computing(monkeypatch)
    for task in dataset.tasks:
        run = TaskRun(task, None, tmp_path / "out", params, numbering=dataset.numbering,
                      reference_cache=OcrCache(directory=kept))
        for start, k in judged_pairs(task, dataset.numbering):
            pair = [task.checkpoint_path(n).read_bytes() for n in (start, k)]
            assert _reference_delta(run, k).detail["pixel_fraction"] == round(numpy_fraction(*pair), 6)
    assert len(_kept_files(kept)) == len(distinct)


def test_a_folder_that_cannot_be_written_is_not_tried_again(tmp_path, monkeypatch):
    """A scoring job's read-only view of the folder: one failed write, then memory only."""
    writes = []

    def read_only(directory, key, value):
        writes.append(key)
        raise PermissionError("read-only file system")

    monkeypatch.setattr(pixels, "_write_kept", read_only)
    shots = [png(render_page(size=(120, 90), dy=dy)) for dy in (0, 3, 6)]
    for n, shot in enumerate(shots):
        (tmp_path / f"step_{n}.png").write_bytes(shot)
    for n in (1, 2):
        want = numpy_fraction(shots[n - 1], shots[n])
        assert pair_fraction(tmp_path / f"step_{n - 1}.png", tmp_path / f"step_{n}.png", 0.5, 24, tmp_path) == want
    assert len(writes) == 1


def test_threads_share_the_memo_safely():
    """The judge and the checkpoint thread may compare at once: every thread gets the sequential answer."""
    from concurrent.futures import ThreadPoolExecutor

    shots = [png(render_page(size=(320, 200), dy=dy)) for dy in range(0, 16, 2)]
    pairs = [(shots[i], shots[j]) for i in range(len(shots)) for j in range(len(shots))] * 2
    want = [numpy_fraction(a, b) for a, b in pairs]
    SCALED.clear()
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda pair: pixel_change_fraction(*pair), pairs))
    assert got == want and len(SCALED) <= SCALED.max_entries

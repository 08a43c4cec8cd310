"""Tiny valid IWR-Bench datasets for leaderboard tests, built on the fly.

Import the fixtures you need into a test module (``from tests.leaderboard.datasets import
dev_dataset, tasks_root  # noqa: F401``). Every action description, assertion and source
website carries a unique marker (``secret_marker(...)``) so tests can assert that a
test-split secret never shows up anywhere public. Checkpoints are images of a colour
no asset uses, so their bytes are recognisable too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest
from PIL import Image

WIDTH, HEIGHT = 320, 240


def secret_marker(split: str, task_id: str | int, what: str, n: int = 0) -> str:
    return f"SECRET-{split.upper()}-{task_id}-{what}-{n}"


@pytest.fixture(scope="session")
def tiny_video(tmp_path_factory) -> Path:
    """A one-second white 64x64 H.264 mp4, made once per test session."""
    path = tmp_path_factory.mktemp("video") / "video.mp4"
    subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=white:s=64x64:d=1",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", str(path)],
        check=True, timeout=60,
    )
    return path


def make_record(task_id, split: str, n_actions: int = 2, **classification) -> dict:
    """A record with ``n_actions`` Click actions, every secret field marked."""
    labels = {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "productivity",
              "sub_domain": "todo", **classification}
    actions = [
        {"type": "Click",
         "parameters": {"description": secret_marker(split, task_id, "DESCRIPTION", n)},
         "visual_evaluation_flag": True,
         "logical_assertion": secret_marker(split, task_id, "ASSERTION", n)}
        for n in range(1, n_actions + 1)
    ]
    return {
        "id": task_id,
        "classification": labels,
        "recording_details": {"resolution": f"{WIDTH}x{HEIGHT}", "environment": "test"},
        "source_website": f"https://{secret_marker(split, task_id, 'SITE').lower()}.example/",
        "action_sequence": actions,
    }


def write_task_files(folder: Path, record: dict, video: Path, seed: int = 0) -> None:
    """The files of one task: video, one asset, one stitched image, a checkpoint per state."""
    for name in ("assets", "stitched_assets", "checkpoints", "reference"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(video, folder / "video.mp4")
    Image.new("RGB", (16, 16), (10, 200, seed % 256)).save(folder / "assets" / "asset001.png")
    Image.new("RGB", (64, 32), (240, 240, seed % 256)).save(folder / "stitched_assets" / "stitched_image1.png")
    for k in range(len(record["action_sequence"]) + 1):
        colour = (123, (seed * 7 + k) % 256, 45)
        Image.new("RGB", (WIDTH, HEIGHT), colour).save(folder / "checkpoints" / f"step_{k}.png")
        text = f"REFERENCE-TEXT-{record['id']}-{k}"
        block = {"text": text, "box": [0, 0, 100, 20], "color": [0, 0, 0], "bg": list(colour)}
        reference = {"url": "http://iwr.test/", "scroll": [0, 0], "viewport": [WIDTH, HEIGHT], "text": text,
                     "blocks": [block]}
        (folder / "reference" / f"step_{k}.json").write_text(json.dumps(reference))


def build_dataset(root: Path, records: list[dict], video: Path, name: str = "data") -> Path:
    """Write ``root/<name>.jsonl`` and ``root/<name>/<id>/...``; returns the jsonl path."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{name}.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    for n, record in enumerate(records):
        seed = zlib.crc32(str(record["id"]).encode()) + n
        write_task_files(root / name / str(record["id"]), record, video, seed=seed)
    return path


@pytest.fixture
def dataset_factory(tmp_path, tiny_video):
    """Builds a dataset of tasks with the given ids: ``dataset_factory("name", [1, 2], "dev")``."""

    def build(name: str, ids: list, split: str = "dev") -> Path:
        return build_dataset(tmp_path / name, [make_record(task_id, split) for task_id in ids], tiny_video)

    return build


@pytest.fixture
def tasks_root(settings, tmp_path) -> Path:
    """A throw-away TASKS_ROOT for the test."""
    settings.TASKS_ROOT = tmp_path / "tasks-root"
    return settings.TASKS_ROOT


@pytest.fixture
def dev_dataset(tmp_path, tiny_video) -> Path:
    """Two dev tasks (ids 101 and "dev-b") in their own folder."""
    records = [make_record(101, "dev"), make_record("dev-b", "dev", n_actions=1, domain="e-commerce")]
    return build_dataset(tmp_path / "sample" / "dev", records, tiny_video)


@pytest.fixture
def test_dataset(tmp_path, tiny_video) -> Path:
    """Two held-out tasks (ids 201 and 202)."""
    records = [make_record(201, "test", interaction_complexity="L3"), make_record(202, "test", n_actions=3)]
    return build_dataset(tmp_path / "sample" / "test", records, tiny_video)


@pytest.fixture
def imported_sample(db, tasks_root, dev_dataset, test_dataset):
    """Both datasets imported into the task set "sample"; returns the list of Task rows."""
    from leaderboard import tasksets
    from leaderboard.models import Task

    tasksets.import_dataset(dev_dataset, "dev", "sample", "Sample benchmark")
    tasksets.import_dataset(test_dataset, "test", "sample")
    return list(Task.objects.order_by("key"))

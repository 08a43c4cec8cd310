"""Task sets for scoring many pages per task in one evaluator run.

A bundle holds one page per task key, so scoring several variants of a task in one run
needs several keys for the same task: ``variant_task_set`` copies each record under the
key ``<task>@<variant>`` and links the new task folder to the original one (checkpoints,
assets and reference data are shared, nothing is copied).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# The built sample benchmark; IWR_CALIBRATION_BENCHMARK names another build (to compare two builds).
BENCHMARK = Path(os.environ.get("IWR_CALIBRATION_BENCHMARK") or REPO / "var" / "benchmark")
SPLITS = ("dev", "test")
SEPARATOR = "@"


def variant_key(task_key: str, variant: str) -> str:
    """The key a variant of a task is scored under."""
    return f"{task_key}{SEPARATOR}{variant}"


def split_key(key: str) -> tuple[str, str]:
    """(task key, variant) of a key made by :func:`variant_key`."""
    task_key, _, variant = key.rpartition(SEPARATOR)
    return task_key, variant


def benchmark_splits(benchmark: Path = BENCHMARK) -> list[Path]:
    """The data.jsonl of every split of the built sample benchmark."""
    paths = [benchmark / split / "data.jsonl" for split in SPLITS]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"sample benchmark not built ({', '.join(missing)}): run scripts/setup.sh")
    return paths


def merge_task_sets(sources: list[Path], out_dir: Path, keys: list[str] | None = None) -> Path:
    """One task set holding every task of ``sources`` (or only those named in ``keys``), task folders linked."""
    entries = []
    wanted = None if keys is None else set(keys)
    for source in sources:
        for record in _records(source):
            if wanted is not None and str(record["id"]) not in wanted:
                continue
            entries.append((record, source.parent / source.stem / str(record["id"])))
    return _write(out_dir, entries)


def variant_task_set(sources: list[Path], out_dir: Path, variants: dict[str, list[str]]) -> Path:
    """A task set with one task ``<task>@<variant>`` per variant named for each task key; returns its data.jsonl.

    ``variants`` maps a task key to the variant names wanted for it; tasks not named are left out.
    """
    entries = []
    for source in sources:
        for record in _records(source):
            key = str(record["id"])
            for variant in variants.get(key, []):
                entries.append(({**record, "id": variant_key(key, variant)}, source.parent / source.stem / key))
    return _write(out_dir, entries)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(out_dir: Path, entries: list[tuple[dict, Path]]) -> Path:
    data_dir = Path(out_dir) / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for record, folder in entries:
        (data_dir / str(record["id"])).symlink_to(folder.resolve(), target_is_directory=True)
        lines.append(json.dumps(record))
    path = Path(out_dir) / "data.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path

"""Author one task end to end: reference page, recording, assets, sheets, record.

Layout written under the dataset folder (``DATASET/data.jsonl`` names the data folder
``DATASET/data``)::

    data/<id>/video.mp4                       H.264 recording of the scripted interaction
    data/<id>/assets/assetNNN.ext             images and videos the page uses, anonymised
    data/<id>/stitched_assets/stitched_image_N.png
    data/<id>/checkpoints/step_k.png          step_0 initial view, step_k after action k
    data/<id>/metadata.json                   recording details
    data/<id>/reference/step_k.json           private: visible text and text blocks per step
    data/<id>/reference/assets.json           private: which original file each asset is
    data/<id>/reference/site/index.html       private: the reference page, a valid submission
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.authoring.reference_page import build_reference_page
from evaluator.authoring.script import AuthoringError, Script, check_task_id, load_script
from evaluator.authoring.sources import open_source
from evaluator.dataset.store import atomic_write

DATASET_FILE = "data.jsonl"


@dataclass
class AuthoredTask:
    key: str
    record: dict
    root: Path
    steps: int
    assets: list[str]
    sheets: list[Path]
    warnings: list[str] = field(default_factory=list)


def author_task(
    site: str,
    script: Path | Script,
    out_dir: Path,
    task_id: str | int | None = None,
    browser=None,
    record_video: bool = True,
    pace_ms: int | None = None,
    write_record: bool = True,
) -> AuthoredTask:
    """Record ``script`` on the page at ``site`` into the dataset folder ``out_dir``.

    ``browser`` is an open evaluator.browser.Browser (one is launched when None). With
    ``write_record`` the record replaces the task's line in ``out_dir/data.jsonl`` or is
    appended to it. Raises AuthoringError (one line) for unusable input.
    """
    from evaluator.authoring.recorder import record_steps, reset_task_folder, svg_rasterizer
    from evaluator.authoring.stitch import stitch_assets

    parsed = script if isinstance(script, Script) else load_script(Path(script))
    chosen_id = _choose_id(task_id, parsed, script)
    key = str(chosen_id)
    reference = build_reference_page(open_source(site))
    dataset_path = Path(out_dir) / DATASET_FILE
    root = reset_task_folder(dataset_path.parent / dataset_path.stem, key)
    reference.write(root / "reference" / "site", root / "assets", root / "reference" / "assets.json")
    with _browser(browser) as running:
        recording = record_steps(running, parsed, root, record_video=record_video, pace_ms=pace_ms)
        with svg_rasterizer(running) as rasterize:
            sheets = stitch_assets(root / "assets", root / "stitched_assets", rasterize)
    record = parsed.record(chosen_id)
    _write_metadata(root, parsed)
    if write_record:
        upsert_record(dataset_path, record)
    return AuthoredTask(
        key=key,
        record=record,
        root=root,
        steps=recording.steps,
        assets=[asset.name for asset in reference.assets],
        sheets=sheets,
        warnings=reference.warnings + recording.warnings,
    )


def _choose_id(task_id, parsed: Script, script) -> str | int:
    if task_id is not None:
        chosen = int(task_id) if isinstance(task_id, str) and task_id.isdigit() else task_id
    elif parsed.id is not None:
        chosen = parsed.id
    elif isinstance(script, Path | str):
        chosen = Path(script).stem
    else:
        raise AuthoringError("the task needs an id: give --id or put \"id\" in the script")
    check_task_id(chosen, "task")
    return chosen


@contextlib.contextmanager
def _browser(browser) -> Iterator[object]:
    if browser is not None:
        yield browser
        return
    from evaluator.browser import BrowserError, launch

    try:
        with launch() as started:
            yield started
    except BrowserError as exc:
        raise AuthoringError(str(exc)) from None


def _write_metadata(root: Path, script: Script) -> None:
    metadata = {"recording_details": {"resolution": script.resolution, "environment": script.environment}}
    (root / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")


def upsert_record(dataset_path: Path, record: dict) -> None:
    """Replace the line of the task with the same id, or append; written atomically."""
    key = str(record["id"])
    lines = dataset_path.read_text(encoding="utf-8").splitlines() if dataset_path.exists() else []
    out, replaced = [], False
    for line in lines:
        if line.strip() and _line_key(line) == key:
            if not replaced:
                out.append(json.dumps(record, ensure_ascii=False))
            replaced = True
        elif line.strip():
            out.append(line)
    if not replaced:
        out.append(json.dumps(record, ensure_ascii=False))
    write_lines(dataset_path, out)


def write_lines(path: Path, lines: list[str]) -> None:
    atomic_write(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def _line_key(line: str) -> str | None:
    try:
        value = json.loads(line)
    except json.JSONDecodeError:
        return None
    return str(value.get("id")) if isinstance(value, dict) else None

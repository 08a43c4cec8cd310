"""``python -m evaluator job JOB_DIR``: the evaluator container's entry point.

It scores exactly what ``JOB_DIR/job.json`` describes and writes ``JOB_DIR/out/``:

    {"data": "data/data.jsonl",      # relative to JOB_DIR
     "bundle": "bundle.zip",         # zip or folder, relative to JOB_DIR
     "tasks": ["1", "2"] | null,     # default: every task of the data set
     "protocol": "iwr-det",
     "workers": 2 | null,
     "ocr_cache": "/ocr-cache" | null,   # a reference OCR cache mounted read-only (absolute)
     "official": {...} | null}           # protocol iwr-official: the judge relay's settings, below

Paths may not leave JOB_DIR, except the OCR cache: a mount of its own, filled outside the job.

``official`` is plain data, never a key: the judge relay holds the key outside the container and
listens on a Unix socket mounted at /judge (``python -m evaluator container-job`` writes it):

    {"socket": "/judge/judge.sock",   # under the judge mount
     "judge_model": "ID", "grounding_model": "ID" | null,   # null: the judge model grounds too
     "host": "api.example.com",       # the endpoint's host, for the judge record
     "visual": {"weights": "/weights", "sha256": {"file": "sum"}, "device": "cpu"}
             | {"factory": "module:callable", "device": "cpu"}}   # other visual models (tests)
This is the same code path as ``python -m evaluator score``; inside the container the container
itself is the process sandbox.
"""

from __future__ import annotations

import argparse
import json
import logging
import posixpath
import re
import sys
from pathlib import Path

from evaluator.cli import UsageError
from evaluator.container import JUDGE_MOUNT, WEIGHTS_MOUNT

KNOWN_KEYS = {"data", "bundle", "tasks", "protocol", "workers", "ocr_cache", "official"}
OFFICIAL_KEYS = {"socket", "judge_model", "grounding_model", "host", "visual"}
VISUAL_KEYS = {"weights", "sha256", "device", "factory"}
FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "job", help="score the job described by JOB_DIR/job.json (the evaluator container's entry point)",
        description="Read JOB_DIR/job.json, score the bundle on the task data, write JOB_DIR/out/results.json.")
    parser.add_argument("job_dir", type=Path, help="job directory holding job.json")
    parser.set_defaults(func=run)


def read_job(job_dir: Path) -> dict:
    """Parse and check job.json; every problem is a one-line UsageError."""
    path = job_dir / "job.json"
    try:
        job = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(job, dict):
        raise UsageError(f"{path}: expected a JSON object")
    unknown = set(job) - KNOWN_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("data", "bundle"):
        if not isinstance(job.get(key), str):
            raise UsageError(f"{path}: field {key!r} must be a path relative to the job directory")
        job[key] = _inside(job_dir, job[key], key)
    tasks = job.get("tasks")
    if tasks is not None and not (isinstance(tasks, list) and all(isinstance(t, str | int) for t in tasks)):
        raise UsageError(f"{path}: field 'tasks' must be a list of task ids or null")
    workers = job.get("workers")
    if workers is not None and not (isinstance(workers, int) and workers >= 1):
        raise UsageError(f"{path}: field 'workers' must be a positive integer or null")
    cache = job.get("ocr_cache")
    if cache is not None and not (isinstance(cache, str) and Path(cache).is_absolute() and Path(cache).is_dir()):
        raise UsageError(f"{path}: field 'ocr_cache' must be an existing folder's absolute path or null")
    _check_official(path, job)
    return job


def _check_official(path: Path, job: dict) -> None:
    """The ``official`` object: present exactly for protocol iwr-official, every field of the right form."""
    official, protocol = job.get("official"), str(job.get("protocol") or "iwr-det")
    is_official = protocol == "iwr-official" or protocol.startswith("iwr-official-")
    if official is None:
        if is_official:
            raise UsageError(f"{path}: protocol {protocol} needs the field 'official' (the judge relay's settings)")
        return
    if not is_official:
        raise UsageError(f"{path}: field 'official' is only for protocol iwr-official, not {protocol}")
    if not isinstance(official, dict):
        raise UsageError(f"{path}: field 'official' must be an object or null")
    unknown = set(official) - OFFICIAL_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown field(s) official.{', official.'.join(sorted(unknown))}")
    if not _under(official.get("socket"), JUDGE_MOUNT, itself=False):
        raise UsageError(f"{path}: field 'official.socket' must be an absolute path under {JUDGE_MOUNT}/")
    if not _text(official.get("judge_model")):
        raise UsageError(f"{path}: field 'official.judge_model' must be the judge's model id")
    if official.get("grounding_model") is not None and not _text(official["grounding_model"]):
        raise UsageError(f"{path}: field 'official.grounding_model' must be a model id or null")
    if not isinstance(official.get("host"), str):
        raise UsageError(f"{path}: field 'official.host' must be the judge endpoint's host name")
    _check_visual(path, official.get("visual"))


def _check_visual(path: Path, visual) -> None:
    if not isinstance(visual, dict):
        raise UsageError(f"{path}: field 'official.visual' must be an object")
    unknown = set(visual) - VISUAL_KEYS
    if unknown:
        raise UsageError(f"{path}: unknown field(s) official.visual.{', official.visual.'.join(sorted(unknown))}")
    if visual.get("device", "cpu") not in ("cpu", "cuda"):
        raise UsageError(f"{path}: field 'official.visual.device' must be cpu or cuda")
    if "factory" in visual:
        if not (isinstance(visual["factory"], str) and FACTORY.fullmatch(visual["factory"])):
            raise UsageError(f"{path}: field 'official.visual.factory' must read module:callable")
        return
    if not _under(visual.get("weights"), WEIGHTS_MOUNT, itself=True):
        raise UsageError(f"{path}: field 'official.visual.weights' must be {WEIGHTS_MOUNT} or a folder under it")
    sums = visual.get("sha256", {})
    if not (isinstance(sums, dict) and all(_text(k) and isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v)
                                           for k, v in sums.items())):
        raise UsageError(f"{path}: field 'official.visual.sha256' must map file names to SHA-256 sums")


def _under(value, mount: str, itself: bool) -> bool:
    """Whether ``value`` is a normalised absolute path under ``mount`` (or ``mount`` itself, when allowed)."""
    if not isinstance(value, str) or not value.startswith("/") or posixpath.normpath(value) != value:
        return False
    return value.startswith(mount + "/") or itself and value == mount


def _text(value) -> bool:
    return isinstance(value, str) and 0 < len(value.strip()) and len(value) <= 200


def official_settings(official: dict | None) -> dict | None:
    """The judge settings ``score`` takes (see evaluator.official.config.job_settings) from job.json's object."""
    if official is None:
        return None
    from evaluator.official.config import job_settings

    return job_settings(official["socket"], official["judge_model"], official.get("grounding_model"),
                        official["host"], official["visual"])


def _inside(job_dir: Path, relative: str, key: str) -> Path:
    root = job_dir.resolve()
    target = (root / relative).resolve()
    if root != target and root not in target.parents:
        raise UsageError(f"job.json field {key!r} points outside the job directory")
    if not target.exists():
        raise UsageError(f"job.json field {key!r}: {relative} does not exist in the job directory")
    return target


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    job = read_job(args.job_dir)
    official = official_settings(job.get("official"))
    if official and not Path(official["socket"]).exists():
        raise UsageError(f"no judge relay listens at {official['socket']}: is its folder mounted at {JUDGE_MOUNT}?")
    from evaluator.runner import JobError, WorkerError, score

    try:
        document = score(job["data"], job["bundle"], args.job_dir / "out", task_keys=job.get("tasks"),
                         protocol=job.get("protocol") or "iwr-det", workers=job.get("workers"),
                         ocr_cache_dir=job.get("ocr_cache"), official=official)
    except JobError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = document["summary"]
    print(f"scored {summary['n_tasks']} tasks under {document['protocol']}: final {summary['final']:.4f}")
    return 0

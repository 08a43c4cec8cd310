"""Load the IWR-Bench paper's published results as leaderboard rows (idempotent).

Each CSV row becomes a ``Submission(kind=paper, owner=None, split=test)`` with one scored
``Evaluation`` under the protocol "official judge (paper)": scores as fractions, no
confidence interval (the paper gives none), no per-task results. Running the command again
updates the rows in place; rows no longer in the file are left alone.

    python manage.py load_paper_results [--file PATH]
"""

from __future__ import annotations

import csv
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from leaderboard import ranking
from leaderboard.models import Evaluation, Submission
from leaderboard.models.submissions import PAPER_PROTOCOL

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "data" / "iwr_bench_paper_results.csv"
PAPER_URL = "https://arxiv.org/abs/2509.24709"
PAPER_TASKS = 113
COLUMNS = ("model", "group", "low_level_visual", "high_level_visual", "ifs", "vfs", "final")
GROUPS = {"proprietary": False, "open-weights": True, "open-weights-video": True}
# Who made each model, by the start of its published name.
ORGANISATIONS = (
    ("GPT", "OpenAI"), ("Claude", "Anthropic"), ("Gemini", "Google"), ("Doubao", "ByteDance"), ("Grok", "xAI"),
    ("Kimi", "Moonshot AI"), ("Qwen", "Alibaba (Qwen)"), ("Keye", "Kuaishou"), ("MiniCPM", "OpenBMB"),
    ("Mimo", "Xiaomi"), ("GLM", "Zhipu AI"), ("VideoLLaMA", "Alibaba DAMO"), ("InternVideo", "Shanghai AI Lab"),
)


def organisation_of(model: str) -> str:
    return next((name for prefix, name in ORGANISATIONS if model.startswith(prefix)), "")


def read_rows(path: Path) -> list[dict]:
    """The file's rows, checked: every column present, scores are percentages, groups known."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [name for name in COLUMNS if name not in (reader.fieldnames or [])]
            if missing:
                raise CommandError(f"{path}: missing column(s) {', '.join(missing)}")
            rows = [_row(path, number, raw) for number, raw in enumerate(reader, start=2)]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not rows:
        raise CommandError(f"{path}: no rows")
    return rows


def _row(path: Path, line: int, raw: dict) -> dict:
    model = (raw.get("model") or "").strip()
    group = (raw.get("group") or "").strip()
    if not model:
        raise CommandError(f"{path}, line {line}: empty model name")
    if group not in GROUPS:
        raise CommandError(f"{path}, line {line}: group {group!r} is not one of {', '.join(GROUPS)}")
    scores = {}
    for name in COLUMNS[2:]:
        try:
            value = float(raw[name])
        except (TypeError, ValueError):
            raise CommandError(f"{path}, line {line}: {name}={raw.get(name)!r} is not a number") from None
        if not 0 <= value <= 100:
            raise CommandError(f"{path}, line {line}: {name}={value} is not a percentage")
        scores[name] = value / 100
    return {"model": model, "group": group, **scores}


def _first_loaded(submission: Submission):
    """When the row was first loaded (kept on reloads, so the date column does not move)."""
    return submission.evaluations.values_list("finished_at", flat=True).first() or timezone.now()


def store(row: dict) -> bool:
    """Create or update one paper row; True when it was created."""
    submission, created = Submission.objects.update_or_create(
        kind=Submission.Kind.PAPER, owner=None, split="test", model_name=row["model"],
        defaults={"organisation": organisation_of(row["model"]), "open_weights": GROUPS[row["group"]],
                  "paper_url": PAPER_URL, "public": True, "charged": False,
                  "description": f"Reported in the IWR-Bench paper ({row['group']}).", "protocol": PAPER_PROTOCOL},
    )
    Evaluation.objects.update_or_create(
        submission=submission, protocol=PAPER_PROTOCOL,
        defaults={"protocol_name": PAPER_PROTOCOL, "status": Evaluation.Status.SCORED, "evaluator_version": "paper",
                  "final": row["final"], "ifs": row["ifs"], "vfs": row["vfs"], "low_level": row["low_level_visual"],
                  "high_level": row["high_level_visual"], "n_tasks": PAPER_TASKS, "tasks_total": PAPER_TASKS,
                  "tasks_done": PAPER_TASKS, "summary": {"group": row["group"]},
                  "finished_at": _first_loaded(submission)},
    )
    return created


class Command(BaseCommand):
    help = "Load (or refresh) the IWR-Bench paper's published results as 'reported in paper' leaderboard rows."

    def add_arguments(self, parser):
        parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="CSV with the paper's table.")

    def handle(self, *args, **options):
        rows = read_rows(options["file"])
        with transaction.atomic():
            created = sum(store(row) for row in rows)
        ranking.boards_changed()
        self.stdout.write(f"paper results: {created} created, {len(rows) - created} updated")

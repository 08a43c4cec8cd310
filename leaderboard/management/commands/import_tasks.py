"""``manage.py import_tasks PATH/data.jsonl --split dev|test``: import or refresh a task set.

The dataset is validated by the evaluator first; the import is all-or-nothing and safe to
re-run (tasks whose record and files are unchanged are left alone).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from leaderboard import tasksets
from leaderboard.models.tasks import Split


class Command(BaseCommand):
    help = "Import (or update) IWR-Bench tasks from a data.jsonl file and its data folder."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the dataset's data.jsonl (or the folder holding it)")
        parser.add_argument("--split", required=True, choices=Split.values, help="dev (public) or test (held out)")
        parser.add_argument("--task-set", help="task set slug (default: from the dataset's folder name)")
        parser.add_argument("--name", help="task set display name (default: from the slug)")
        parser.add_argument("--tasks", help="comma-separated task ids to import (default: all)")
        parser.add_argument("--scripts", help="folder of authoring scripts named <id>.json, stored with the tasks")
        parser.add_argument("--draft", action="store_true", help="create new tasks unpublished")

    def handle(self, *args, **options):
        keys = {key.strip() for key in options["tasks"].split(",") if key.strip()} if options["tasks"] else None
        try:
            summary = tasksets.import_dataset(
                options["path"], options["split"], options["task_set"], options["name"],
                keys=keys, scripts=_read_scripts(options["scripts"]), draft=options["draft"],
            )
        except tasksets.TaskImportError as exc:
            for problem in exc.problems:
                self.stderr.write(f"  {problem}")
            raise CommandError(f"nothing imported: {_count(exc.problems)} found") from None
        for line in summary.lines():
            self.stdout.write(line)


def _count(problems: list[str]) -> str:
    return "1 problem" if len(problems) == 1 else f"{len(problems)} problems"


def _read_scripts(folder: str | None) -> dict[str, dict] | None:
    if not folder:
        return None
    path = Path(folder)
    if not path.is_dir():
        raise CommandError(f"--scripts {folder}: not a folder")
    scripts = {}
    for script_path in sorted(path.glob("*.json")):
        try:
            scripts[script_path.stem] = json.loads(script_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise CommandError(f"{script_path}: not readable JSON ({exc})") from None
    return scripts

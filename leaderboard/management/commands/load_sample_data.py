"""Populate a fresh site with the sample benchmark, the paper's results and the baselines.

    python manage.py load_sample_data [--benchmark DIR] [--no-baselines]

Idempotent: tasks already imported, paper rows already loaded and baselines already scored
under the current protocol version are left as they are. Baselines are queued for the
Celery worker, so they appear on the leaderboard a few minutes after the worker starts.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

SPLITS = ("dev", "test")
TASK_SET = "sample"
TASK_SET_NAME = "IWR-Bench sample benchmark"


class Command(BaseCommand):
    help = "Import the sample benchmark, load the paper's results and queue the baseline rows."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", type=Path, default=None,
                            help="folder holding dev/data.jsonl and test/data.jsonl (default: the built sample)")
        parser.add_argument("--no-baselines", action="store_true", help="do not queue the baseline rows")

    def handle(self, *args, benchmark=None, no_baselines=False, **options):
        root = Path(benchmark or settings.SAMPLE_BENCHMARK_DIR)
        datasets = {split: root / split / "data.jsonl" for split in SPLITS}
        missing = [str(path) for path in datasets.values() if not path.is_file()]
        if missing:
            raise CommandError(f"sample benchmark not found ({', '.join(missing)}): run scripts/setup.sh, "
                               "which builds it with `python -m evaluator sample build`")
        for split, data in datasets.items():
            scripts = root / split / "scripts"
            extra = {"scripts": str(scripts)} if scripts.is_dir() else {}
            call_command("import_tasks", str(data), split=split, task_set=TASK_SET, name=TASK_SET_NAME,
                         stdout=self.stdout, **extra)
        call_command("load_paper_results", stdout=self.stdout)
        if no_baselines:
            return
        from leaderboard.baselines import queue_baselines

        for split, data in datasets.items():
            queued = queue_baselines(split, data)
            names = ", ".join(e.submission.model_name for e in queued) or "already scored or queued"
            self.stdout.write(f"baselines ({split}): {names}")

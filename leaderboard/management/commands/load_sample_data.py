"""Populate a fresh site with the sample benchmark, the paper's results and the baselines.

    python manage.py load_sample_data [--benchmark DIR] [--no-baselines]

Both splits and the paper's table are checked before anything is stored, so bad input leaves
the site as it was. Idempotent: tasks already imported, paper rows already loaded and baselines
already scored under the current protocol version are left as they are. Baselines are queued for the
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
        self.check_inputs(datasets)
        for split, data in datasets.items():
            scripts = root / split / "scripts"
            extra = {"scripts": str(scripts)} if scripts.is_dir() else {}
            try:
                call_command("import_tasks", str(data), split=split, task_set=TASK_SET, name=TASK_SET_NAME,
                             stdout=self.stdout, stderr=self.stderr, **extra)
            except CommandError as exc:
                raise CommandError(f"{data}: {exc}") from None
        call_command("load_paper_results", stdout=self.stdout)
        if no_baselines:
            return
        from leaderboard.intake.baselines import queue_baselines

        for split, data in datasets.items():
            queued = queue_baselines(split, data)
            names = ", ".join(e.submission.model_name for e in queued) or "already scored or queued"
            self.stdout.write(f"baselines ({split}): {names}")

    def check_inputs(self, datasets: dict[str, Path]) -> None:
        """Read every input before storing anything: each split imports on its own, so a broken
        test split found after the dev split was imported would leave the site half loaded."""
        from evaluator.dataset import validate_dataset
        from leaderboard.management.commands.load_paper_results import DEFAULT_FILE, read_rows

        for data in datasets.values():
            problems = validate_dataset(data).problems
            for problem in problems:
                self.stderr.write(f"  {problem}")
            if problems:
                raise CommandError(f"{data} is not a valid task set ({len(problems)} problem(s), listed above); "
                                   "nothing was stored")
        try:
            read_rows(DEFAULT_FILE)
        except CommandError as exc:
            raise CommandError(f"{exc}; nothing was stored") from None

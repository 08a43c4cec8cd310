"""Remove live-preview folders no link can open any more (leaderboard/previews.py).

A folder goes when no link has opened it for IWR_PREVIEW_LINK_SECONDS plus a margin, or when its
submission was deleted or its bundle withdrawn or replaced; abandoned unpacking goes too. Nothing
outside IWR_PREVIEW_ROOT is touched and symbolic links are left alone. Safe to run from cron:

    python manage.py clean_previews [--dry-run]
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from leaderboard import previews


class Command(BaseCommand):
    help = "Remove preview folders that expired or whose submission or bundle is gone."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")

    def handle(self, *args, dry_run: bool = False, **options) -> None:
        root = Path(settings.PREVIEW_ROOT)
        result = previews.sweep(dry_run=dry_run)
        verb, total = ("would remove", "to remove") if dry_run else ("removed", "removed")
        for name, why in result.removed:
            self.stdout.write(f"{verb} {root / name} ({why})")
        for name in result.refused:
            self.stderr.write(f"left alone {root / name}: a symbolic link")
        self.stdout.write(f"{len(result.removed)} preview folder(s) {total} under {root}")

"""Rank every stored leaderboard board again (leaderboard/ranking/stored.py).

The site ranks a board whenever what it shows changes; run this after loading rows by other means
(a restore, a bulk import) or after a release that changed how boards are ranked. Safe at any time:

    python manage.py rank_boards
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from leaderboard import ranking
from leaderboard.models import StoredBoard


class Command(BaseCommand):
    help = "Rank every leaderboard board again and store it (every cached view goes stale)."

    def handle(self, *args, **options) -> None:
        ranking.boards_changed()
        for split, protocol, selection, build_ms in (StoredBoard.objects.order_by("split", "protocol", "selection")
                                                     .values_list("split", "protocol", "selection", "build_ms")):
            self.stdout.write(f"{split} / {protocol} / {selection}: ranked in {build_ms} ms")

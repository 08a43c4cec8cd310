"""The leaderboard's cache generation, kept where it cannot be lost.

Every cached leaderboard view (pages, exports, chart JSON, the API) puts this number into its
cache key; a finished scoring or a maintainer's verdict moves it on. It lives in the database,
not in the cache: a cache may expire or cull any key (Django's file cache re-stores a key with
its default timeout on ``incr``), and a counter that starts again would serve boards cached
long ago under the numbers it climbs back through. One row, moved on by an atomic UPDATE.
"""

from __future__ import annotations

import time

from django.db import models

ROW = 1


def starting_value() -> int:
    """Where a new counter starts: the current time in microseconds. A database made again (its
    counter gone) then still starts above every number an older one reached, so cache entries
    the old database's boards left behind are never read as current."""
    return time.time_ns() // 1000


class BoardGeneration(models.Model):
    """The one row holding the generation every cached leaderboard view is keyed on."""

    value = models.PositiveBigIntegerField(default=starting_value)

    class Meta:
        verbose_name = "leaderboard cache generation"

    def __str__(self) -> str:
        return f"generation {self.value}"

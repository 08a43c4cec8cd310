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


class StoredBoard(models.Model):
    """One leaderboard view (a split under one protocol version, one entry per model chosen the
    ``selection`` way, no filter), ranked with its rank ranges and stored when something it shows
    changed, so that a reader with an empty cache reads this row instead of ranking.

    ``marks`` counts the changes announced for this board (each after its change committed);
    ``built_marks`` is the count the stored entries were computed after. The row is current while
    the two are equal: a change announced since makes it stale until the board is built again
    (:mod:`leaderboard.ranking.stored`).
    """

    split = models.CharField(max_length=8)
    protocol = models.CharField(max_length=40)
    selection = models.CharField(max_length=8)
    marks = models.PositiveBigIntegerField(default=0)
    built_marks = models.BigIntegerField(default=-1)
    format = models.CharField(max_length=24, blank=True, help_text="What the stored entries' shape was built as.")
    entries = models.TextField(blank=True, help_text="The ranked entries, JSON (one list of values per entry).")
    flagged = models.TextField(blank=True, help_text="The flagged entries, JSON.")
    built_at = models.DateTimeField(null=True, blank=True)
    build_ms = models.PositiveIntegerField(default=0, help_text="How long the last build took.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["split", "protocol", "selection"], name="one_stored_board")]

    def __str__(self) -> str:
        return f"{self.split} / {self.protocol} / {self.selection}"

"""One generation number for every cached leaderboard view.

Cached pages and JSON endpoints put :func:`get_generation` into their cache keys; when a
submission finishes (or a maintainer changes a verdict) :func:`bump_generation` moves the
number on, so every cached page is stale at once without knowing which pages exist.

The number itself is a database row (:class:`leaderboard.models.board.BoardGeneration`) moved
on by one atomic UPDATE, so no bump made by two processes at once is lost and the number never
goes back. A cache may expire or cull any key (Django's file cache re-stores a key with its
default timeout on ``incr``), and a counter kept there would start again and serve boards
cached long ago under the numbers it climbs back through. The cache holds only a copy, stored
without expiry, so a warm page reads no database; a missing copy is read again from the row.
Cached values carry a bounded timeout of their own as well (:data:`CACHE_SECONDS`).
"""

from __future__ import annotations

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from leaderboard.models.board import ROW, BoardGeneration

GENERATION_KEY = "leaderboard:generation:copy"


def get_generation() -> int:
    """The current generation: the cache's copy, else the database row (copied again)."""
    value = cache.get(GENERATION_KEY)
    if value is None:
        value = _stored()
        cache.add(GENERATION_KEY, value, timeout=None)  # a bump's copy, if one landed meanwhile, wins
    return int(value)


def bump_generation() -> int:
    """Invalidate every view keyed on the generation; returns the new generation.

    The new number is above the row's and above the cache's copy: a database restored from a
    backup (its row gone back) must not bring back a number the cache already serves boards under.
    """
    copy = int(cache.get(GENERATION_KEY) or 0)
    moved = Greatest(F("value") + 1, Value(copy + 1))
    with transaction.atomic():
        if not BoardGeneration.objects.filter(pk=ROW).update(value=moved):
            _create()
            BoardGeneration.objects.filter(pk=ROW).update(value=moved)
        value = _stored()
    _copy(value)
    return value


def _copy(value: int) -> None:
    """Put ``value`` into the cache, then make sure no slower bump left a lower copy behind: two
    bumps copying at once may land in either order, and the copy must end at the row's value."""
    while True:
        cache.set(GENERATION_KEY, value, timeout=None)
        stored = _stored()
        if stored <= value:
            return
        value = stored


def _stored() -> int:
    found = BoardGeneration.objects.filter(pk=ROW).values_list("value", flat=True).first()
    return found if found is not None else _create()


def _create() -> int:
    """The row, made when it is missing (the migration makes it; an operator may have deleted it)."""
    try:
        with transaction.atomic():
            return BoardGeneration.objects.create(pk=ROW).value
    except IntegrityError:  # another process made it first
        return BoardGeneration.objects.values_list("value", flat=True).get(pk=ROW)


# --------------------------------------------------------------------------- keys

CACHE_SECONDS = 24 * 3600  # generation keys make entries stale long before this
# Part of every cache key: bump it when what is cached changes shape, so a new release never
# reads values an older one left in a shared cache.
CACHE_FORMAT = 4


def key(kind: str, *parts, generation: int | None = None) -> str:
    """The one spelling of every leaderboard cache key: format, then the generation for values a
    finished scoring makes stale (None: valid across generations), what is cached and what by."""
    head = f"lb:v{CACHE_FORMAT}" if generation is None else f"lb:v{CACHE_FORMAT}:{generation}"
    return ":".join((head, kind, *map(str, parts)))

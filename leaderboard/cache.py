"""One generation number for every cached leaderboard view.

Cached pages and JSON endpoints put :func:`get_generation` into their cache keys; when a
submission finishes (or a maintainer changes a verdict) :func:`bump_generation` moves the
number on, so every cached page is stale at once without knowing which pages exist.
The value lives in Django's default cache, which must be shared by the web processes and
the workers (a file or Redis cache, not a per-process memory cache) for a bump made by a
worker to reach the site.
"""

from __future__ import annotations

from django.core.cache import cache

GENERATION_KEY = "leaderboard:generation"


def get_generation() -> int:
    """The current generation (starts at 1 and only grows while the cache keeps it)."""
    value = cache.get(GENERATION_KEY)
    if value is None:
        cache.add(GENERATION_KEY, 1, timeout=None)
        value = cache.get(GENERATION_KEY, 1)
    return int(value)


def bump_generation() -> int:
    """Invalidate every page keyed on the generation; returns the new generation."""
    try:
        return int(cache.incr(GENERATION_KEY))
    except ValueError:  # the key was never set (or was evicted): start above the default
        cache.set(GENERATION_KEY, 2, timeout=None)
        return 2


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

"""What drf-spectacular cannot infer about our views (kept apart from the paginator, which DRF's
settings import before drf-spectacular can be)."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema


class OneDocument(AutoSchema):
    """For a ``list`` action answering one document rather than a bare list (the leaderboard's page
    with its ``entries``, the quota per split): drf-spectacular would otherwise document an array."""

    def _is_list_view(self, serializer=None) -> bool:
        return False

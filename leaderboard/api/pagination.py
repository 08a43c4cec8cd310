"""The one paginator of every list in ``/api/v1/``: ``offset`` and ``limit`` (default 100, at most
1000), answered with ``count`` and absolute ``next`` / ``previous`` links.

A bad ``offset`` or ``limit`` is a 400 naming it, like every other unknown parameter value
(DRF's own limit-offset paginator would quietly fall back to its defaults).
"""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


def window(params) -> tuple[int, int]:
    """(offset, limit) from the query; raises ValidationError for a value that is not a whole
    number in range."""
    values = []
    for name, default, low, top in (("offset", 0, 0, None), ("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)):
        text = (params.get(name) or "").strip()
        try:
            value = int(text) if text else default
        except ValueError:
            raise ValidationError({"detail": f"{name}={text!r} is not valid: use a whole number"}) from None
        if value < low or (top and value > top):
            span = f" ({low} to {top})" if top else f" (at least {low})"
            raise ValidationError({"detail": f"{name}={value} is out of range{span}"})
        values.append(value)
    return values[0], values[1]


class Pages(LimitOffsetPagination):
    """LimitOffsetPagination whose offset and limit are validated (400) instead of defaulted."""

    default_limit = DEFAULT_LIMIT
    max_limit = MAX_LIMIT

    def paginate_queryset(self, queryset, request, view=None):
        self.offset, self.limit = window(request.query_params)
        self.request = request
        self.count = self.get_count(queryset)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        return list(queryset[self.offset:self.offset + self.limit])

    def links(self, request, count: int, offset: int, limit: int) -> tuple[str | None, str | None]:
        """Absolute (next, previous) links of a page of ``count`` rows built outside a queryset."""
        self.request, self.count, self.offset, self.limit = request, count, offset, limit
        return self.get_next_link(), self.get_previous_link()


def paginated(view, request, rows_of, queryset):
    """The paginated answer of a list: ``rows_of(page)`` turns the page's objects into its rows."""
    pages = Pages()
    page = pages.paginate_queryset(queryset, request, view)
    return pages.get_paginated_response(rows_of(page))


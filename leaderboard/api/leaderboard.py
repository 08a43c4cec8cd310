"""``GET /api/v1/leaderboard/``: a leaderboard view as JSON (read-only, anonymous, throttled).

Query parameters: ``split`` (test | dev), ``protocol`` (a protocol name such as ``iwr-det``,
a full name such as ``iwr-det-2``, or ``paper``), ``weights`` (all | open | proprietary),
``verified`` (1 | 0), ``source`` (all | evaluated | reported), ``selection`` (best | latest).
``offset`` and ``limit`` (default 100, at most 1000) page through the rows; ``count`` is the
view's total and ``next`` / ``previous`` link the neighbouring pages. Each page is the JSON
export's document (:func:`leaderboard.exports.document`) for those rows; its encoded form is
cached per view, page and leaderboard generation (:func:`leaderboard.board_pages.cached_page`).
"""

from __future__ import annotations

from django.http import HttpResponse
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.schemas.openapi import AutoSchema

from leaderboard import ranking
from leaderboard.board_pages import DEFAULT_LIMIT, cached_page, page_document

MAX_LIMIT = 1000

_SCORE = {"type": "number", "minimum": 0, "maximum": 1}
_INTERVAL = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2, "nullable": True}
ENTRY_SCHEMA = {
    "type": "object",
    "properties": {
        "rank": {"type": "integer", "nullable": True, "description": "1 = best Final; null for baselines."},
        "rank_range": {**_INTERVAL, "description": "95% rank range from a paired bootstrap over tasks."},
        "tied_with_previous": {"type": "boolean", "description": "Final intervals overlap with the row above."},
        "tie_group": {"type": "integer"},
        "evaluation_id": {"type": "integer"}, "submission_id": {"type": "integer"},
        "model_name": {"type": "string"}, "organisation": {"type": "string"}, "model_size": {"type": "string"},
        "kind": {"type": "string", "enum": ["bundle", "endpoint", "baseline", "paper"]},
        "open_weights": {"type": "boolean"}, "verified": {"type": "boolean"},
        "baseline": {"type": "boolean"}, "reported_in_paper": {"type": "boolean"},
        "paper_url": {"type": "string"}, "code_url": {"type": "string"},
        "protocol": {"type": "string"}, "evaluator_version": {"type": "string"},
        "final": _SCORE, "ifs": _SCORE, "vfs": _SCORE,
        "low_level": {**_SCORE, "nullable": True}, "high_level": {**_SCORE, "nullable": True},
        **{name: {**_INTERVAL, "description": "95% percentile-bootstrap interval over tasks; null without one."}
           for name in ranking.INTERVAL_FIELDS},
        "n_tasks": {"type": "integer"}, "date": {"type": "string", "format": "date-time", "nullable": True},
    },
}
DOCUMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "split": {"type": "string"}, "protocol": {"type": "string"}, "selection": {"type": "string"},
        "filters": {"type": "object"}, "generation": {"type": "integer"}, "scores": {"type": "string"},
        "method": {"type": "object", "description": "Confidence level, interval method and resample counts."},
        "count": {"type": "integer", "description": "Rows in the whole view."},
        "offset": {"type": "integer"}, "limit": {"type": "integer"},
        "next": {"type": "string", "nullable": True}, "previous": {"type": "string", "nullable": True},
        "entries": {"type": "array", "items": ENTRY_SCHEMA},
        "flagged": {"type": "array", "items": {"type": "object"},
                    "description": "Entries maintainers took out of the ranking, with the public reason."},
    },
}
PARAMETERS = (
    ("split", "Task split.", {"type": "string", "enum": ["test", "dev"], "default": "test"}),
    ("protocol", "Protocol name (current version), full name with version, or `paper` for the paper's "
                 "reported results.", {"type": "string", "default": "iwr-det"}),
    ("weights", "Only open-weights or only proprietary models (baselines always stay).",
     {"type": "string", "enum": list(ranking.WEIGHTS), "default": "all"}),
    ("verified", "Only entries verified by the maintainers.", {"type": "string", "enum": ["0", "1"], "default": "0"}),
    ("source", "Scores evaluated here or reported in the paper.",
     {"type": "string", "enum": list(ranking.SOURCES), "default": "all"}),
    ("selection", "Each researcher's best or latest submission per model.",
     {"type": "string", "enum": list(ranking.SELECTIONS)}),
    ("offset", "Rows to skip (pages: follow `next`).", {"type": "integer", "minimum": 0, "default": 0}),
    ("limit", "Rows per page.", {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}),
)


class LeaderboardSchema(AutoSchema):
    def get_filter_parameters(self, path, method):
        return [{"name": name, "in": "query", "required": False, "description": text, "schema": schema}
                for name, text, schema in PARAMETERS]

    def get_responses(self, path, method):
        return {
            "200": {"description": "The leaderboard view.",
                    "content": {"application/json": {"schema": DOCUMENT_SCHEMA}}},
            "400": {"description": "A parameter has an unknown value; `detail` says which."},
        }


class LeaderboardViewSet(viewsets.ViewSet):
    """Ranked entries of one split under one protocol version, with 95% intervals and rank ranges."""

    permission_classes = [AllowAny]
    schema = LeaderboardSchema(tags=["leaderboard"], operation_id_base="Leaderboard")

    def list(self, request):
        try:
            query = ranking.parse_query(request.query_params)
            offset, limit = page_window(request.query_params)
        except ranking.QueryError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        if getattr(request.accepted_renderer, "format", "json") != "json":  # the browsable API
            return Response(page_document(ranking.leaderboard(query), offset, limit))
        return HttpResponse(cached_page(query, offset, limit), content_type="application/json")


def page_window(params) -> tuple[int, int]:
    """(offset, limit) from the query; ``limit`` defaults to DEFAULT_LIMIT and is capped at MAX_LIMIT."""
    values = []
    for name, default, top in (("offset", 0, None), ("limit", DEFAULT_LIMIT, MAX_LIMIT)):
        text = (params.get(name) or "").strip()
        try:
            value = int(text) if text else default
        except ValueError:
            raise ranking.QueryError(f"{name}={text!r} is not valid: use a whole number") from None
        if value < (1 if name == "limit" else 0) or (top and value > top):
            raise ranking.QueryError(f"{name}={value} is out of range" + (f" (1 to {top})" if top else ""))
        values.append(value)
    return values[0], values[1]

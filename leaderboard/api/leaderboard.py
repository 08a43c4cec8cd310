"""``GET /api/v1/leaderboard/``: a leaderboard view as JSON (read-only, anonymous, throttled).

Query parameters: ``split`` (test | dev), ``protocol`` (a protocol name such as ``iwr-det``,
a full name such as ``iwr-det-2``, or ``paper``), ``weights`` (all | open | proprietary),
``verified`` (1 | 0), ``source`` (all | evaluated | reported), ``selection`` (best | latest),
``q`` (search by model or organisation), ``per_task`` (1: each entry's per-task IFS, VFS and
Final; held-out split: staff only). ``offset`` and ``limit`` page through the rows
(:mod:`leaderboard.api.pagination`); ``count`` is the view's total and ``next`` / ``previous``
are absolute links to the neighbouring pages. Each page is the JSON export's document
(:func:`leaderboard.exports.document`) for those rows; its encoded form is cached per view,
page and leaderboard generation (:func:`leaderboard.board_pages.cached_page`).
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from leaderboard import access, ranking
from leaderboard.api import pagination
from leaderboard.api.schema import OneDocument
from leaderboard.board_pages import cached_page, page_document

FLAGS = ("0", "1")


def _choice(name: str, text: str, choices, default=None) -> OpenApiParameter:
    return OpenApiParameter(name, str, OpenApiParameter.QUERY, description=text, enum=list(choices), default=default)


PARAMETERS = [
    _choice("split", "Task split.", ("test", "dev"), "test"),
    OpenApiParameter("protocol", str, OpenApiParameter.QUERY, default="iwr-det",
                     description="Protocol name (current version), full name with version, or `paper` for the "
                                 "paper's reported results."),
    OpenApiParameter("judge", str, OpenApiParameter.QUERY,
                     description="iwr-official only: the judge, `JUDGE-MODEL` or `JUDGE-MODEL+GROUNDING-MODEL` (each "
                                 "judge's scores are a board of their own; default: the first judge with scores)."),
    _choice("weights", "Only open-weights or only proprietary models (baselines always stay).", ranking.WEIGHTS, "all"),
    _choice("verified", "Only entries verified by the maintainers.", FLAGS, "0"),
    _choice("source", "Scores evaluated here or reported in the paper.", ranking.SOURCES, "all"),
    _choice("selection", "Each researcher's best or latest submission per model.", ranking.SELECTIONS),
    OpenApiParameter("q", str, OpenApiParameter.QUERY,
                     description="Search: entries whose model or organisation contains it (case-insensitive, at most "
                                 "100 characters); ranks stay those of the whole view."),
    _choice("per_task", "1: each entry gets `tasks` (per-task IFS, VFS, Final). On the held-out split only "
                        "staff get them (others get the page without them).", FLAGS, "0"),
    OpenApiParameter("offset", int, OpenApiParameter.QUERY, description="Rows to skip (pages: follow `next`)."),
    OpenApiParameter("limit", int, OpenApiParameter.QUERY,
                     description=f"Rows per page (1 to {pagination.MAX_LIMIT}, default {pagination.DEFAULT_LIMIT})."),
]

def _pair() -> serializers.ListField:
    """A 95% interval [low, high] (a fresh field per name: a serializer field binds to one name)."""
    return serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True,
                                 help_text="95% percentile-bootstrap interval over tasks; null without one.")
TASK_SCORES = {"task": serializers.CharField(), "ifs": serializers.FloatField(), "vfs": serializers.FloatField(),
               "final": serializers.FloatField()}
ENTRY = {
    "rank": serializers.IntegerField(allow_null=True, help_text="1 = best Final; null for baselines."),
    "rank_range": serializers.ListField(child=serializers.IntegerField(), allow_null=True,
                                        help_text="95% rank range from a paired bootstrap over tasks."),
    "tied_with_previous": serializers.BooleanField(), "tie_group": serializers.IntegerField(),
    "evaluation_id": serializers.IntegerField(), "submission_id": serializers.IntegerField(),
    "model_name": serializers.CharField(), "organisation": serializers.CharField(),
    "model_size": serializers.CharField(),
    "kind": serializers.ChoiceField(choices=["bundle", "endpoint", "baseline", "paper"]),
    "open_weights": serializers.BooleanField(), "verified": serializers.BooleanField(),
    "baseline": serializers.BooleanField(), "reported_in_paper": serializers.BooleanField(),
    "paper_url": serializers.CharField(), "code_url": serializers.CharField(),
    "protocol": serializers.CharField(), "evaluator_version": serializers.CharField(),
    **{name: serializers.FloatField(allow_null=name in ("low_level", "high_level"))
       for name in ("final", "ifs", "vfs", "low_level", "high_level")},
    **{name: _pair() for name in ranking.INTERVAL_FIELDS},
    "n_tasks": serializers.IntegerField(), "date": serializers.DateTimeField(allow_null=True),
    "tasks": inline_serializer("TaskScores", TASK_SCORES, many=True, required=False, allow_null=True,
                               help_text="With per_task=1: the entry's stored per-task scores (null: paper rows)."),
}
Document = inline_serializer("LeaderboardPage", {
    "split": serializers.CharField(), "protocol": serializers.CharField(), "selection": serializers.CharField(),
    "judge": serializers.CharField(help_text="iwr-official: the judge's model ids; empty for other protocols."),
    "filters": serializers.DictField(), "generation": serializers.IntegerField(), "scores": serializers.CharField(),
    "method": serializers.DictField(help_text="Confidence level, interval method and resample counts."),
    "count": serializers.IntegerField(help_text="Rows in the whole view."),
    "offset": serializers.IntegerField(), "limit": serializers.IntegerField(),
    "next": serializers.URLField(allow_null=True), "previous": serializers.URLField(allow_null=True),
    "entries": inline_serializer("LeaderboardEntry", ENTRY, many=True),
    "flagged": serializers.ListField(child=serializers.DictField(),
                                     help_text="Entries maintainers took out of the ranking, with the public reason."),
})


def parse_flag(params, name: str) -> bool:
    value = (params.get(name) or "0").strip()
    if value not in FLAGS:
        raise ValidationError({"detail": f"{name}={value!r} is not valid: use 0 or 1"})
    return value == "1"


class LeaderboardViewSet(viewsets.ViewSet):
    """Ranked entries of one split under one protocol version, with 95% intervals and rank ranges."""

    permission_classes = [AllowAny]
    schema = OneDocument()

    @extend_schema(tags=["leaderboard"], operation_id="leaderboard_list", parameters=PARAMETERS,
                   responses={200: Document, 400: OpenApiResponse(description="A parameter has an unknown value; "
                                                                              "`detail` says which.")})
    def list(self, request):
        try:
            query = ranking.parse_query(request.query_params)
        except ranking.QueryError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        offset, limit = pagination.window(request.query_params)
        # Held-out split: per-task scores are left out for non-staff (the rest of the page is public).
        per_task = parse_flag(request.query_params, "per_task") and access.may_see_per_task(request.user, query.split)
        base = request.build_absolute_uri(request.path)
        if getattr(request.accepted_renderer, "format", "json") != "json":  # the browsable API
            return Response(page_document(ranking.leaderboard(query), offset, limit, base, per_task))
        return HttpResponse(cached_page(query, offset, limit, base, per_task), content_type="application/json")


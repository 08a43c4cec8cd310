"""Submissions API (token auth: ``Authorization: Token KEY``).

    POST /api/v1/submissions/               multipart: bundle, split, model_name, optional protocol,
                                            organisation, model_size, open_weights, paper_url, code_url,
                                            description, public -> 201 {id, status, notes}
    GET  /api/v1/submissions/               your own submissions
    GET  /api/v1/submissions/ID/            status, progress, scores when scored, failure reason
    POST /api/v1/submissions/ID/cancel/     cancel (queued: quota refunded)
    GET  /api/v1/submissions/ID/results/    results as JSON (owner; held-out split: scores only)
    GET  /api/v1/quota/                     what is left today, per split

The same form and rules as the Submit page. A submission that is not yours and not public
is a 404, like one that does not exist.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard import quotas, submissions
from leaderboard.models import Submission


def form_problems(form) -> dict:
    """Form errors as ``{field: [messages]}``; errors of the whole form under ``non_field_errors``."""
    problems = {field: [str(message) for message in messages] for field, messages in form.errors.items()}
    if "__all__" in problems:
        problems["non_field_errors"] = problems.pop("__all__")
    return problems


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        if self.action == "list":
            return Submission.objects.filter(owner=self.request.user).order_by("-created_at")
        return submissions.visible_submissions(self.request.user)

    def get_object(self) -> Submission:
        return get_object_or_404(self.get_queryset(), pk=self.kwargs["pk"])

    def _managed(self) -> Submission:
        submission = self.get_object()
        if not submissions.can_manage(self.request.user, submission):
            raise NotFound("No submission matches the given query.")
        return submission

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        rows = [submissions.status_payload(submission, request.user) for submission in (page or self.get_queryset())]
        return self.get_paginated_response(rows) if page is not None else Response(rows)

    def retrieve(self, request, *args, **kwargs):
        return Response(submissions.status_payload(self.get_object(), request.user))

    def create(self, request, *args, **kwargs):
        form = submissions.SubmissionForm(request.POST, request.FILES, user=request.user)
        if not form.is_valid():
            return Response(form_problems(form), status=status.HTTP_400_BAD_REQUEST)
        try:
            accepted = submissions.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        return Response({"id": accepted.submission.pk, "status": accepted.evaluation.status,
                         "notes": accepted.notes}, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        submission = self._managed()
        try:
            submissions.cancel(submission)
        except submissions.NotCancellable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(submissions.status_payload(submission, request.user))

    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        submission = self._managed()
        response = Response(submissions.results_document(submission, request.user))
        response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-results.json"'
        return response


class QuotaViewSet(viewsets.ViewSet):
    """``GET /api/v1/quota/``: submissions left today per split, and when the day resets."""

    permission_classes = [IsAuthenticated]

    def list(self, request):
        return Response({"quotas": [item.as_dict() for item in quotas.all_statuses(request.user)]})

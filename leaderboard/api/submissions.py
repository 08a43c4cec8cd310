"""Submissions API (token auth: ``Authorization: Token KEY``).

    POST /api/v1/submissions/               multipart: bundle, split, model_name, optional protocol,
                                            organisation, model_size, open_weights, paper_url, code_url,
                                            description, public -> 201 {id, status, ..., notes}
    GET  /api/v1/submissions/               your own submissions
    GET  /api/v1/submissions/ID/            status, progress, scores when scored, failure reason
    POST /api/v1/submissions/ID/cancel/     cancel (queued: quota refunded)
    GET  /api/v1/submissions/ID/results/    results as JSON (owner; held-out split: scores only)
    GET  /api/v1/quota/                     what is left today, per split

The same form and rules as the Submit page. A submission that is not yours and not public
is a 404, like one that does not exist.
"""

from __future__ import annotations

from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.schemas.openapi import AutoSchema

from leaderboard import access, quotas
from leaderboard.accounts import HasVerifiedEmail
from leaderboard.intake import bundles, evaluations
from leaderboard.intake import status as submission_status
from leaderboard.models import Submission


class ProgressSerializer(serializers.Serializer):
    tasks_done = serializers.IntegerField(help_text="Tasks scored so far.")
    tasks_total = serializers.IntegerField(help_text="Tasks the submission is scored on.")


class ScoresSerializer(serializers.Serializer):
    """Scores are fractions in [0, 1]; ``*_ci_low`` / ``*_ci_high`` bound the 95% bootstrap interval."""

    final = serializers.FloatField()
    ifs = serializers.FloatField()
    vfs = serializers.FloatField()
    low_level = serializers.FloatField()
    high_level = serializers.FloatField()
    final_ci_low = serializers.FloatField(allow_null=True)
    final_ci_high = serializers.FloatField(allow_null=True)
    ifs_ci_low = serializers.FloatField(allow_null=True)
    ifs_ci_high = serializers.FloatField(allow_null=True)
    vfs_ci_low = serializers.FloatField(allow_null=True)
    vfs_ci_high = serializers.FloatField(allow_null=True)
    low_level_ci_low = serializers.FloatField(allow_null=True)
    low_level_ci_high = serializers.FloatField(allow_null=True)
    high_level_ci_low = serializers.FloatField(allow_null=True)
    high_level_ci_high = serializers.FloatField(allow_null=True)
    n_tasks = serializers.IntegerField()


class FailureSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="bundle, time_limit, infrastructure, evaluator or cancelled.")
    kind_label = serializers.CharField()
    reason = serializers.CharField(help_text="What went wrong, in words a person can act on.")


class SubmissionSerializer(serializers.ModelSerializer):
    """A submission: what ``POST`` takes (multipart) and what every answer shows.

    Documents the API (the OpenAPI schema is built from it); the values themselves are checked by
    the Submit page's form, so both paths apply the same rules and messages.
    """

    bundle = serializers.FileField(write_only=True, help_text="A .zip with one <task id>/index.html per task.")
    protocol = serializers.CharField(required=False, default="iwr-det",
                                     help_text="Scoring protocol name (default iwr-det).")
    status = serializers.CharField(read_only=True, help_text=(
        "generating (model endpoint), queued, running, scored, failed or cancelled."))
    progress = ProgressSerializer(read_only=True)
    evaluation_id = serializers.IntegerField(read_only=True, help_text="Its results page is /results/ID/.")
    evaluation_protocol = serializers.CharField(read_only=True, help_text="Protocol name and version, e.g. iwr-det-2.")
    started_at = serializers.DateTimeField(read_only=True, allow_null=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)
    scores = ScoresSerializer(read_only=True, help_text="Present once scored.")
    evaluator_version = serializers.CharField(read_only=True, help_text="Present once scored.")
    failure = FailureSerializer(read_only=True, help_text="Present when failed or cancelled.")
    charged = serializers.BooleanField(read_only=True, help_text="Owner only: whether it counts against the quota.")
    notes = serializers.ListField(child=serializers.CharField(), read_only=True,
                                  help_text="Only when submitting: warnings about the bundle (e.g. tasks missing).")

    class Meta:
        model = Submission
        fields = ["id", "model_name", "split", "protocol", "public", "created_at", "status", "progress",
                  "verified", "flagged", "flag_reason", "evaluation_id", "evaluation_protocol", "started_at",
                  "finished_at", "scores", "evaluator_version", "failure", "charged", "notes",
                  "bundle", "organisation", "model_size", "open_weights", "paper_url", "code_url", "description"]
        read_only_fields = ["id", "created_at", "verified", "flagged", "flag_reason"]
        extra_kwargs = {name: {"write_only": True} for name in (
            "organisation", "model_size", "open_weights", "paper_url", "code_url", "description")}


class TaskRowSerializer(serializers.Serializer):
    task = serializers.CharField(help_text="Task id.")
    final = serializers.FloatField()
    ifs = serializers.FloatField()
    vfs = serializers.FloatField()
    low_level = serializers.FloatField()
    high_level = serializers.FloatField()
    steps_passed = serializers.IntegerField()
    steps_total = serializers.IntegerField()
    error = serializers.CharField(help_text="Why the task stopped short, if it did.")
    steps = serializers.ListField(child=serializers.DictField(), required=False,
                                  help_text="Per-step verdicts (dev-split tasks only).")


class ResultsSerializer(SubmissionSerializer):
    """The results download: the submission's state, the evaluator's summary and one row per task."""

    summary = serializers.DictField(read_only=True, help_text="results.json summary, with by_category.")
    tasks = TaskRowSerializer(many=True, read_only=True)

    class Meta(SubmissionSerializer.Meta):
        fields = [*SubmissionSerializer.Meta.fields, "summary", "tasks"]


class SubmissionSchema(AutoSchema):
    """A request body only where there is one (creating); the results download has its own shape."""

    def _action(self) -> str | None:
        return getattr(self.view, "action", None)

    def get_request_body(self, path, method):
        return super().get_request_body(path, method) if self._action() == "create" else {}

    def get_response_serializer(self, path, method):
        return ResultsSerializer() if self._action() == "results" else SubmissionSerializer()

    def get_responses(self, path, method):
        responses = super().get_responses(path, method)
        if self._action() == "cancel":  # a state change, answered 200 with the new state
            responses = {"200": responses.get("201") or responses.get("200")}
        return responses


def form_problems(form) -> dict:
    """Form errors as ``{field: [messages]}``; errors of the whole form under ``non_field_errors``."""
    problems = {field: [str(message) for message in messages] for field, messages in form.errors.items()}
    if "__all__" in problems:
        problems["non_field_errors"] = problems.pop("__all__")
    return problems


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your submissions: submit a bundle, follow its scoring, cancel it, download its results."""

    permission_classes = [IsAuthenticated, HasVerifiedEmail]
    parser_classes = [MultiPartParser, FormParser]
    serializer_class = SubmissionSerializer
    schema = SubmissionSchema()

    def get_queryset(self):
        if self.action == "list":
            return Submission.objects.filter(owner=self.request.user).order_by("-created_at")
        return access.visible_submissions(self.request.user)

    def get_object(self) -> Submission:
        return access.viewable_submission(self.request.user, self.kwargs["pk"])

    def _managed(self) -> Submission:
        return access.managed_submission(self.request.user, self.kwargs["pk"])

    def list(self, request, *args, **kwargs):
        """Your own submissions, newest first."""
        page = self.paginate_queryset(self.get_queryset())
        shown = page or self.get_queryset()
        rows = [submission_status.status_payload(submission, request.user) for submission in shown]
        return self.get_paginated_response(rows) if page is not None else Response(rows)

    def retrieve(self, request, *args, **kwargs):
        """One submission (yours, or a public one): status, progress, scores once scored, failure reason."""
        return Response(submission_status.status_payload(self.get_object(), request.user))

    def create(self, request, *args, **kwargs):
        """Submit a bundle (multipart): 201 with the new submission, 400 listing every problem, 429 over quota."""
        form = bundles.SubmissionForm(request.POST, request.FILES, user=request.user)
        if not form.is_valid():
            return Response(form_problems(form), status=status.HTTP_400_BAD_REQUEST)
        try:
            accepted = bundles.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        payload = submission_status.status_payload(accepted.submission, request.user)
        return Response({**payload, "notes": accepted.notes}, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel your submission: 200 with its state (queued: the quota is refunded), 409 once finished."""
        submission = self._managed()
        try:
            evaluations.cancel(submission)
        except evaluations.NotCancellable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(submission_status.status_payload(submission, request.user))

    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """Your submission's results as a JSON download (held-out split: scores only, no step details)."""
        submission = self._managed()
        response = Response(submission_status.results_document(submission, request.user))
        response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-results.json"'
        return response


class QuotaViewSet(viewsets.ViewSet):
    """``GET /api/v1/quota/``: submissions left today per split, and when the day resets."""

    permission_classes = [IsAuthenticated]

    def list(self, request):
        return Response({"quotas": [item.as_dict() for item in quotas.all_statuses(request.user)]})

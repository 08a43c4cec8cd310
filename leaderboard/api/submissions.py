"""Submissions API (token auth: ``Authorization: Token KEY``).

    POST /api/v1/submissions/               multipart: bundle, split, model_name, optional protocol,
                                            organisation, model_size, open_weights, paper_url, code_url,
                                            description, public -> 201 {id, status, ..., notes}
    GET  /api/v1/submissions/               your own submissions
    GET  /api/v1/submissions/ID/            status, progress, scores when scored, failure reason
    PATCH /api/v1/submissions/ID/           owner: organisation, model_size, open_weights, paper_url,
                                            code_url, description, public, withdraw -> 200 the new state
    POST /api/v1/submissions/ID/cancel/     cancel (queued: quota refunded)
    GET  /api/v1/submissions/ID/results/    results as JSON (owner; public dev entries: everyone;
                                            held-out split: scores only)
    POST /api/v1/bundles/check/             the submit fields (model_name optional) -> 200 check report;
                                            no quota spent, nothing stored
    GET  /api/v1/quota/                     what is left today, per split

Lists are paged (:mod:`leaderboard.api.pagination`); over quota is a 429 with ``Retry-After``.

The same form and rules as the Submit page. A submission that is not yours and not public
is a 404, like one that does not exist.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import access, quotas
from leaderboard.accounts import HasVerifiedEmail
from leaderboard.api.answers import form_data, quota_refused, refused_or_invalid
from leaderboard.api.pagination import paginated
from leaderboard.api.schema import OneDocument
from leaderboard.intake import bundles, entries, evaluations
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
    evaluation_protocol = serializers.CharField(read_only=True, help_text="Protocol name and version, e.g. iwr-det-17.")
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


class EntryChangeSerializer(serializers.Serializer):
    """What an owner may change with PATCH (only the fields sent change)."""

    organisation = serializers.CharField(required=False, allow_blank=True)
    model_size = serializers.CharField(required=False, allow_blank=True)
    open_weights = serializers.BooleanField(required=False)
    paper_url = serializers.URLField(required=False, allow_blank=True)
    code_url = serializers.URLField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    public = serializers.BooleanField(required=False, help_text="A withdrawn entry cannot be made public again.")
    withdraw = serializers.BooleanField(required=False, help_text="true: off every board for good (private).")


CheckReport = inline_serializer("BundleCheckReport", {
    "accepted": serializers.BooleanField(help_text="Whether a submission of this bundle would be taken."),
    "tasks": serializers.IntegerField(help_text="Published tasks of the split."),
    "pages": serializers.ListField(child=serializers.CharField(), help_text="Tasks with a page."),
    "missing": serializers.ListField(child=serializers.CharField(), help_text="Tasks that would score 0."),
    "ignored": serializers.ListField(child=serializers.CharField(), help_text="Top-level folders matching no task."),
    "layout": serializers.DictField(allow_null=True, help_text="kind: flat, nested, mixed or none."),
    "problems": serializers.ListField(child=serializers.CharField(), help_text="Why it would be refused."),
    "warnings": serializers.ListField(child=serializers.CharField()),
})
PROBLEMS = OpenApiResponse(description="Every problem, per field (`non_field_errors` for the whole form).")
OVER_QUOTA = OpenApiResponse(description="No submission left today: `Retry-After` gives the seconds to the reset.")


@extend_schema_view(
    list=extend_schema(summary="Your own submissions, newest first (paged)."),
    retrieve=extend_schema(summary="One submission (yours, or a public one)."),
    create=extend_schema(request={"multipart/form-data": SubmissionSerializer},
                         responses={201: SubmissionSerializer, 400: PROBLEMS, 429: OVER_QUOTA}),
    partial_update=extend_schema(request=EntryChangeSerializer,
                                 responses={200: SubmissionSerializer, 400: PROBLEMS,
                                            403: OpenApiResponse(description="Not your entry.")}),
    cancel=extend_schema(request=None, responses={200: SubmissionSerializer,
                                                  409: OpenApiResponse(description="It has finished.")}),
    results=extend_schema(responses={200: ResultsSerializer}),
)
class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your submissions: submit a bundle, follow its scoring, change its details, cancel it, download its results."""

    permission_classes = [IsAuthenticated, HasVerifiedEmail]
    parser_classes = [MultiPartParser, FormParser, JSONParser]
    serializer_class = SubmissionSerializer
    queryset = Submission.objects.none()  # every action reads through leaderboard.access
    http_method_names = ["get", "post", "patch", "head", "options"]

    def get_object(self) -> Submission:
        return access.viewable_submission(self.request.user, self.kwargs["pk"])

    def _managed(self) -> Submission:
        return access.managed_submission(self.request.user, self.kwargs["pk"])

    def list(self, request, *args, **kwargs):
        """Your own submissions, newest first."""
        mine = Submission.objects.filter(owner=request.user).order_by("-created_at", "-pk")
        return paginated(self, request, lambda page: [submission_status.status_payload(s, request.user)
                                                      for s in page], mine)

    def retrieve(self, request, *args, **kwargs):
        """One submission (yours, or a public one): status, progress, scores once scored, failure reason."""
        return Response(submission_status.status_payload(self.get_object(), request.user))

    def create(self, request, *args, **kwargs):
        """Submit a bundle (multipart): 201 with the new submission, 400 listing every problem, 429 over quota."""
        form = bundles.SubmissionForm(request.POST, request.FILES, user=request.user)
        if not form.is_valid():
            return refused_or_invalid(form)
        try:
            accepted = bundles.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            return quota_refused(exc.status, str(exc))
        payload = submission_status.status_payload(accepted.submission, request.user)
        return Response({**payload, "notes": accepted.notes}, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        """Change your entry's details or visibility, or withdraw it: 200 with its state, 400 per field."""
        submission = access.owned_entry(request.user, self.kwargs["pk"])
        try:
            form = entries.form_for(submission, form_data(request.data))
        except entries.BadChange as exc:
            return Response(exc.problems, status=status.HTTP_400_BAD_REQUEST)
        if not form.is_valid():
            return refused_or_invalid(form)
        changed = entries.save(form, request.user)
        return Response({**submission_status.status_payload(submission, request.user), "changed": changed.fields})

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel your submission: 200 with its state (queued: the quota is refunded), 409 once finished."""
        submission = self._managed()
        try:
            evaluations.cancel(submission)
        except evaluations.NotCancellable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(submission_status.status_payload(submission, request.user))

    @action(detail=True, methods=["get"], permission_classes=[])
    def results(self, request, pk=None):
        """The results as a JSON download: yours, or any public dev entry's (held-out split: scores only)."""
        submission = access.readable_results(request.user, pk)
        response = Response(submission_status.results_document(submission, request.user))
        response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-results.json"'
        return response


class BundleCheckView(APIView):
    """``POST /api/v1/bundles/check/``: a dry run of submitting a bundle (no quota, nothing stored)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": SubmissionSerializer}, responses={200: CheckReport, 400: PROBLEMS},
                   operation_id="bundles_check", tags=["bundles"])
    def post(self, request):
        """Check a bundle against the split's published tasks: 200 the report (``accepted`` false
        with its ``problems`` when it would be refused), 400 when the fields themselves are wrong."""
        form = bundles.CheckForm(request.POST, request.FILES)
        if not form.is_valid() or form.report is None:
            return refused_or_invalid(form)
        return Response(form.report)


class QuotaViewSet(viewsets.ViewSet):
    """``GET /api/v1/quota/``: submissions left today per split, and when the day resets."""

    permission_classes = [IsAuthenticated]
    schema = OneDocument()

    @extend_schema(responses={200: inline_serializer("Quotas", {"quotas": serializers.ListField(
        child=serializers.DictField(), help_text="Per split: limit, used, remaining, resets_at.")})})
    def list(self, request):
        return Response({"quotas": [item.as_dict() for item in quotas.all_statuses(request.user)]})

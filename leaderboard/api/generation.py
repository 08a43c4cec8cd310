"""Model-endpoint submissions API (token auth: ``Authorization: Token KEY``).

    POST /api/v1/endpoint-submissions/      JSON or form: split, model_name, base_url, model_id, optional
                                            api_key, max_tokens, max_images, max_frames,
                                            default_temperature, length_parameter, protocol,
                                            organisation, model_size, open_weights, paper_url, code_url,
                                            description, public -> 201 {id, status, generation}
    GET  /api/v1/endpoint-submissions/      your endpoint submissions and their generation state (paged)
    GET  /api/v1/endpoint-submissions/ID/   one of them (owner or staff): generation progress, the reason
                                            each missing page is missing, the evaluation once queued
    POST /api/v1/endpoint-submissions/ID/cancel/
                                            cancel (queued: quota refunded; generating: stops between tasks;
                                            being scored: the evaluation is cancelled); 409 once finished

The same form and rules as /submit/endpoint/. The API key is accepted once and never
returned; once pages are generated, follow scoring at ``/api/v1/submissions/ID/``.
"""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard import access, quotas
from leaderboard.accounts import HasVerifiedEmail
from leaderboard.api.answers import form_data, quota_refused, refused_or_invalid
from leaderboard.api.pagination import Pages, paginated
from leaderboard.intake import endpoints, evaluations
from leaderboard.intake import status as submission_status
from leaderboard.models import GenerationJob
from leaderboard.models.tasks import Split


class EndpointRequestSerializer(serializers.Serializer):
    """What POST takes (JSON or form); the endpoint form checks the values."""

    split = serializers.ChoiceField(choices=Split.choices)
    model_name = serializers.CharField()
    base_url = serializers.URLField(help_text="OpenAI-compatible API root; requests go to <base>/chat/completions.")
    model_id = serializers.CharField()
    api_key = serializers.CharField(required=False, write_only=True, help_text="Stored encrypted, never returned.")
    max_tokens = serializers.IntegerField(required=False)
    max_images = serializers.IntegerField(required=False, max_value=70)
    max_frames = serializers.IntegerField(required=False, max_value=64)
    default_temperature = serializers.BooleanField(required=False, help_text=(
        "Send no temperature: the model runs at its default (for endpoints refusing temperature 0)."))
    length_parameter = serializers.ChoiceField(choices=["max_tokens", "max_completion_tokens"], required=False)
    protocol = serializers.CharField(required=False, help_text="Default iwr-det.")
    organisation = serializers.CharField(required=False)
    model_size = serializers.CharField(required=False)
    open_weights = serializers.BooleanField(required=False)
    paper_url = serializers.URLField(required=False)
    code_url = serializers.URLField(required=False)
    description = serializers.CharField(required=False)
    public = serializers.BooleanField(required=False)


Generation = inline_serializer("EndpointSubmission", {
    "id": serializers.IntegerField(), "kind": serializers.CharField(), "model_name": serializers.CharField(),
    "split": serializers.CharField(), "protocol": serializers.CharField(), "public": serializers.BooleanField(),
    "created_at": serializers.DateTimeField(),
    "generation": serializers.DictField(help_text="status, tasks_done, tasks_total, task_errors, settings, ..."),
    "evaluation": serializers.DictField(allow_null=True, help_text="id and status once the pages are scored."),
})


ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The submission's id.")


@extend_schema_view(
    list=extend_schema(responses={200: Generation}),
    retrieve=extend_schema(parameters=[ID], responses={200: Generation}),
    create=extend_schema(request=EndpointRequestSerializer, responses={
        201: Generation, 400: OpenApiResponse(description="Every problem, per field."),
        429: OpenApiResponse(description="No submission left today (Retry-After).")}),
    cancel=extend_schema(parameters=[ID], request=None,
                         responses={200: Generation, 409: OpenApiResponse(description="It has finished.")}),
)
class EndpointSubmissionViewSet(viewsets.ViewSet):
    """Submit an OpenAI-compatible endpoint; the platform generates the pages, then scores them."""

    permission_classes = [IsAuthenticated, HasVerifiedEmail]
    parser_classes = [JSONParser, FormParser, MultiPartParser]
    pagination_class = Pages  # what the schema documents; list() pages with it

    def list(self, request):
        """Your endpoint submissions, newest first, with their generation state."""
        jobs = GenerationJob.objects.select_related("submission").filter(
            submission__owner=request.user).order_by("-submission__created_at", "-pk")
        return paginated(self, request, lambda page: [submission_status.generation_payload(job) for job in page],
                         jobs)

    def retrieve(self, request, pk=None):
        """Generation progress of one endpoint submission (owner or staff)."""
        job = access.managed_generation_job(request.user, _int(pk))
        return Response(submission_status.generation_payload(job))

    def create(self, request):
        """Accept an endpoint submission: 201 with its id, or 400 listing every problem (429: quota)."""
        request._request.sensitive_post_parameters = ["api_key"]  # hidden from Django's error reports
        form = endpoints.EndpointForm(form_data(request.data), user=request.user)
        if not form.is_valid():
            return refused_or_invalid(form)
        try:
            job = endpoints.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            return quota_refused(exc.status, str(exc))
        payload = submission_status.generation_payload(job)
        return Response({**payload, "status": job.status}, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Cancel an endpoint submission (owner or staff): 200 with its state, 409 once it has finished."""
        job = access.managed_generation_job(request.user, _int(pk))
        try:
            evaluations.cancel(job.submission)
        except evaluations.NotCancellable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        job.refresh_from_db()
        return Response(submission_status.generation_payload(job))


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound(access.NO_ENDPOINT_SUBMISSION) from None


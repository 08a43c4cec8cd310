"""Model-endpoint submissions API (token auth: ``Authorization: Token KEY``).

    POST /api/v1/endpoint-submissions/      JSON or form: split, model_name, base_url, model_id, optional
                                            api_key, max_tokens, max_images, max_frames, protocol,
                                            organisation, model_size, open_weights, paper_url, code_url,
                                            description, public -> 201 {id, status, generation}
    GET  /api/v1/endpoint-submissions/      your endpoint submissions and their generation state
    GET  /api/v1/endpoint-submissions/ID/   one of them (owner or staff): generation progress, the reason
                                            each missing page is missing, the evaluation once queued
    POST /api/v1/endpoint-submissions/ID/cancel/
                                            cancel (queued: quota refunded; generating: stops between tasks;
                                            being scored: the evaluation is cancelled); 409 once finished

The same form and rules as /submit/endpoint/. The API key is accepted once and never
returned; once pages are generated, follow scoring at ``/api/v1/submissions/ID/``.
"""

from __future__ import annotations

from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from leaderboard import access, quotas
from leaderboard.accounts import HasVerifiedEmail
from leaderboard.api.submissions import form_problems
from leaderboard.intake import endpoints, evaluations
from leaderboard.intake import status as submission_status
from leaderboard.models import GenerationJob


class EndpointSubmissionViewSet(viewsets.ViewSet):
    """Submit an OpenAI-compatible endpoint; the platform generates the pages, then scores them."""

    permission_classes = [IsAuthenticated, HasVerifiedEmail]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    def list(self, request):
        """Your endpoint submissions, newest first, with their generation state."""
        jobs = GenerationJob.objects.select_related("submission").filter(
            submission__owner=request.user).order_by("-submission__created_at")
        return Response([submission_status.generation_payload(job) for job in jobs])

    def retrieve(self, request, pk=None):
        """Generation progress of one endpoint submission (owner or staff)."""
        job = access.managed_generation_job(request.user, _int(pk))
        return Response(submission_status.generation_payload(job))

    def create(self, request):
        """Accept an endpoint submission: 201 with its id, or 400 listing every problem (429: quota)."""
        request._request.sensitive_post_parameters = ["api_key"]  # hidden from Django's error reports
        form = endpoints.EndpointForm(_form_data(request.data), user=request.user)
        if not form.is_valid():
            return Response(form_problems(form), status=status.HTTP_400_BAD_REQUEST)
        try:
            job = endpoints.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_429_TOO_MANY_REQUESTS)
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


def _form_data(data) -> dict:
    """Request data as a form expects it: JSON numbers and booleans pass through, lists become one value."""
    if hasattr(data, "dict"):
        return data.dict()
    return {key: value for key, value in data.items()} if isinstance(data, dict) else {}

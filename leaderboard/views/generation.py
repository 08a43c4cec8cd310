"""Submitting a model endpoint, following its page generation, downloading the generated bundle.

Every view touching a submission starts with :func:`leaderboard.access.managed_generation_job`
(owner or staff): anyone else gets a 404, so others' endpoint submissions are indistinguishable from missing ones. The
API key field is marked sensitive so Django's error reports never include it.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django.views.decorators.http import require_GET, require_http_methods

from leaderboard import access, quotas
from leaderboard.intake import endpoints, status


@sensitive_variables()
@sensitive_post_parameters("api_key")
@login_required
@require_http_methods(["GET", "POST"])
def submit_endpoint(request):
    form = endpoints.EndpointForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            job = endpoints.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Submission #{job.submission_id} was accepted: its pages are being "
                                      "generated, then they will be scored.")
            return redirect("generation-status", pk=job.submission_id)
    context = {"form": form, "quotas": quotas.all_statuses(request.user)}
    return render(request, "leaderboard/generation/submit.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
@never_cache
def generation_status(request, pk: int):
    job = access.managed_generation_job(request.user, pk)
    state = status.generation_payload(job)
    errors = sorted(state["generation"]["task_errors"].items())
    return render(request, "leaderboard/generation/status.html",
                  {"job": job, "submission": job.submission, "state": state, "errors": errors})


@login_required
@require_GET
def generated_bundle(request, pk: int):
    """The generated bundle zip (owner or staff), once generation has stored it."""
    job = access.managed_generation_job(request.user, pk)
    if not job.submission.bundle:
        raise Http404("This submission has no generated bundle yet.")
    return FileResponse(job.submission.bundle.open("rb"), as_attachment=True,
                        filename=f"submission-{job.submission_id}-bundle.zip", content_type="application/zip")

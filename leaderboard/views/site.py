"""Site-wide pages: health check and the About page."""

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from leaderboard.health import run_checks
from leaderboard.models.tasks import Split


@require_GET
@never_cache
def healthz(request):
    checks = run_checks()
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unhealthy", "checks": checks}, status=200 if healthy else 503)


@require_GET
def about(request):
    """What IWR-Bench is, how it is scored and how to submit, with this site's own quotas."""
    quotas = [{"split": split, "limit": int(settings.SUBMISSION_QUOTAS.get(split, 0))}
              for split in (Split.TEST, Split.DEV)]
    return render(request, "leaderboard/about.html",
                  {"quotas": quotas, "max_bundle_mb": settings.SUBMISSION_MAX_BUNDLE_MB})

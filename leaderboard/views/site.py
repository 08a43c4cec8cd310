"""Site-wide pages: health check and the About page."""

from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from leaderboard.health import run_checks


@require_GET
@never_cache
def healthz(request):
    checks = run_checks()
    healthy = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unhealthy", "checks": checks}, status=200 if healthy else 503)


@require_GET
def about(request):
    return render(request, "leaderboard/about.html")

"""Deployment checks of the site's configuration (``manage.py check --deploy``).

They run only with ``--deploy`` so a local demo (scripts/run.sh) stays quiet; docker/web-entrypoint.sh
runs them when the web container starts.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.security, deploy=True)
def preview_origin_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """In production, previews of submitted pages should come from a host of their own."""
    if getattr(settings, "IWR_ENV", "") != "production" or settings.PREVIEW_ORIGIN:
        return []
    return [checks.Warning(
        "Live previews of submitted pages are served from this site's own host name (IWR_PREVIEW_ORIGIN is empty).",
        hint=("They run sandboxed in an opaque origin under a restrictive Content-Security-Policy, so a page cannot "
              "read this site's cookies or storage; a separate host is still recommended as a second line of "
              "defence (for instance if a browser ignored the sandbox). Point a second host name at this site, add "
              "it to DJANGO_ALLOWED_HOSTS and set IWR_PREVIEW_ORIGIN=https://preview.example.org."),
        id="leaderboard.W001",
    )]

"""Response headers of every page, and the preview origin kept to previews.

Every answer gets a Content-Security-Policy unless its view set a stricter one of its own (live
previews, replay and task files): scripts only from this site's static files (pages have no
inline script), no plugins, no framing of the site (``frame-ancestors 'none'``, with
X-Frame-Options from Django), forms posting only here (and to the configured sign-in providers,
which a sign-in form redirects to). Referrer-Policy, HSTS and nosniff come from Django's
SecurityMiddleware (settings in :mod:`leaderboard.websettings`).

When previews have their own host name (``IWR_PREVIEW_ORIGIN``), that host answers preview links
only: everything else there is a 404, so the site's pages, forms and cookies never live on the
origin where submitted pages run.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponseNotFound

PREVIEW_PATH = "/preview/"
PROVIDER_ORIGINS = {"github": "https://github.com", "openid_connect": "https://huggingface.co"}


def content_security_policy() -> str:
    """The site's policy, built from the settings (preview origin, sign-in providers)."""
    frames = " ".join(["'self'", *([settings.PREVIEW_ORIGIN] if settings.PREVIEW_ORIGIN else [])])
    providers = [origin for name, origin in PROVIDER_ORIGINS.items() if name in settings.SOCIALACCOUNT_PROVIDERS]
    return "; ".join([
        "default-src 'self'",
        "script-src 'self'",
        # Plotly sets style attributes and adds style sheets from script; templates use style attributes.
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "media-src 'self' blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        f"frame-src {frames}",
        "frame-ancestors 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action " + " ".join(["'self'", *providers]),
    ])


def preview_host() -> str:
    """The host name previews are served from when it is not this site's, else ""."""
    return (urlsplit(settings.PREVIEW_ORIGIN).hostname or "").lower() if settings.PREVIEW_ORIGIN else ""


class HeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = content_security_policy()
        self.preview_host = preview_host()

    def __call__(self, request):
        if self.preview_host and request.get_host().split(":")[0].lower() == self.preview_host \
                and not request.path.startswith(PREVIEW_PATH):
            response = HttpResponseNotFound("Only preview links are served on this host.",
                                            content_type="text/plain; charset=utf-8")
        else:
            response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        response.headers.setdefault("Cross-Origin-Resource-Policy", "same-site")
        return response

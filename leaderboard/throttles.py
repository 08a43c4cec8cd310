"""Per-client throttles of the heavier public pages (exports, chart data), with DRF's machinery.

Keyed like the API's anonymous throttle on the client address, which behind the proxy is the one
it appended to X-Forwarded-For (``REST_FRAMEWORK["NUM_PROXIES"]``), so one client cannot take
the site's share and clients behind one proxy are not lumped together. Rates are in
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (``IWR_RATE_EXPORTS``, ``IWR_RATE_CHARTS``).
"""

from __future__ import annotations

from functools import wraps

from django.http import HttpResponse
from rest_framework.throttling import SimpleRateThrottle


class ClientRateThrottle(SimpleRateThrottle):
    def __init__(self, scope: str):
        self.scope = scope
        super().__init__()

    def get_rate(self):
        from django.conf import settings

        return settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][self.scope]  # read now: settings may change

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def throttled(scope: str):
    """Decorate a view: past the scope's rate a client gets 429 with Retry-After."""

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            throttle = ClientRateThrottle(scope)
            if not throttle.allow_request(request, None):
                wait = int(throttle.wait() or 1)
                response = HttpResponse(f"Too many requests: try again in {wait} s.", status=429,
                                        content_type="text/plain; charset=utf-8")
                response["Retry-After"] = str(wait)
                return response
            return view(request, *args, **kwargs)

        return wrapped

    return decorate

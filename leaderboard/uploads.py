"""Bundle uploads: refused before their bodies are read, and the size limit held while they stream.

:class:`UploadGateMiddleware` runs after authentication and before any view or the CSRF check
reads a body (they parse it to look for the form's token). For a POST to an upload address it

- refuses an anonymous request (no session, no valid API token) and a user without a verified
  e-mail address (:mod:`leaderboard.accounts`), unread;
- refuses an announced ``Content-Length`` over the limit at once (413);
- reads a body sent without a length (chunked) itself, stopping with 413 as soon as it passes the
  limit, and hands the view what it read with its length;

and refuses any other anonymous POST with a body larger than :data:`ANONYMOUS_BODY_BYTES`
(sign-in forms are small). :class:`BundleLimitUploadHandler` then counts each uploaded file's bytes
while the multipart parser streams them: past the limit it stores nothing more, and the form sees an
upload whose ``size`` is over the limit (the Submit page's usual message, no file kept).
"""

from __future__ import annotations

import tempfile

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import Resolver404, resolve

from leaderboard import accounts

# Upload addresses (URL names) -> whether the API answers them (JSON) or the browser (pages).
UPLOAD_VIEWS = {"submit": False, "submit-endpoint": False,
                "api-submission-list": True, "api-endpoint-submission-list": True}
ANONYMOUS_BODY_BYTES = 64 * 1024
FORM_FIELDS_BYTES = 1024 * 1024  # room for the other form fields and the multipart framing
READ_CHUNK = 1024 * 1024


def bundle_limit() -> int:
    return settings.SUBMISSION_MAX_BUNDLE_MB * 1024 * 1024


def body_limit() -> int:
    return bundle_limit() + FORM_FIELDS_BYTES


def too_large(api: bool) -> HttpResponse:
    text = f"The upload is larger than the limit of {settings.SUBMISSION_MAX_BUNDLE_MB} MB."
    if api:
        return JsonResponse({"detail": text}, status=413)
    return HttpResponse(text, status=413, content_type="text/plain; charset=utf-8")


def _upload_view(request) -> bool | None:
    """True (API) or False (browser) when the request posts to an upload address, else None."""
    try:
        name = resolve(request.path_info).url_name
    except Resolver404:
        return None
    return UPLOAD_VIEWS.get(name)


def _token_user(request):
    """The user of an ``Authorization: Token KEY`` header, None when absent or not a valid token."""
    from rest_framework.authtoken.models import Token

    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "token" or not key.strip():
        return None
    token = Token.objects.select_related("user").filter(key=key.strip()).first()
    return token.user if token is not None and token.user.is_active else None


def _announced_length(request) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _chunked(request) -> bool:
    return "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


class UploadGateMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST":
            refused = self.check(request)
            if refused is not None:
                return refused
        return self.get_response(request)

    def check(self, request) -> HttpResponse | None:
        api = _upload_view(request)
        if api is None:
            return self.check_other(request)
        user = request.user if request.user.is_authenticated else _token_user(request)
        if user is None:
            if api:
                return JsonResponse({"detail": "Authentication credentials were not provided."}, status=401)
            return redirect(f"/accounts/login/?next={request.path}")
        if not accounts.has_verified_email(user):
            if api:
                return JsonResponse({"detail": accounts.VERIFY_FIRST}, status=403)
            messages.warning(request, accounts.VERIFY_FIRST)
            return redirect("account_email")
        return self.check_size(request, api)

    def check_size(self, request, api: bool) -> HttpResponse | None:
        length = _announced_length(request)
        if length is not None and length > body_limit():
            return too_large(api)
        if length is None and _chunked(request):
            body = read_capped(request.environ["wsgi.input"], body_limit())
            if body is None:
                return too_large(api)
            size = body.seek(0, 2)
            body.seek(0)
            request.META["CONTENT_LENGTH"] = str(size)
            request._stream = LimitedStream(body, size)
        return None

    def check_other(self, request) -> HttpResponse | None:
        """Anonymous POSTs elsewhere are forms of a few fields: a large or unannounced body is refused."""
        if request.user.is_authenticated or request.headers.get("Authorization"):
            return None
        length = _announced_length(request)
        if (length is None and _chunked(request)) or (length or 0) > ANONYMOUS_BODY_BYTES:
            return HttpResponse("Sign in to send this much.", status=413, content_type="text/plain; charset=utf-8")
        return None


def read_capped(stream, limit: int):
    """A spooled file with everything ``stream`` holds, or None as soon as it passes ``limit`` bytes."""
    body = tempfile.SpooledTemporaryFile(max_size=2 * READ_CHUNK, prefix="iwr-upload-")
    total = 0
    while chunk := stream.read(READ_CHUNK):
        total += len(chunk)
        if total > limit:
            body.close()
            return None
        body.write(chunk)
    return body


class OversizeUpload(UploadedFile):
    """What the form gets for a file that passed the limit: its name and the size it reached, no bytes."""

    def __init__(self, name: str, content_type: str, size: int):
        super().__init__(tempfile.SpooledTemporaryFile(max_size=1), name, content_type, size)


class BundleLimitUploadHandler(FileUploadHandler):
    """Counts every uploaded file's bytes; past the bundle limit the rest is dropped unstored."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0
        self.over = False

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > bundle_limit():
            self.over = True
        return None if self.over else raw_data  # None: the handlers after this one never see it

    def file_complete(self, file_size):
        if not self.over:
            return None  # the next handler (memory or temporary file) holds the upload
        return OversizeUpload(self.file_name, self.content_type, self.received)

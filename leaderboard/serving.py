"""Serving stored files (task files, replay videos and screenshots, input zips) after a view's access check.

:func:`serve_file` is the one way views answer with a file:

- ``FILE_SERVING = "x-accel"`` (behind docker/compose.yaml's nginx): an empty answer whose
  ``X-Accel-Redirect`` names the file under an internal location of the proxy
  (``/protected/<root>/<path>``); nginx sends it, with byte ranges, and web threads never stream
  files. Only files under a known root (:func:`roots`) go this way; anything else is streamed.
- ``"django"`` (the embedded default): Django streams the file and answers a single byte range
  with 206, which browsers need to seek in replay videos.

Either way the answer carries the caller's headers (the file's CSP, nosniff, caching).
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.http import FileResponse, HttpResponse

RANGE = re.compile(r"bytes=(\d*)-(\d*)")
RANGE_LIMIT = 8 * 1024 * 1024  # bytes of one partial answer, read into memory


def roots() -> dict[str, Path]:
    """Internal location name -> folder the proxy may send files from (docker/nginx.conf)."""
    return {"tasks": Path(settings.TASKS_ROOT).resolve(), "artifacts": Path(settings.ARTIFACTS_ROOT).resolve()}


def accel_path(path: Path) -> str | None:
    """``/protected/<root>/<path below it>`` (percent-encoded) for a file under a known root, else None."""
    resolved = Path(path).resolve()
    for name, root in roots().items():
        if resolved.is_relative_to(root):
            below = resolved.relative_to(root).as_posix()
            return quote(f"{settings.FILE_SERVING_PREFIX.rstrip('/')}/{name}/{below}")
    return None


def serve_file(request, path: Path, *, download_name: str | None = None, headers: dict | None = None,
               staff_only: bool = False):
    """Answer ``request`` with the file at ``path`` (already access-checked by the caller).

    ``staff_only``: a file only staff may see (held-out ground truth or results): no cache but the
    reader's own may keep it, whatever ``headers`` say."""
    content_type = mimetypes.guess_type(Path(path).name)[0] or "application/octet-stream"
    internal = accel_path(path) if settings.FILE_SERVING == "x-accel" else None
    if internal:
        response = HttpResponse(content_type=content_type)
        response["X-Accel-Redirect"] = internal
    else:
        response = _django_response(request, Path(path), content_type, download_name)
    if download_name:
        response["Content-Disposition"] = f'attachment; filename="{download_name}"'
    if not internal:
        response["Accept-Ranges"] = "bytes"  # the proxy says so itself
    for name, value in (headers or {}).items():
        response[name] = value
    if staff_only:
        response["Cache-Control"] = "private, no-store"
    return response


def _django_response(request, path: Path, content_type: str, download_name: str | None):
    size = path.stat().st_size
    wanted = byte_range(request.headers.get("Range", ""), size)
    if wanted is None:
        return FileResponse(open(path, "rb"), content_type=content_type,
                            as_attachment=bool(download_name), filename=download_name or "")
    if wanted == "unsatisfiable":
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
        return response
    start, end = wanted
    with open(path, "rb") as handle:
        handle.seek(start)
        body = handle.read(end - start + 1)
    response = HttpResponse(body, status=206, content_type=content_type)
    response["Content-Range"] = f"bytes {start}-{start + len(body) - 1}/{size}"
    return response


def byte_range(header: str, size: int):
    """(start, end) of a single ``bytes=`` range, "unsatisfiable", or None for the whole file
    (no header, a malformed one, or several ranges: answered with the whole file, as HTTP allows)."""
    match = RANGE.fullmatch(header.strip())
    if not match or match[1] == match[2] == "":
        return None
    if match[1] == "":  # bytes=-N: the last N bytes
        start, end = max(size - int(match[2]), 0), size - 1
    else:
        start = int(match[1])
        end = min(int(match[2]), size - 1) if match[2] else size - 1
    if start >= size or end < start:
        return "unsatisfiable"
    return start, min(end, start + RANGE_LIMIT - 1)  # the browser asks again for the rest


"""Public task pages: the task list, a task's page, its public files and input downloads.

Only published tasks are shown. Test-split tasks show their inputs only; dev-split tasks
also show their action sequence and checkpoints (the dev ground truth is public).
Which files may be fetched is decided by :func:`leaderboard.tasksets.public_file_path`.
"""

from __future__ import annotations

import mimetypes
import re

from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from leaderboard import access, tasksets
from leaderboard.models import TaskSet
from leaderboard.models.tasks import Split

PAGE_SIZE = 100
# Open-ended range requests ("bytes=N-") are answered this many bytes at a time.
RANGE_CHUNK = 4 * 1024 * 1024
FILTER_LABELS = {"set": "Task set", "split": "Split", "interaction": "Interaction", "visual": "Visual",
                 "domain": "Domain"}
# Task files may come from crawled sites (SVG with script, say): never let one run here.
FILE_CSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox"


@require_GET
def task_list(request):
    published = tasksets.public_tasks()
    tasks, chosen = tasksets.filter_tasks(published, request.GET)
    page = Paginator(tasksets.in_natural_order(tasks), PAGE_SIZE).get_page(request.GET.get("page"))
    facets = tasksets.facets(published)
    context = {
        "page": page,
        "chosen": chosen,
        "filters": [
            {"name": name, "label": label, "values": facets[name], "selected": chosen.get(name, "")}
            for name, label in FILTER_LABELS.items()
        ],
        "n_domains": len(facets["domain"]),
        "split_downloads": _split_downloads(published),
        "total": published.count(),
        "query": _query_without_page(request),
    }
    return render(request, "leaderboard/tasks/list.html", context)


def _split_downloads(published) -> list[dict]:
    pairs = published.order_by().values_list("task_set__slug", "task_set__name", "split").distinct()
    return [{"slug": slug, "name": name, "split": split} for slug, name, split in sorted(set(pairs))]


def _query_without_page(request) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


@require_GET
def task_detail(request, set_slug: str, key: str):
    task = access.public_task(set_slug, key)
    files = tasksets.public_files(task)
    context = {
        "task": task,
        "files": files,
        "actions": tasksets.dev_actions(task),
        "checkpoints": tasksets.checkpoint_captions(task, files.checkpoints) if task.split == Split.DEV else [],
        "is_dev": task.split == Split.DEV,
    }
    return render(request, "leaderboard/tasks/detail.html", context)


@require_GET
def task_file(request, set_slug: str, key: str, path: str):
    task = access.public_task(set_slug, key)
    file_path = tasksets.public_file_path(task, path)
    if file_path is None:
        raise Http404("No such public file.")
    return file_response(request, file_path)


def file_response(request, file_path, download_name: str | None = None, public: bool = True) -> HttpResponse:
    """Serve a stored task file with headers that keep it inert on this origin.

    Single byte ranges are answered (206) so videos can be seeked; ``public=False`` keeps
    shared caches from storing the file (staff-only files).
    """
    content_type = mimetypes.guess_type(file_path.name)[0] or "application/octet-stream"
    size = file_path.stat().st_size
    wanted = None if download_name else _byte_range(request.headers.get("Range", ""), size)
    if wanted == "unsatisfiable":
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
    elif wanted:
        response = _partial_response(file_path, *wanted, size, content_type)
    else:
        response = FileResponse(
            open(file_path, "rb"), content_type=content_type,
            as_attachment=bool(download_name), filename=download_name or "",
        )
    response["Accept-Ranges"] = "bytes"
    response["Content-Security-Policy"] = FILE_CSP
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "public, max-age=3600" if public else "private, no-store"
    return response


def _byte_range(header: str, size: int):
    """(start, end) of a single "bytes=" range, "unsatisfiable", or None to send the whole file."""
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", header.strip())
    if not match or match.group(1) == match.group(2) == "":
        return None
    if match.group(1) == "":  # the last N bytes
        start, end = max(size - int(match.group(2)), 0), size - 1
    else:
        start = int(match.group(1))
        end = min(int(match.group(2)) if match.group(2) else start + RANGE_CHUNK - 1, size - 1)
    if start >= size or end < start:
        return "unsatisfiable"
    return start, end


def _partial_response(file_path, start: int, end: int, size: int, content_type: str) -> HttpResponse:
    with open(file_path, "rb") as handle:
        handle.seek(start)
        data = handle.read(end - start + 1)
    response = HttpResponse(data, status=206, content_type=content_type)
    response["Content-Range"] = f"bytes {start}-{end}/{size}"
    return response


@require_GET
def task_inputs_zip(request, set_slug: str, key: str):
    task = access.public_task(set_slug, key)
    return file_response(request, tasksets.task_inputs_zip(task), f"{set_slug}-{key}-inputs.zip")


@require_GET
def split_inputs_zip(request, set_slug: str, split: str):
    task_set = get_object_or_404(TaskSet, slug=set_slug)
    if split not in Split.values:
        raise Http404("No such split.")
    path = tasksets.split_inputs_zip(task_set, split)
    if path is None:
        raise Http404("This split has no published tasks.")
    return file_response(request, path, f"{set_slug}-{split}-inputs.zip")

"""Public task pages: the task list, a task's page, its public files and input downloads.

Only published tasks are shown. Test-split tasks show their inputs only; dev-split tasks
also show their action sequence and checkpoints (the dev ground truth is public).
Which files may be fetched is decided by :func:`leaderboard.tasksets.public_file_path`.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from leaderboard import access, tasksets
from leaderboard.models import TaskSet
from leaderboard.models.tasks import Split
from leaderboard.serving import serve_file

PAGE_SIZE = 100
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
    """Serve a stored task file with headers that keep it inert on this origin (byte ranges and the
    proxy's X-Accel-Redirect: :func:`leaderboard.serving.serve_file`); ``public=False`` keeps shared
    caches from storing the file (staff-only files)."""
    return serve_file(request, file_path, download_name=download_name, staff_only=not public, headers={
        "Content-Security-Policy": FILE_CSP, "X-Content-Type-Options": "nosniff",
        "Cache-Control": "public, max-age=3600"})


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

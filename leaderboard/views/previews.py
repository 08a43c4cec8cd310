"""Live preview of a submitted page: the signed preview URLs and the submission page's panel.

The preview view never looks at the session or the user (the signed link is the permission),
so it sets no cookie and works on a separate preview host; every answer, errors included,
carries the sandboxing headers of :func:`leaderboard.previews.harden`.
"""

from __future__ import annotations

from django.http import FileResponse, HttpResponse
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_safe

from evaluator.page_session import content_type
from leaderboard import access, previews, tasksets
from leaderboard.models import Submission

HTML = "text/html; charset=utf-8"
NOTE = ('<!doctype html><meta charset="utf-8"><title>{title}</title>'
        '<body style="font: 15px/1.5 system-ui, sans-serif; color: #6b7280; display: grid; place-items: center; '
        'height: 90vh; margin: 0; text-align: center"><p>{text}</p></body>')


@require_safe
@xframe_options_exempt  # framing is governed by the CSP's frame-ancestors instead
def preview(request, token: str, path: str = ""):
    """One file under a preview link: the task's page (``""``), a file of the bundle, or an asset."""
    link_path = reverse("preview", args=[token])
    link_url = request.build_absolute_uri(link_path)
    target = previews.resolve(token)
    if target is None:
        response = _note("This preview link is not valid (it may have expired): reload the submission page.")
    else:
        response = _serve(target, path, link_path)
    response = previews.harden(response, link_url)
    if target is not None and access.reveals_ground_truth(target.submission):
        response["Cache-Control"] = "private, no-store"  # a held-out reference page: staff only, kept nowhere
    return response


def _serve(target: previews.Target, path: str, link_path: str):
    folder = previews.unpacked(target.submission)
    if folder is None:
        return _note("The bundle cannot be read right now. Try again in a minute.", status=503)
    if path in ("", "index.html"):
        html = previews.page_html(folder, target.task.key, link_path)
        if html is None:
            return _note(f"The bundle has no page for task {escape(target.task.key)}.")
        return HttpResponse(html, content_type=HTML)
    file = previews.file_path(folder, target.task, path)
    if file is None:
        return HttpResponse("Not found.", status=404, content_type="text/plain; charset=utf-8")
    return FileResponse(open(file, "rb"), content_type=content_type(file))


def _note(text: str, status: int = 404) -> HttpResponse:
    return HttpResponse(NOTE.format(title="Preview", text=text), status=status, content_type=HTML)


def preview_context(request, submission: Submission) -> dict:
    """The submission page's preview panel: a signed link per task of the split, one of them shown
    (``?preview=KEY``). Empty when this reader may not preview the submission."""
    reader = previews.audience(request.user, submission)
    if not previews.allowed(submission, reader):
        return {}
    tasks = list(tasksets.split_tasks(submission.split))
    if not tasks:
        return {}
    wanted = request.GET.get("preview")
    options = [{"key": task.key, "url": previews.link(submission, task.key, reader), "width": task.width or 1280,
                "height": task.height or 720, "selected": task.key == wanted} for task in tasks]
    chosen = next((option for option in options if option["selected"]), options[0])
    chosen["selected"] = True
    return {"preview": {"options": options, "chosen": chosen}}


def preview_page(request, submission: Submission) -> str:
    """Where the per-task table links "Preview" (the submission page's panel), or "" when none."""
    if not previews.allowed(submission, previews.audience(request.user, submission)):
        return ""
    return reverse("submission-detail", args=[submission.pk])

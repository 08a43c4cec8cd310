"""Submit page, my submissions, one submission's page with live progress, cancel, results.

Every view touching a submission starts with an access helper (:mod:`leaderboard.access`):
``viewable_submission`` (public ones, one's own, or staff) or ``managed_submission`` (owner or
staff). Anything else is a 404, so private submissions of others are indistinguishable from
missing ones.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from leaderboard import access, heldout, quotas, ranking
from leaderboard.intake import bundles, entries, evaluations, status
from leaderboard.models import Evaluation, GenerationJob, Submission
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.views import previews, replays


def _is_xhr(request) -> bool:
    return request.headers.get("X-Requested-With") == "XMLHttpRequest"


@login_required
@require_http_methods(["GET", "POST"])
def submit(request):
    if request.method == "POST" and request.POST.get("check_only"):
        return _check_only(request)
    form = bundles.SubmissionForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            accepted = bundles.accept(form, request.user)
        except quotas.QuotaExceeded as exc:
            form.add_error(None, str(exc))
        else:
            return _accepted(request, accepted)
    if request.method == "POST" and _is_xhr(request):
        html = render_to_string("leaderboard/submissions/_form.html", {"form": form}, request=request)
        return JsonResponse({"form_html": html}, status=400)
    return render(request, "leaderboard/submissions/submit.html",
                  {"form": form, "quotas": quotas.all_statuses(request.user)}, status=400 if form.errors else 200)


def _check_only(request):
    """"Check only": the bundle checked against the split's tasks, nothing stored, no quota spent."""
    form = bundles.CheckForm(request.POST, request.FILES)
    context = {"form": form, "check": form.report if form.is_valid() else None}
    if _is_xhr(request):
        html = render_to_string("leaderboard/submissions/_form.html", context, request=request)
        return JsonResponse({"form_html": html}, status=200 if context["check"] else 400)
    return render(request, "leaderboard/submissions/submit.html",
                  {**context, "quotas": quotas.all_statuses(request.user)}, status=200 if context["check"] else 400)


def _accepted(request, accepted):
    messages.success(request, f"Submission #{accepted.submission.pk} was accepted and queued for scoring.")
    for note in accepted.notes:
        messages.warning(request, note)
    url = f"/submissions/{accepted.submission.pk}/"
    if _is_xhr(request):
        return JsonResponse({"redirect": url, "id": accepted.submission.pk}, status=201)
    return redirect(url)


@login_required
@require_GET
def submission_list(request):
    rows = []
    for submission in Submission.objects.filter(owner=request.user):
        evaluation = submission.primary_evaluation
        scores = {name: getattr(evaluation, name, None) for name in ("final", "ifs", "vfs")}
        rows.append(_with_percents({"submission": submission, "evaluation": evaluation, **scores}))
    return render(request, "leaderboard/submissions/list.html",
                  {"rows": rows, "quotas": quotas.all_statuses(request.user)})


def percent(value) -> str:
    """A score fraction as the site shows it: 36.35 (empty when there is none)."""
    return ranking.percent(value, missing="")


def _with_percents(row: dict) -> dict:
    return {**row, **{f"{name}_pct": percent(row.get(name)) for name in ("final", "ifs", "vfs")}}


def _score_display(state: dict) -> dict:
    scores = state.get("scores") or {}
    shown = {name: percent(scores.get(name)) for name in SCORE_FIELDS}
    for name in SCORE_FIELDS:
        low, high = scores.get(f"{name}_ci_low"), scores.get(f"{name}_ci_high")
        shown[f"{name}_ci"] = f"95% CI {percent(low)}\u2013{percent(high)}" if low is not None else ""
    return shown


def is_live(submission: Submission, status: str) -> bool:
    """Whether the page should keep polling: scoring not finished, or pages still being generated
    (an endpoint submission whose generation failed or was cancelled never gets an evaluation)."""
    if status in (Evaluation.Status.QUEUED, Evaluation.Status.RUNNING):
        return True
    if status != "generating":
        return False
    job = GenerationJob.objects.filter(submission=submission).first()
    return job is not None and not job.is_finished


@require_GET
def submission_detail(request, pk: int):
    """Summary, scores with intervals and rank, category charts, per-task table, live preview."""
    submission = access.viewable_submission(request.user, pk)
    evaluation = submission.primary_evaluation
    state = status.status_payload(submission, request.user)
    others = submission.evaluations.exclude(pk=getattr(evaluation, "pk", None)).order_by("created_at")
    live = is_live(submission, state["status"])
    context = {
        "submission": submission, "evaluation": evaluation, "state": state, "scores": _score_display(state),
        "live": live, "can_manage": access.can_manage(request.user, submission),
        "entry": replays.standing(evaluation) if evaluation is not None else None,
        "protocol_label": ranking.protocol_label(evaluation.protocol if evaluation else submission.protocol),
        "other_evaluations": [_with_percents({**vars(other)}) for other in others],
        "lb_task_table_live": live,
        "entry_form": entries.EntryForm(instance=submission) if access.may_edit_entry(request.user, submission)
        else None,
        "public_results": access.may_read_results(AnonymousUser(), submission),
        "log": heldout.log_for(request.user, evaluation) if evaluation is not None and access.can_manage(
            request.user, submission) else "",
        "default_temperature": submission.kind == Submission.Kind.ENDPOINT and GenerationJob.objects.filter(
            submission=submission, ran_at_default_temperature=True).exists(),
    }
    if evaluation is not None:
        context.update(replays.evaluation_context(request, evaluation))
    context.update(previews.preview_context(request, submission))
    return render(request, "leaderboard/submissions/detail.html", context)


@require_GET
@never_cache
def submission_progress(request, pk: int):
    """Small JSON the submission page polls: status, counts, scores, failure, per-task rows.

    ``tasks`` are the raw per-task scores (fractions); ``rows`` the same tasks as the page's
    table shows them (percent, failure reason, replay link); ``live`` says whether to poll on.
    """
    submission = access.viewable_submission(request.user, pk)
    evaluation = submission.primary_evaluation
    state = status.status_payload(submission, request.user)
    state["live"] = is_live(submission, state["status"])
    state["tasks"] = status.task_rows(evaluation, request.user)
    state["rows"] = replays.task_rows(evaluation, request.user) if evaluation is not None else []
    if evaluation is not None and evaluation.is_finished and access.can_manage(request.user, submission):
        state["log"] = heldout.log_for(request.user, evaluation)
    return JsonResponse(state, encoder=DjangoJSONEncoder)


@login_required
@require_POST
def submission_cancel(request, pk: int):
    submission = access.managed_submission(request.user, pk)
    try:
        evaluation = evaluations.cancel(submission)
    except evaluations.NotCancellable as exc:
        messages.error(request, str(exc))
    else:
        refunded = " Your quota was refunded." if not submission.charged else ""
        messages.success(request, f"Submission #{submission.pk} is {evaluation.status}.{refunded}")
    return redirect(f"/submissions/{submission.pk}/")


@login_required
@require_POST
def submission_edit(request, pk: int):
    """The owner changes the entry's details, its visibility, or withdraws it (logged; boards refreshed)."""
    submission = access.owned_entry(request.user, pk)
    form = entries.EntryForm(request.POST, instance=submission)
    if not form.is_valid():
        problems = "; ".join(f"{'' if name == '__all__' else form.fields[name].label + ': '}{' '.join(errors)}"
                             for name, errors in form.errors.items())
        messages.error(request, f"The entry was not changed. {problems}")
        return redirect(f"/submissions/{submission.pk}/")
    changed = entries.save(form, request.user)
    if changed.fields:
        messages.success(request, "Changed: " + ", ".join(name.replace("_", " ") for name in changed.fields) + ".")
    else:
        messages.info(request, "Nothing was changed.")
    return redirect(f"/submissions/{submission.pk}/")


@require_GET
def submission_results(request, pk: int):
    """Download the results as JSON (owner or staff; everyone for a public dev entry; held-out split:
    scores only)."""
    submission = access.readable_results(request.user, pk)
    document = status.results_document(submission, request.user)
    response = HttpResponse(json.dumps(document, cls=DjangoJSONEncoder, indent=1),
                            content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-results.json"'
    response["Cache-Control"] = "private, no-store"  # what the reader may see (staff: every step of held-out tasks)
    return response

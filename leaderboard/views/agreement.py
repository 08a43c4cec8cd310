"""Agreement of the deterministic judge and the paper's judge: per submission, and over a protocol's board."""

from __future__ import annotations

from django.core.cache import cache
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from leaderboard import access, agreement, official, ranking
from leaderboard import cache as board_cache
from leaderboard.cache import CACHE_SECONDS
from leaderboard.models.tasks import Split


def _rate_rows(rates: dict) -> list[dict]:
    return [{"label": label, "rate": ranking.percent(rate.fraction), "agreed": rate.agreed, "steps": rate.steps,
             "tasks": rate.tasks} for label, rate in rates.items()]


def _category_sections(viewer, split: str, pairs) -> list[dict]:
    by_axis = agreement.rates_by_category(viewer, split, pairs)
    return [{"label": ranking.AXIS_LABELS[axis], "rows": _rate_rows(rates)} for axis, rates in by_axis.items()]


@require_GET
def evaluation_agreement(request, evaluation_id: int):
    """One official evaluation beside its submission's iwr-det evaluation: every task's steps side by
    side (held-out tasks to staff only), agreement rates per split and per category (pooled when held out)."""
    judged = access.visible_evaluation(request.user, evaluation_id)
    if not official.is_official(judged.protocol):
        raise Http404("Only an iwr-official evaluation has an agreement view.")
    deterministic = agreement.partner(judged)
    pairs = agreement.task_pairs(deterministic, judged) if deterministic else []
    split = judged.submission.split
    context = {
        "evaluation": judged, "deterministic": deterministic, "submission": judged.submission,
        "judge_label": official.judge_label(official.judge_key(judged.judge_model, judged.grounding_model)),
        "tasks": agreement.shown_pairs(request.user, pairs), "hidden_tasks": len(pairs) - len(
            agreement.shown_pairs(request.user, pairs)),
        "splits": _rate_rows(agreement.rates_by_split(pairs)), "categories": _category_sections(request.user, split,
                                                                                               pairs),
        "results_url": reverse("evaluation-results", args=[judged.pk]),
    }
    return render(request, "leaderboard/agreement/evaluation.html", context)


@require_GET
def protocol_agreement(request):
    """Agreement rates of one official board (protocol version and judge): per split, and per category
    of the chosen split, pooled over every public entry judged by it that has an iwr-det evaluation."""
    try:
        query = ranking.parse_query(request.GET)
    except ranking.QueryError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    if not official.is_official(query.protocol):
        return HttpResponseBadRequest("protocol: the agreement view compares iwr-official with iwr-det; "
                                      "use protocol=iwr-official", content_type="text/plain; charset=utf-8")
    # Pooling every entry's steps reads each task result of the board: the rates are kept until a
    # scoring or a verdict moves the generation on, once per kind of reader (held-out categories pooled
    # or not, agreement.rates_by_category).
    detailed = access.shows_task_results(request.user, query.split)
    key = board_cache.key("agreement", query.key(), int(detailed), generation=board_cache.get_generation())
    rates = cache.get(key)
    if rates is None:
        pairs = agreement.board_pairs(query.protocol, query.judge, Split.values)
        rates = {"splits": _rate_rows(agreement.rates_by_split(pairs)),
                 "categories": _category_sections(request.user, query.split, pairs)}
        cache.set(key, rates, CACHE_SECONDS)
    context = {
        "query": query, "protocol_label": ranking.protocol_label(query.protocol, query.judge), **rates,
        "board_url": reverse("home") + "?" + "&".join(f"{k}={v}" for k, v in query.params().items()),
    }
    return render(request, "leaderboard/agreement/protocol.html", context)

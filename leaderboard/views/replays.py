"""An evaluation's results, per-task replays, and the comparison of two evaluations.

Who sees what:
- an evaluation is visible when its submission is (public, or the reader owns it, or staff:
  :func:`leaderboard.access.visible_submissions`); otherwise every URL below is a 404;
- a task's ground truth (action descriptions, assertions, the element the judge chose,
  reference checkpoints, step evidence) is *revealed* only for dev-split tasks or to staff;
  for test-split tasks readers see whether each step passed, the submitted page's own
  screenshots and replay video, and the task's public video;
- the submitted page's own screenshots and replay video are hidden too (from all but staff) when
  the submission's pages are themselves ground truth: the baselines of a held-out split, built
  from its reference pages (:func:`leaderboard.access.reveals_ground_truth`, the rule the
  live previews follow). Readers then see scores and whether each step passed.

Artifacts (``ARTIFACTS_ROOT/<evaluation>/tasks/<key>/``) are served only through
:func:`replay_file`, which knows a short list of file names and nothing else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from leaderboard import access, charts, heldout, official, ranking
from leaderboard.models import Evaluation, TaskResult
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.models.tasks import Task
from leaderboard.secrecy import scrub, secrets_of
from leaderboard.serving import serve_file
from leaderboard.views import previews

# Replay files are the evaluator's output and task inputs: never let one run on this origin.
FILE_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox"
SHOT_NAME = re.compile(r"^step_(\d{1,4})\.png$")
REFERENCE_NAME = re.compile(r"^reference_(\d{1,4})\.png$")
REPLAY_VIDEO = "replay.mp4"
REFERENCE_VIDEO = "reference.mp4"


# --------------------------------------------------------------------------- access


def visible_result(request, evaluation_id: int, key: str) -> tuple[Evaluation, TaskResult]:
    evaluation = access.visible_evaluation(request.user, evaluation_id)
    return evaluation, access.task_result(evaluation, key, request.user)


# --------------------------------------------------------------------------- task rows and steps


def failure_reason(result: TaskResult, reveal: bool) -> str:
    """Why a task stopped short, in words that never quote held-out ground truth."""
    if result.error:
        if result.error == "missing":
            return "page missing from the bundle"
        return result.error if reveal else scrub(result.error, secrets_of(result.task))
    if result.steps_passed >= result.steps_total:
        return ""
    failed = next((s for s in _steps(result) if s.get("index", 0) > 0 and not s.get("passed")), None)
    number = failed.get("index") if failed else result.steps_passed + 1
    if reveal and failed and failed.get("reason"):
        return f"step {number} ({failed.get('type', 'action')}): {failed['reason']}"
    return f"step {number} failed"


def _steps(result: TaskResult) -> list[dict]:
    steps = result.steps if isinstance(result.steps, list) else []
    return [step for step in steps if isinstance(step, dict)]


def task_rows(evaluation: Evaluation, user) -> list[dict]:
    """One row per task result: scores as printed, steps, failure reason, replay link."""
    rows = []
    for result in evaluation.task_results.select_related("task").order_by("task__key"):
        task = result.task
        if not access.shows_task_results(user, task.split):
            continue  # held-out per-task results: staff only
        rows.append({
            "key": task.key, "split": task.split, "interaction": task.interaction_complexity,
            "visual": task.visual_complexity, "domain": task.domain,
            **{name: ranking.percent(getattr(result, name)) for name in SCORE_FIELDS},
            "final_value": result.final,
            "steps_passed": result.steps_passed, "steps_total": result.steps_total,
            "reason": failure_reason(result, access.reveals_task(user, task)),
            "replay_url": reverse("replay", args=[evaluation.pk, task.key]),
        })
    return rows


def step_views(evaluation: Evaluation, result: TaskResult, reveal: bool, *, pages: bool) -> list[dict]:
    """The replay's timeline: every recorded step, then the actions never reached.

    ``time`` is where the step ends in the replay video, in seconds (the recording starts
    with the page load and the steps follow one another, so elapsed times add up). Screenshots
    of the submitted page are linked only when ``pages`` (:func:`leaderboard.access.shows_pages`).
    """
    actions = (result.task.record or {}).get("action_sequence") or []
    views, elapsed_ms, seen = [], 0, set()
    for step in _steps(result):
        index = _int(step.get("index"))
        if index is None or index in seen:
            continue
        seen.add(index)
        elapsed_ms += max(0, _int(step.get("elapsed_ms")) or 0)
        view = _step_base(evaluation, result, step, index, elapsed_ms, pages)
        if reveal:
            view.update(_step_detail(evaluation, result, step, index, actions))
        views.append(view)
    for index in range(1, result.steps_total + 1):
        if index not in seen:
            views.append({"index": index, "label": f"Step {index}", "status": "skipped", "passed": False,
                          "screenshot": None, "time": None, "not_reached": True,
                          **(_action_fields(actions, index) if reveal else {})})
    return views


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _step_base(evaluation: Evaluation, result: TaskResult, step: dict, index: int, elapsed_ms: int,
               pages: bool) -> dict:
    shot = step.get("screenshot")
    has_shot = (pages and isinstance(shot, str) and SHOT_NAME.match(shot)
                and _artifact(evaluation, result.task.key, shot))
    video_ms = _int(step.get("video_ms"))
    return {
        "index": index, "label": "Page load" if index == 0 else f"Step {index}",
        "status": "pass" if step.get("passed") else "fail", "passed": bool(step.get("passed")),
        "screenshot": _file_url(evaluation, result.task.key, shot) if has_shot else None,
        "time": round((video_ms if video_ms is not None else elapsed_ms) / 1000, 2), "not_reached": False,
    }


def _action_fields(actions: list, index: int) -> dict:
    if index == 0 or index > len(actions) or not isinstance(actions[index - 1], dict):
        return {"type": "Load" if index == 0 else ""}
    action = actions[index - 1]
    params = action.get("parameters") or {}
    return {"type": action.get("type", ""), "description": params.get("description", ""),
            "text": params.get("text") or params.get("key") or "", "assertion": action.get("logical_assertion") or "",
            "flagged": bool(action.get("visual_evaluation_flag"))}


def _step_detail(evaluation: Evaluation, result: TaskResult, step: dict, index: int, actions: list) -> dict:
    """Ground truth and the judge's reasoning for one step (revealed readers only)."""
    detail = _action_fields(actions, index)
    reference = reference_checkpoint(result.task, index)
    detail.update({
        "reference": _file_url(evaluation, result.task.key, f"reference_{index}.png") if reference else None,
        "reason": str(step.get("reason") or ""),
        "target": _element(step.get("target")), "runner_up": _element(step.get("runner_up")),
        "ambiguous": bool(step.get("ambiguous")),
        "verdict": _verdict(step.get("assertion")),
        "visual": {k: ranking.percent(v) for k, v in (step.get("visual") or {}).items()
                   if k in ("ocr", "global", "low_level", "high_level") and isinstance(v, int | float)},
    })
    return detail


def _element(chosen) -> dict | None:
    if not isinstance(chosen, dict):
        return None
    score = chosen.get("score")
    return {"tag": str(chosen.get("tag") or ""), "text": str(chosen.get("text") or "")[:200],
            "score": f"{score:.2f}" if isinstance(score, int | float) else ""}


def _verdict(assertion) -> dict | None:
    if not isinstance(assertion, dict):
        return None
    evidence = assertion.get("evidence") if isinstance(assertion.get("evidence"), dict) else {}
    facts = {key: value for key, value in evidence.items() if isinstance(value, str | int | float | bool)}
    return {"passed": bool(assertion.get("passed")), "evidence": dict(list(facts.items())[:12])}


def reference_checkpoint(task: Task, index: int) -> Path | None:
    """The task's reference screenshot after step ``index`` (0 = initial view), or None.

    Datasets number checkpoints one per action or one per visually flagged action; the
    number of files present says which (as the evaluator decides it).
    """
    folder = task.files_path / "checkpoints"
    try:
        count = sum(1 for name in os.listdir(folder) if SHOT_NAME.match(name))
    except OSError:
        return None
    actions = (task.record or {}).get("action_sequence") or []
    flagged = [n for n, action in enumerate(actions, 1) if isinstance(action, dict)
               and action.get("visual_evaluation_flag")]
    if index == 0:
        number = 0
    elif count == len(actions) + 1:
        number = index
    elif count == len(flagged) + 1 and index in flagged:
        number = flagged.index(index) + 1
    else:
        return None
    path = folder / f"step_{number}.png"
    return path if path.is_file() and not path.is_symlink() else None


# --------------------------------------------------------------------------- files


def _artifacts_dir(evaluation: Evaluation, key: str) -> Path | None:
    if not evaluation.artifacts_dir:
        return None
    root = Path(settings.ARTIFACTS_ROOT).resolve()
    folder = (root / evaluation.artifacts_dir / "tasks" / key).resolve()
    return folder if folder.is_relative_to(root) and folder.is_dir() else None


def _artifact(evaluation: Evaluation, key: str, name: str) -> Path | None:
    folder = _artifacts_dir(evaluation, key)
    if folder is None:
        return None
    path = folder / name
    return path if path.is_file() and not path.is_symlink() else None


def _file_url(evaluation: Evaluation, key: str, name: str) -> str:
    return reverse("replay-file", args=[evaluation.pk, key, name])


def file_path(evaluation: Evaluation, result: TaskResult, name: str, reveal: bool, pages: bool) -> Path | None:
    """The file behind a replay URL, or None: the replay video and the generated screenshots (when
    the reader ``pages``), the task's public video and (revealed readers only) the reference checkpoints."""
    if name == REPLAY_VIDEO or SHOT_NAME.match(name):
        return _artifact(evaluation, result.task.key, name) if pages else None
    if name == REFERENCE_VIDEO:
        return _task_video(result.task)
    match = REFERENCE_NAME.match(name)
    if match and reveal:
        return reference_checkpoint(result.task, int(match[1]))
    return None


@require_GET
def replay_file(request, evaluation_id: int, key: str, name: str):
    evaluation, result = visible_result(request, evaluation_id, key)
    path = file_path(evaluation, result, name, access.reveals_task(request.user, result.task),
                     access.shows_pages(request.user, evaluation.submission))
    if path is None:
        raise Http404("No such file.")
    cache = "public, max-age=3600" if evaluation.submission.public else "private, max-age=600"
    # Per-task results of a held-out task, and reference checkpoints of one, only staff see.
    anyone = AnonymousUser()
    staff_only = not access.shows_task_results(anyone, result.task.split) or file_path(
        evaluation, result, name, access.reveals_task(anyone, result.task), True) is None
    return serve_file(request, path, staff_only=staff_only,
                      headers={"Content-Security-Policy": FILE_CSP, "X-Content-Type-Options": "nosniff",
                               "Cache-Control": cache})


# --------------------------------------------------------------------------- pages


def evaluation_context(request, evaluation: Evaluation) -> dict:
    """Everything the results page and the submission page's extra panels show.

    The submission page uses it as ``context.update(replays.evaluation_context(request, evaluation))``
    with ``{% include "leaderboard/rankings/_category_charts.html" %}`` and
    ``{% include "leaderboard/replays/_task_table.html" %}``.
    """
    categories = shown_categories(request, evaluation)
    return {
        "lb_evaluation": evaluation,
        "lb_categories": [
            {"axis": axis, "label": label, "rows": _category_rows(categories.get(axis) or {})}
            for axis, label in ranking.AXIS_LABELS.items() if categories.get(axis)
        ],
        "lb_categories_url": reverse("evaluation-categories", args=[evaluation.pk]),
        "lb_task_rows": task_rows(evaluation, request.user),
        "lb_task_results_hidden": not access.shows_task_results(request.user, evaluation.submission.split),
        "lb_preview_page": previews.preview_page(request, evaluation.submission),
    }


def shown_categories(request, evaluation: Evaluation) -> dict:
    """The evaluation's per-category scores as the reader may see them (held-out: small ones pooled)."""
    if evaluation.status != Evaluation.Status.SCORED:
        return {}
    return heldout.categories_for(request.user, evaluation.submission.split, ranking.evaluation_categories(evaluation))


def _category_rows(per_label: dict) -> list[dict]:
    return [{"label": label, "n": values.get("n", ""),
             **{name: ranking.percent(values.get(name)) for name in ("ifs", "vfs", "final")}}
            for label, values in sorted(per_label.items(), key=lambda item: ranking.natural_key(item[0]))]


def standing(evaluation: Evaluation) -> ranking.Entry | None:
    """The evaluation's row on its default leaderboard view, if it is on it."""
    if evaluation.status != Evaluation.Status.SCORED:
        return None
    query = ranking.Query(split=evaluation.submission.split, protocol=evaluation.protocol,
                          selection=settings.LEADERBOARD_SELECTION, judge=_judge(evaluation))
    board = ranking.leaderboard(query)
    return next((entry for entry in board.entries if entry.evaluation_id == evaluation.pk), None)


def _board_url(evaluation: Evaluation) -> str:
    query = ranking.Query(split=evaluation.submission.split, protocol=evaluation.protocol, judge=_judge(evaluation))
    return reverse("home") + "?" + urlencode(query.params(selection=settings.LEADERBOARD_SELECTION))


def _judge(evaluation: Evaluation) -> str:
    return official.judge_key(evaluation.judge_model, evaluation.grounding_model)


@require_GET
def evaluation_results(request, evaluation_id: int):
    """An evaluation's scores with intervals, its category breakdown and per-task results."""
    evaluation = access.visible_evaluation(request.user, evaluation_id)
    entry = standing(evaluation)
    context = {
        "evaluation": evaluation, "submission": evaluation.submission, "entry": entry,
        "scores": {name: ranking.percent(getattr(evaluation, name)) for name in SCORE_FIELDS},
        "intervals": {name: _interval(evaluation, name) for name in ("final", "ifs", "vfs")},
        "board_url": _board_url(evaluation),
        "protocol_label": ranking.protocol_label(evaluation.protocol, _judge(evaluation)),
        "agreement_url": (reverse("evaluation-agreement", args=[evaluation.pk])
                          if official.is_official(evaluation.protocol) else ""),
        "can_manage": access.can_manage(request.user, evaluation.submission),
        **evaluation_context(request, evaluation),
    }
    return render(request, "leaderboard/replays/results.html", context)


def _interval(evaluation: Evaluation, name: str) -> str:
    low, high = getattr(evaluation, f"{name}_ci_low"), getattr(evaluation, f"{name}_ci_high")
    return f"{ranking.percent(low)}\u2013{ranking.percent(high)}" if low is not None and high is not None else ""


@require_GET
def evaluation_categories(request, evaluation_id: int):
    """Per-category scores of one evaluation and a grouped-bar figure per axis (JSON)."""
    evaluation = access.visible_evaluation(request.user, evaluation_id)
    categories = shown_categories(request, evaluation)
    return JsonResponse({
        "evaluation": evaluation.pk,
        "by_category": {axis: {label: {k: (charts.pct(v) if k != "n" else v) for k, v in values.items()}
                               for label, values in per_label.items()}
                        for axis, per_label in categories.items()},
        **{axis: charts.evaluation_bars(per_label, axis) for axis, per_label in categories.items() if per_label},
    })


@require_GET
def replay(request, evaluation_id: int, key: str):
    """The reference video and the recorded replay side by side, with the step timeline."""
    evaluation, result = visible_result(request, evaluation_id, key)
    reveal = access.reveals_task(request.user, result.task)
    return render(request, "leaderboard/replays/replay.html", {
        "evaluation": evaluation, "submission": evaluation.submission, "result": result, "task": result.task,
        "reveal": reveal, "players": [_player(request, evaluation, result, reveal, evaluation.submission.model_name)],
        "reference_video": _reference_video(evaluation, result),
        "scores": {name: ranking.percent(getattr(result, name)) for name in SCORE_FIELDS},
        "reason": failure_reason(result, reveal),
        "neighbours": _neighbours(evaluation, key),
    })


def _player(request, evaluation: Evaluation, result: TaskResult, reveal: bool, label: str) -> dict:
    pages = access.shows_pages(request.user, evaluation.submission)
    video = pages and _artifact(evaluation, result.task.key, REPLAY_VIDEO)
    steps = step_views(evaluation, result, reveal, pages=pages)
    return {"label": label, "evaluation": evaluation, "result": result, "pages_hidden": not pages,
            "video": _file_url(evaluation, result.task.key, REPLAY_VIDEO) if video else None,
            "poster": steps[0]["screenshot"] if steps else None, "steps": steps,
            "final": ranking.percent(result.final), "reason": failure_reason(result, reveal)}


def _task_video(task: Task) -> Path | None:
    """The task's public recording, while the task is published (as on the task pages)."""
    path = task.files_path / "video.mp4"
    published = task.status == Task.Status.PUBLISHED
    return path if published and path.is_file() and not path.is_symlink() else None


def _reference_video(evaluation: Evaluation, result: TaskResult) -> str | None:
    return _file_url(evaluation, result.task.key, REFERENCE_VIDEO) if _task_video(result.task) else None


def _neighbours(evaluation: Evaluation, key: str) -> dict:
    keys = list(evaluation.task_results.order_by("task__key").values_list("task__key", flat=True))
    position = keys.index(key) if key in keys else -1
    links = {}
    if position > 0:
        links["previous"] = reverse("replay", args=[evaluation.pk, keys[position - 1]])
    if 0 <= position < len(keys) - 1:
        links["next"] = reverse("replay", args=[evaluation.pk, keys[position + 1]])
    return links


# --------------------------------------------------------------------------- comparing two evaluations


class NotComparable(Exception):
    pass


def _pair(request, a: int, b: int) -> tuple[Evaluation, Evaluation]:
    first, second = access.visible_evaluation(request.user, a), access.visible_evaluation(request.user, b)
    if first.submission.split != second.submission.split:
        raise NotComparable("These two evaluations were scored on different splits (different tasks), "
                            "so there is nothing to compare task by task.")
    return first, second


def _delta(a: float | None, b: float | None) -> dict:
    if a is None or b is None:
        return {"text": "", "sign": "zero"}
    value = 100 * (b - a)
    sign = "pos" if value > 0.005 else "neg" if value < -0.005 else "zero"
    return {"text": f"{value:+.2f}", "sign": sign}


@require_GET
def compare_form(request):
    """``/compare/?e=A&e=B`` (two ticked rows) or ``?a=A&b=B``: go to the comparison; else ask."""
    picked = [value for value in request.GET.getlist("e") if value.isdigit()]
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    if len(picked) == 2:
        a, b = picked
    if a.isdigit() and b.isdigit():
        return redirect("compare", a=int(a), b=int(b))
    message = "Tick exactly two rows of the leaderboard to compare them." if picked else ""
    return render(request, "leaderboard/replays/compare_form.html", {"message": message},
                  status=400 if picked else 200)


@require_GET
def compare(request, a: int, b: int):
    """Two evaluations of one split: headline, per-category and per-task deltas (B minus A)."""
    try:
        first, second = _pair(request, a, b)
    except NotComparable as exc:
        return render(request, "leaderboard/replays/compare_form.html", {"message": str(exc)}, status=400)
    rows_a = {row["key"]: row for row in task_rows(first, request.user)}
    rows_b = {row["key"]: row for row in task_rows(second, request.user)}
    keys = sorted(set(rows_a) | set(rows_b), key=ranking.natural_key)
    context = {
        "a": first, "b": second, "same_protocol": first.protocol == second.protocol,
        "headline": [{"name": label, "a": ranking.percent(getattr(first, name)),
                      "b": ranking.percent(getattr(second, name)),
                      "delta": _delta(getattr(first, name), getattr(second, name))}
                     for name, label in (("final", "Final"), ("ifs", "IFS"), ("vfs", "VFS"),
                                         ("low_level", "Low-level"), ("high_level", "High-level"))],
        "categories": _category_deltas(shown_categories(request, first), shown_categories(request, second)),
        "tasks": [_task_delta(first, second, key, rows_a.get(key), rows_b.get(key)) for key in keys],
    }
    return render(request, "leaderboard/replays/compare.html", context)


def _task_delta(first: Evaluation, second: Evaluation, key: str, row_a: dict | None, row_b: dict | None) -> dict:
    def value(row):
        return row["final_value"] if row else None

    return {"key": key, "a": row_a, "b": row_b, "delta": _delta(value(row_a), value(row_b)),
            "url": reverse("compare-replay", args=[first.pk, second.pk, key]) if row_a and row_b else None}


def _category_deltas(cats_a: dict, cats_b: dict) -> list[dict]:
    sections = []
    for axis, label in ranking.AXIS_LABELS.items():
        per_a, per_b = cats_a.get(axis) or {}, cats_b.get(axis) or {}
        labels = sorted(set(per_a) | set(per_b), key=ranking.natural_key)
        if labels:
            sections.append({"label": label, "rows": [_category_delta(name, per_a.get(name), per_b.get(name))
                                                      for name in labels]})
    return sections


def _category_delta(label: str, a: dict | None, b: dict | None) -> dict:
    row = {"label": label}
    for metric in ("final", "ifs", "vfs"):
        value_a, value_b = (a or {}).get(metric), (b or {}).get(metric)
        row[metric] = {"a": ranking.percent(value_a), "b": ranking.percent(value_b), "delta": _delta(value_a, value_b)}
    return row


@require_GET
def compare_replay(request, a: int, b: int, key: str):
    """Both recorded replays of one task side by side (and the reference video), one set of controls."""
    try:
        first, second = _pair(request, a, b)
    except NotComparable as exc:
        return render(request, "leaderboard/replays/compare_form.html", {"message": str(exc)}, status=400)
    result_a, result_b = access.task_result(first, key, request.user), access.task_result(second, key, request.user)
    reveal = access.reveals_task(request.user, result_a.task)
    return render(request, "leaderboard/replays/compare_replay.html", {
        "a": first, "b": second, "task": result_a.task, "reveal": reveal,
        "reference_video": _reference_video(first, result_a),
        "players": [_player(request, first, result_a, reveal, f"A: {first.submission.model_name}"),
                    _player(request, second, result_b, reveal, f"B: {second.submission.model_name}")],
    })

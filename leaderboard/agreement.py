"""Where the deterministic judge and the paper's judge agree, read from the stored steps of two evaluations.

An official evaluation is paired with the latest scored ``iwr-det`` evaluation of the same submission
(:func:`partner`). Each action of each task scored by both gets a verdict per evaluation: ``passed``,
``failed`` (executed and failed: element not found, assertion rejected) or ``not reached`` (the run
stopped at an earlier failure, as both protocols do). The two agree on a step when both passed or
neither did. Rates count agreeing steps over the steps of the tasks both scored.

Held-out secrecy: for tasks whose per-task results a reader may not see
(:func:`leaderboard.access.shows_task_results`) only the rates are shown, per split and per category,
and the categories are pooled as the held-out rule publishes them (:func:`leaderboard.heldout.split_plan`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from leaderboard import access, heldout, official
from leaderboard.models import Evaluation, TaskResult
from leaderboard.ranking.query import CATEGORY_AXES, natural_key

PASSED, FAILED, NOT_REACHED = "passed", "failed", "not reached"
DETERMINISTIC = "iwr-det"


@dataclass
class StepPair:
    index: int
    deterministic: str
    official: str
    deterministic_assertion: bool | None = None  # the assertion's verdict, when the step had one and ran it
    official_assertion: bool | None = None
    quirk: str = ""  # the documented official quirk that decided the judge's verdict, if one did

    @property
    def agree(self) -> bool:
        return (self.deterministic == PASSED) == (self.official == PASSED)


@dataclass
class TaskPair:
    task_key: str
    split: str
    categories: dict[str, str]  # axis -> label
    steps: list[StepPair] = field(default_factory=list)

    @property
    def agreed(self) -> int:
        return sum(step.agree for step in self.steps)


@dataclass
class Rate:
    agreed: int = 0
    steps: int = 0
    tasks: int = 0

    def add(self, pair: TaskPair) -> None:
        self.agreed += pair.agreed
        self.steps += len(pair.steps)
        self.tasks += 1

    @property
    def fraction(self) -> float | None:
        return self.agreed / self.steps if self.steps else None


def partner(evaluation: Evaluation) -> Evaluation | None:
    """The submission's latest scored iwr-det evaluation (for an official one), or None."""
    return (Evaluation.objects.filter(submission_id=evaluation.submission_id, protocol_name=DETERMINISTIC,
                                      status=Evaluation.Status.SCORED)
            .order_by("-finished_at", "-pk").first())


def verdicts(steps, n_actions: int) -> list[tuple[str, bool | None, str]]:
    """(verdict, assertion verdict, quirk) of actions 1..n_actions from stored step records."""
    by_index = {}
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and isinstance(step.get("index"), int) and step["index"] not in by_index:
            by_index[step["index"]] = step
    found = []
    for index in range(1, n_actions + 1):
        step = by_index.get(index)
        if step is None or not (step.get("executed") or step.get("passed")):
            verdict = NOT_REACHED if step is None or not step.get("reason") else FAILED
        else:
            verdict = PASSED if step.get("passed") else FAILED
        assertion = step.get("assertion") if step else None
        assertion = assertion if isinstance(assertion, dict) else {}
        evidence = assertion.get("evidence") if isinstance(assertion.get("evidence"), dict) else {}
        found.append((verdict, bool(assertion["passed"]) if "passed" in assertion else None,
                      str(evidence.get("quirk") or "")))
    return found


def task_pairs(deterministic: Evaluation, judged: Evaluation) -> list[TaskPair]:
    """Every task both evaluations scored (a task the judge left incomplete is not compared), by task key."""
    det = {row.task_id: row for row in TaskResult.objects.filter(evaluation=deterministic)}
    rows = TaskResult.objects.filter(evaluation=judged, task_id__in=list(det)).select_related("task")
    pairs = []
    for row in rows:
        if row.error.startswith("judge error"):
            continue
        task = row.task
        n_actions = max(task.n_actions, row.steps_total)
        pair = TaskPair(task.key, task.split, {axis: task.category(axis) for axis in CATEGORY_AXES})
        for index, ((d, da, _), (o, oa, quirk)) in enumerate(zip(verdicts(det[row.task_id].steps, n_actions),
                                                                 verdicts(row.steps, n_actions), strict=True), start=1):
            pair.steps.append(StepPair(index, d, o, da, oa, quirk))
        pairs.append(pair)
    return sorted(pairs, key=lambda pair: natural_key(pair.task_key))


def shown_pairs(viewer, pairs: Iterable[TaskPair]) -> list[TaskPair]:
    """The task pairs ``viewer`` may see one by one (held-out ones: staff only)."""
    return [pair for pair in pairs if access.shows_task_results(viewer, pair.split)]


def rates_by_split(pairs: Iterable[TaskPair]) -> dict[str, Rate]:
    rates: dict[str, Rate] = {}
    for pair in pairs:
        rates.setdefault(pair.split, Rate()).add(pair)
    return rates


def rates_by_category(viewer, split: str, pairs: Iterable[TaskPair]) -> dict[str, dict[str, Rate]]:
    """axis -> published label -> Rate over the pairs of ``split``: held-out categories pooled for a
    reader who may not see that split's per-task results, as the held-out rule publishes them."""
    pooled = not (access.shows_task_results(viewer, split) or settings.HELDOUT_MIN_CATEGORY_TASKS <= 1)
    plan = heldout.split_plan(split) if pooled else {}
    rates: dict[str, dict[str, Rate]] = {axis: {} for axis in CATEGORY_AXES}
    for pair in pairs:
        if pair.split != split:
            continue
        for axis in CATEGORY_AXES:
            label = pair.categories[axis]
            shown = plan.get(axis, {}).get(label, heldout.OTHER) if pooled else label
            rates[axis].setdefault(shown, Rate()).add(pair)
    return {axis: dict(sorted(labels.items(), key=lambda item: natural_key(item[0])))
            for axis, labels in rates.items() if labels and not (pooled and set(labels) == {heldout.OTHER})}


def official_evaluations(protocol: str, judge: str, splits: Iterable[str]):
    """Scored public official evaluations by one judge on ``splits`` (a queryset)."""
    judge_model, grounding_model = official.judge_models(judge)
    return (Evaluation.objects.filter(status=Evaluation.Status.SCORED, protocol=protocol, judge_model=judge_model,
                                      grounding_model=grounding_model, submission__public=True,
                                      submission__flagged=False, submission__split__in=list(splits))
            .select_related("submission"))


def board_pairs(protocol: str, judge: str, splits: Iterable[str]) -> list[TaskPair]:
    """Every task pair of every public official evaluation by ``judge`` that has an iwr-det partner."""
    pairs = []
    for evaluation in official_evaluations(protocol, judge, splits):
        deterministic = partner(evaluation)
        if deterministic is not None:
            pairs += task_pairs(deterministic, evaluation)
    return pairs

"""A scoring worker keeps the next job's evaluator waiting on standby (leaderboard/worker/standby.py):
the next evaluation of its protocol starts on it, scores as a cold start does, and nothing of it outlives
the worker's use of it. The real evaluator, in its bubblewrap sandbox, on the tiny benchmark of
test_sample_data."""

from __future__ import annotations

import pytest

from evaluator.baselines import KINDS
from leaderboard.models import Evaluation
from leaderboard.worker import scoring, standby
from leaderboard.worker.claims import EVALUATIONS
from tests.leaderboard.test_pipeline_worker import job_processes
from tests.leaderboard.test_sample_data import dispatched, load, scorable_benchmark  # noqa: F401 - fixtures

pytest_plugins = ["tests.leaderboard.datasets"]
GIVEN = "job given to the evaluator on standby"


@pytest.fixture
def standing(settings):
    settings.EVALUATOR_STANDBY = True
    settings.EVALUATOR_COMMAND = ""  # this evaluator, whatever an earlier test left there
    yield
    standby.discard()


def score(evaluation: Evaluation, capture) -> Evaluation:
    token = EVALUATIONS.claim(evaluation.pk, "test-node:1")
    assert token
    with capture(execute=True):
        scoring.run_claimed(evaluation.pk, token)
    evaluation.refresh_from_db()
    assert evaluation.status == "scored", evaluation.failure_reason + evaluation.log[-2000:]
    return evaluation


def baseline(kind: str, split: str = "dev") -> Evaluation:
    return Evaluation.objects.get(submission__split=split, submission__model_name=KINDS[kind])


def task_scores(evaluation: Evaluation) -> dict:
    """Every task's scores and step verdicts, without the steps' timings (no two runs share them)."""
    return {row.task.key: (row.final, row.ifs, row.vfs, row.steps_passed,
                           [{k: v for k, v in step.items() if k != "elapsed_ms"} for step in row.steps])
            for row in evaluation.task_results.select_related("task")}


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.django_db
def test_evaluations_start_on_the_evaluator_on_standby_and_score_as_a_cold_start(
        scorable_benchmark, dispatched, owner, standing, settings, django_capture_on_commit_callbacks):  # noqa: F811
    load(scorable_benchmark)
    settings.EVALUATOR_STANDBY = False
    cold = score(baseline("reference"), django_capture_on_commit_callbacks)
    assert GIVEN not in cold.log and standby._current is None  # off: nothing waits
    cold_scores = task_scores(cold)

    settings.EVALUATOR_STANDBY = True
    first = standby.prepare()
    assert first is not None and first.alive() and (first.folder / "out").is_dir()
    warm = score(baseline("reference", "test"), django_capture_on_commit_callbacks)
    assert GIVEN in warm.log, warm.log[-2000:]
    assert not first.folder.exists() and first.process.poll() == 0  # its folder went with the attempt

    second = standby._current  # started when that evaluation ended, for the next one
    assert second is not None and second is not first and second.alive()
    again = score(baseline("empty"), django_capture_on_commit_callbacks)
    assert GIVEN in again.log
    assert again.final < cold.final

    # The same pages, cold and on standby: the same scores, step by step.
    Evaluation.objects.filter(pk=cold.pk).update(status="queued", final=None)
    rescored = score(Evaluation.objects.get(pk=cold.pk), django_capture_on_commit_callbacks)
    assert GIVEN in rescored.log
    assert task_scores(rescored) == cold_scores

    last = standby._current
    standby.discard()
    assert last.process.poll() == 0 and not last.folder.exists() and job_processes(str(last.folder)) == []


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.django_db
def test_a_standby_that_died_or_serves_another_protocol_is_never_used(
        scorable_benchmark, dispatched, owner, standing, django_capture_on_commit_callbacks):  # noqa: F811
    from evaluator.protocols import get_protocol

    load(scorable_benchmark)
    other = standby.prepare("iwr-det-2")
    assert other.protocol == get_protocol("iwr-det-2").full_name
    evaluation = score(baseline("reference"), django_capture_on_commit_callbacks)  # iwr-det: cold
    assert GIVEN not in evaluation.log
    assert other.process.poll() == 0 and not other.folder.exists()  # ended, unused
    assert standby._current.protocol == evaluation.protocol  # the next one is for the protocol just scored

    standby.discard()
    dead = standby.prepare()
    dead.process.kill()
    dead.process.wait()
    rescued = score(baseline("reference", "test"), django_capture_on_commit_callbacks)
    assert GIVEN not in rescued.log and rescued.final > 0.5  # started cold in its place

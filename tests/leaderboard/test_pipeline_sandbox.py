"""What a job sees and what is kept of what it writes: the worker distrusts the evaluator's job.

The stand-in evaluator of ``pipeline_support`` runs through the real worker code (``run_claimed``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.leaderboard.test_pipeline import fake_evaluator, queued, run, steer  # noqa: F401 - fixture

pytest_plugins = ["tests.leaderboard.datasets"]
pytestmark = pytest.mark.usefixtures("fake_evaluator")


@pytest.mark.django_db
def test_the_score_command_never_sees_the_workers_secrets(owner, imported_sample, monkeypatch, tmp_path, settings,
                                                          django_capture_on_commit_callbacks):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "canary-xyz")
    monkeypatch.setenv("DATABASE_URL", "postgres://board:canary-pw@db/board")
    monkeypatch.setenv("DOCKER_HOST", "tcp://engine:2375")
    dump = tmp_path / "env.json"
    steer(f"--fake-dump-env {dump}")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    seen = json.loads(dump.read_text())
    assert "canary" not in json.dumps(seen)
    assert "DJANGO_SECRET_KEY" not in seen and "DATABASE_URL" not in seen
    assert "DOCKER_HOST" not in seen  # only the container backend talks to the engine
    job_tmp = Path(seen["TMPDIR"])
    assert seen["HOME"] == seen["TMPDIR"] and job_tmp.name == "tmp"
    assert Path(settings.JOBS_ROOT) in job_tmp.parents  # private to the attempt, inside its folder
    assert seen["PATH"] == "/usr/local/bin:/usr/bin:/bin"


def charged(evaluation) -> bool:
    evaluation.submission.refresh_from_db(fields=["charged"])
    return evaluation.submission.charged


@pytest.mark.django_db
@pytest.mark.parametrize(("mode", "rule"), [
    ("symlink-artifact", "'symlink'"),
    ("nan-score", "'score not finite'"),
    ("score-7", "'score out of range'"),
    ("unknown-task", "'unknown task'"),
    ("bad-summary", "'summary'"),
    ("many-steps", "'step count'"),
])
def test_output_that_breaks_a_rule_fails_as_the_pages_doing_and_nothing_is_kept(
        mode, rule, owner, imported_sample, monkeypatch, settings, django_capture_on_commit_callbacks):
    steer(f"--fake-mode {mode}")
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "failed"
    assert evaluation.failure_kind == "page" and charged(evaluation)
    assert f"broke the rule {rule}" in evaluation.failure_reason, evaluation.failure_reason
    assert evaluation.final is None
    assert not (Path(settings.ARTIFACTS_ROOT) / str(evaluation.pk)).exists()


@pytest.mark.django_db
def test_the_stored_summary_is_recomputed_and_artifacts_are_checked_copies(
        owner, imported_sample, settings, django_capture_on_commit_callbacks):
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    stored = json.loads((Path(settings.ARTIFACTS_ROOT) / str(evaluation.pk) / "results.json").read_text())
    assert stored["summary"] == evaluation.summary
    assert set(evaluation.summary["by_category"]) == {"interaction_complexity", "visual_complexity", "domain"}
    assert evaluation.summary["n_missing"] == 0  # fields only the recomputation adds
    folder = Path(settings.ARTIFACTS_ROOT) / str(evaluation.pk)
    assert sorted(p.name for p in (folder / "tasks").iterdir()) == ["101", "dev-b"]


@pytest.mark.django_db
def test_a_container_that_cannot_keep_chromiums_sandbox_is_an_uncharged_infrastructure_failure(
        owner, imported_sample, monkeypatch, django_capture_on_commit_callbacks):
    from evaluator import container
    from leaderboard.worker import evaluator_run

    def refuse(self):
        raise container.ContainerSandboxError("the engine refused the seccomp profile")

    monkeypatch.setattr(evaluator_run.EvaluatorRun, "command", refuse)
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "failed" and evaluation.failure_kind == "infrastructure"
    assert "the engine refused the seccomp profile" in evaluation.failure_reason
    assert not charged(evaluation)


# --------------------------------------------------------------------------- one folder per attempt


@pytest.mark.django_db
def test_two_attempts_work_in_their_own_folders_and_never_delete_each_others(owner, imported_sample, settings):
    from leaderboard.models import Evaluation
    from leaderboard.worker import evaluator_run
    from leaderboard.worker.claims import EVALUATIONS

    evaluation = queued(owner)
    first_token = EVALUATIONS.claim(evaluation.pk, "node-a:1")
    first = evaluator_run.EvaluatorRun(Evaluation.objects.get(pk=evaluation.pk), first_token)
    assert first.prepare() is None
    # node-a is presumed dead; its evaluation is claimed again while its process still runs.
    Evaluation.objects.filter(pk=evaluation.pk).update(status="queued", claim_token="")
    second_token = EVALUATIONS.claim(evaluation.pk, "node-b:1")
    second = evaluator_run.EvaluatorRun(Evaluation.objects.get(pk=evaluation.pk), second_token)
    assert second.prepare() is None
    assert first.dir != second.dir and first.dir.parent == second.dir.parent == Path(settings.JOBS_ROOT) / str(
        evaluation.pk)
    first.cleanup()  # the old attempt ending late
    assert (second.dir / "bundle").is_dir() and not first.dir.exists()
    assert evaluator_run.remove_ended_attempts() == 0  # the live attempt's folder stays
    Evaluation.objects.filter(pk=evaluation.pk).update(status="failed", claim_token="")
    assert evaluator_run.remove_ended_attempts() == 1
    assert not (Path(settings.JOBS_ROOT) / str(evaluation.pk)).exists()


@pytest.mark.django_db
def test_the_heartbeat_beats_while_the_job_is_prepared_and_started(owner, imported_sample, monkeypatch,
                                                                   django_capture_on_commit_callbacks):
    from leaderboard.worker import evaluator_run

    beats, started = [], []
    real_beat, real_start = evaluator_run.EvaluatorRun.heartbeat, evaluator_run.EvaluatorRun.start

    def beat(self):
        beats.append("started" if started else "before")
        return real_beat(self)

    def start(self):
        real_start(self)
        started.append(True)

    monkeypatch.setattr(evaluator_run.EvaluatorRun, "heartbeat", beat)
    monkeypatch.setattr(evaluator_run.EvaluatorRun, "start", start)
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    assert beats.count("before") >= 3  # after the task data, after the bundle, before the process starts


@pytest.mark.django_db
def test_the_job_folder_holds_the_task_data_of_the_tasks_it_scores_only(owner, imported_sample):
    """A dev evaluation's job folder has no file of a held-out task: not its record, not its folder."""
    from leaderboard.models import Evaluation
    from leaderboard.worker import evaluator_run
    from leaderboard.worker.claims import EVALUATIONS

    evaluation = queued(owner)
    job = evaluator_run.EvaluatorRun(Evaluation.objects.get(pk=evaluation.pk), EVALUATIONS.claim(evaluation.pk, "n:1"))
    try:
        assert job.prepare() is None
        scored = {task.key for task in imported_sample if task.split == evaluation.submission.split}
        held_out = {task.key for task in imported_sample} - scored
        assert scored and held_out
        records = [json.loads(line) for line in job.data_path.read_text().splitlines() if line.strip()]
        assert {str(record["id"]) for record in records} == scored
        names = {path.name for path in job.dir.rglob("*")}
        assert scored <= names and not held_out & names
    finally:
        job.cleanup()


@pytest.mark.django_db(transaction=True)  # the heartbeat thread has a connection of its own: rows are committed
def test_the_heartbeat_beats_all_through_a_slow_preparation_and_start(owner, imported_sample, monkeypatch, settings,
                                                                      django_capture_on_commit_callbacks):
    """A large bundle extracting and an OCR-fill container starting take minutes: the claim never goes stale."""
    from evaluator import bundle
    from leaderboard.worker import evaluator_run
    from leaderboard.worker.claims import Claims

    settings.CLAIM_HEARTBEAT_SECONDS = 0.1
    beats, slow = [], []
    real_beat, real_extract, real_command = Claims.beat, bundle.extract_bundle, evaluator_run.EvaluatorRun.command

    def beat(self, pk, token, **fields):
        held = real_beat(self, pk, token, **fields)
        beats.append((time.monotonic(), held))
        return held

    def slowly(real):
        def call(*args, **kwargs):
            started = time.monotonic()
            time.sleep(1.0)
            slow.append((started, time.monotonic()))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(Claims, "beat", beat)
    monkeypatch.setattr(bundle, "extract_bundle", slowly(real_extract))
    monkeypatch.setattr(evaluator_run.EvaluatorRun, "command", slowly(real_command))
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "scored", evaluation.failure_reason
    assert len(slow) == 2
    for start, end in slow:  # extracting the bundle, then building the command (the fill container starts there)
        during = [held for at, held in beats if start < at < end]
        assert len(during) >= 5 and all(during), (start, end, beats)


@pytest.mark.django_db
def test_a_claim_lost_while_the_job_is_prepared_starts_no_evaluator(owner, imported_sample, monkeypatch,
                                                                    django_capture_on_commit_callbacks):
    from leaderboard.models import Evaluation
    from leaderboard.worker import evaluator_run

    real_copy = evaluator_run.copy_bundle

    def copy_then_cancel(submission, target):
        Evaluation.objects.filter(submission=submission).update(status="cancelled", claim_token="")
        return real_copy(submission, target)

    monkeypatch.setattr(evaluator_run, "copy_bundle", copy_then_cancel)
    monkeypatch.setattr(evaluator_run.EvaluatorRun, "start", lambda self: pytest.fail("evaluator started"))
    evaluation = run(queued(owner), django_capture_on_commit_callbacks)
    assert evaluation.status == "cancelled"


# --------------------------------------------------------------------------- job containers


@pytest.mark.django_db
def test_a_job_container_is_labelled_with_its_dispatcher_and_attempt_and_stops_in_time(owner, settings,
                                                                                      monkeypatch, tmp_path):
    from evaluator import container
    from leaderboard.models import Evaluation
    from leaderboard.worker import evaluator_run
    from leaderboard.worker.claims import EVALUATIONS
    from tests.leaderboard.factories import make_queued_evaluation, make_submission

    fake_engine(tmp_path, settings, "")
    settings.JOBS_ROOT = tmp_path / "jobs"
    monkeypatch.setattr(container, "start_fill", lambda *args: True)
    evaluation = make_queued_evaluation(make_submission(owner))
    token = EVALUATIONS.claim(evaluation.pk, "dispatcher@host-7:4242")
    job = evaluator_run.EvaluatorRun(Evaluation.objects.get(pk=evaluation.pk), token)
    job.dir.mkdir(parents=True)
    job.data_path = job.dir / "data.jsonl"
    command = job.command()
    assert command[1] == "run"
    labels = dict(command[i + 1].split("=", 1) for i, part in enumerate(command) if part == "--label")
    deadline = int(labels.pop("org.iwr-bench.deadline"))
    assert labels == {"org.iwr-bench.dispatcher": "dispatcher@host-7", "org.iwr-bench.jobs": str(tmp_path / "jobs"),
                      "org.iwr-bench.evaluation": str(evaluation.pk), "org.iwr-bench.attempt": "1"}
    assert time.time() + settings.EVALUATION_TIME_LIMIT_SECONDS < deadline < time.time() + 2 * 3600 + 60
    assert command[command.index("--stop-timeout") + 1] == str(evaluator_run.STOP_GRACE_SECONDS)
    assert "ps --all --filter label=org.iwr-bench.deadline" in (tmp_path / "calls").read_text()  # strays swept


def fake_engine(tmp_path, settings, listing: str) -> Path:
    """A container engine that logs its arguments and lists ``listing`` for ``ps``: the command is only
    built here (the containers themselves are reaped by a real engine in tests/docker/test_job_containers.py)."""
    calls = tmp_path / "calls"
    (tmp_path / "listing").write_text(listing)
    engine = tmp_path / "engine"
    engine.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" = ps ] && cat {tmp_path / "listing"}\nexit 0\n')
    engine.chmod(0o755)
    settings.EVALUATOR_SANDBOX = "container"
    settings.CONTAINER_ENGINE = str(engine)
    return calls

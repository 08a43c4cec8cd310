"""What the pipeline does around a scoring: warm the leaderboard after it, never fail because of
that, and hand the evaluator a persistent OCR cache for the reference side."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from django.core import mail
from django.core.cache import cache

from evaluator.cli import build_parser
from leaderboard import cache as generation_cache
from leaderboard import notifications
from leaderboard.worker import evaluator_run, scoring
from tests.leaderboard.factories import make_entry, make_queued_evaluation, make_submission

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()


def test_a_finished_scoring_leaves_the_default_views_cached_for_the_first_reader(
        client, owner, django_assert_max_num_queries):
    """After finished the leaderboard of each split and its API page are built for the new generation."""
    make_entry(owner, model_name="Warm-VL", final=0.61, split="test")
    evaluation = make_entry(owner, model_name="Just-Scored", final=0.7, split="test")
    before = generation_cache.get_generation()
    scoring.finished(evaluation.pk)
    assert generation_cache.get_generation() == before + 1
    assert mail.outbox and "Just-Scored" in mail.outbox[0].subject + mail.outbox[0].body
    with django_assert_max_num_queries(0):
        page = client.get("/")
        assert client.get("/?split=dev").status_code == 200
        assert client.get("/api/v1/leaderboard/").status_code == 200
    assert "Just-Scored" in page.content.decode()  # the new entry is on the warmed board


def test_a_cache_outage_after_a_scoring_never_fails_it(owner, monkeypatch, caplog):
    """If invalidating or warming fails, the scoring stands, the error is logged and the submitter still hears."""
    evaluation = make_entry(owner, final=0.5)

    def broken():
        raise ConnectionError("cache unreachable")

    told = []
    monkeypatch.setattr(generation_cache, "bump_generation", broken)
    monkeypatch.setattr(scoring, "warm_leaderboard", broken)
    monkeypatch.setattr(notifications, "evaluation_finished", told.append)
    with caplog.at_level(logging.ERROR, logger="leaderboard.worker.scoring"):
        scoring.finished(evaluation.pk)
    assert told == [evaluation.pk]
    assert "cache invalidation failed" in caplog.text and "leaderboard warm-up failed" in caplog.text


def test_the_evaluator_gets_a_persistent_reference_ocr_cache(owner, settings):
    """The score command carries --ocr-cache under the data folder, which the evaluator's CLI accepts; an
    operator's own options come last and win."""
    job = evaluator_run.EvaluatorRun(make_queued_evaluation(make_submission(owner)), "token")
    job.data_path = job.dir / "data.jsonl"
    command = job.command()
    assert command[command.index("--ocr-cache") + 1] == str(settings.DATA_DIR / "ocr-cache")
    arguments = command[command.index("score"):]
    parsed = build_parser().parse_args(arguments)
    assert str(parsed.ocr_cache) == str(settings.DATA_DIR / "ocr-cache")
    settings.EVALUATOR_EXTRA_ARGS = "--ocr-cache /srv/ocr"
    assert str(build_parser().parse_args(job.command()[command.index("score"):]).ocr_cache) == "/srv/ocr"


@pytest.mark.skipif(shutil.which("docker") is None, reason="the docker command is not installed")
def test_container_jobs_read_the_ocr_cache_read_only_and_a_separate_container_fills_it(owner, settings,
                                                                                     monkeypatch):
    """The job container mounts the cache read-only and its job.json points at it; the container that fills
    it is the only one mounting it writable, and it gets the task set alone, not the job folder's bundle."""
    from evaluator import container

    settings.EVALUATOR_SANDBOX = "container"
    fills = []
    monkeypatch.setattr(container, "start_fill", lambda *args: fills.append(args) or True)
    job = evaluator_run.EvaluatorRun(make_queued_evaluation(make_submission(owner)), "token")
    job.dir.mkdir(parents=True, exist_ok=True)
    job.data_path = job.dir / "data.jsonl"
    command = job.command()
    cache = (settings.DATA_DIR / "ocr-cache").resolve()
    assert [command[i + 1] for i, part in enumerate(command) if part == "--volume"][-1] == f"{cache}:/ocr-cache:ro"
    assert json.loads((job.dir / "job.json").read_text())["ocr_cache"] == "/ocr-cache"
    [fill_args] = fills
    fill = container.fill_command(*fill_args[:5], protocol=fill_args[5], engine=fill_args[6], labels=fill_args[7])
    volumes = [fill[i + 1] for i, part in enumerate(fill) if part == "--volume"]
    assert f"{cache}:/ocr-cache:rw" in volumes and not any(v.startswith(f"{job.dir.resolve()}:") for v in volumes)
    assert sorted(v.split(":")[0] for v in volumes) == sorted(
        [str(cache), str(job.data_path.resolve()), str(job.dir.resolve() / "data")])
    assert "--network" in fill and "none" in fill and "--read-only" in fill and "ALL" in fill


def labels_of(command: list[str]) -> dict[str, str]:
    return dict(command[i + 1].split("=", 1) for i, part in enumerate(command) if part == "--label")


@pytest.mark.skipif(shutil.which("docker") is None, reason="the docker command is not installed")
def test_the_ocr_fill_and_job_containers_carry_the_attempts_labels_and_their_own_wall_clocks(
        owner, settings, monkeypatch):
    """The sweeps find the fill container by the labels they find job containers by; each container's
    command ends it at its own limit (timeout under tini), the job's past the worker's own stop."""
    from evaluator import container
    from leaderboard.worker import containers

    settings.EVALUATOR_SANDBOX = "container"
    fills = []
    monkeypatch.setattr(container, "start_fill", lambda *args: fills.append(args) or True)
    job = evaluator_run.EvaluatorRun(make_queued_evaluation(make_submission(owner)), "token")
    job.dir.mkdir(parents=True, exist_ok=True)
    job.data_path = job.dir / "data.jsonl"
    command = job.command()
    [fill_args] = fills
    fill = container.fill_command(*fill_args[:5], protocol=fill_args[5], engine=fill_args[6], labels=fill_args[7])
    assert labels_of(fill) == labels_of(command) and containers.LABEL_DEADLINE in labels_of(fill)
    assert labels_of(fill)[containers.LABEL_EVALUATION] == str(job.evaluation.pk)
    limit = settings.EVALUATION_TIME_LIMIT_SECONDS + evaluator_run.STOP_GRACE_SECONDS
    image_at = command.index(settings.EVALUATOR_IMAGE)
    assert command[image_at - 2:image_at] == ["--entrypoint", container.INIT]
    assert command[image_at + 1:image_at + 5] == ["--", container.TIMEOUT, "--kill-after=10s", f"{limit}s"]
    assert command[image_at + 5:] == list(container.JOB_COMMAND)
    fill_at = fill.index(settings.EVALUATOR_IMAGE)
    assert fill[fill_at + 1:fill_at + 5] == ["--", container.TIMEOUT, "--kill-after=10s",
                                             f"{container.FILL_TIME_S + container.FILL_FINISH_S}s"]

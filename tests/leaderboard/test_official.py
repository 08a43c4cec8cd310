"""Protocol iwr-official on the site: the operator's judge settings, the admin action that starts official
scoring (count, cost, the disclosure rule), the worker's command and environment, one board per judge,
and the agreement of the two judges read from stored steps, with the held-out rules."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from evaluator import isolation
from leaderboard import agreement
from leaderboard.models import Evaluation
from leaderboard.worker import evaluator_run
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import (
    make_bundle_submission,
    make_entry,
    make_queued_evaluation,
    make_submission,
    make_task,
    make_task_result,
    make_task_set,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/leaderboard/submission/"
PAGE = "<html><body>page</body></html>"
KEY = "sk-canary-7f3a9c1e"
KEY_ENV = "IWR_TEST_JUDGE_KEY"


@pytest.fixture
def judge(settings):
    """An operator's judge configuration (the key itself is not a setting)."""
    settings.OFFICIAL_JUDGE_BASE_URL = "https://judge.example.org/v1"
    settings.OFFICIAL_JUDGE_MODEL = "judge-pro-2"
    settings.OFFICIAL_GROUNDING_MODEL = "grounder-4o"
    settings.OFFICIAL_JUDGE_KEY_ENV = KEY_ENV
    settings.OFFICIAL_WEIGHTS_DIR = "/srv/iwr/dinov2-base"
    settings.OFFICIAL_DEVICE = "cpu"
    settings.OFFICIAL_TIME_LIMIT_SECONDS = 5 * 3600
    settings.OFFICIAL_JUDGE_SPLITS = ["dev"]
    settings.EVALUATOR_SANDBOX = ""
    return settings


@pytest.fixture
def maintainer(staff, settings, tmp_path):
    from django.contrib.auth.models import Permission

    settings.MEDIA_ROOT = tmp_path / "media"
    staff.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="leaderboard", content_type__model__in=["submission", "evaluation"]))
    return staff


def act(client, submissions, follow: bool = False, **extra):
    data = {"action": "score_official", "_selected_action": [s.pk for s in submissions], **extra}
    return client.post(CHANGELIST, data, follow=follow)


# --------------------------------------------------------------------------- settings and the admin


def test_without_a_judge_endpoint_the_admin_says_why_and_queues_nothing(client, maintainer, owner):
    """Settings absent: the confirmation page names the setting to set; confirming anyway queues nothing."""
    submission = make_bundle_submission(owner, pages={"1": PAGE})
    logged_in(client, maintainer)
    page = act(client, [submission]).content.decode()
    assert "set IWR_OFFICIAL_JUDGE_BASE_URL" in page and "0 of 1 selected entry would be judged" in page
    act(client, [submission], apply="1")
    assert not submission.evaluations.exists()


def test_the_container_sandbox_scores_official_jobs_too(client, maintainer, owner, judge):
    """The relay runs beside the job's container (the key stays outside it): official scoring is not refused."""
    judge.EVALUATOR_SANDBOX = "container"
    logged_in(client, maintainer)
    page = act(client, [make_bundle_submission(owner, pages={"1": PAGE})]).content.decode()
    assert "1 of 1 selected entry would be judged" in page and "IWR_EVALUATOR_SANDBOX" not in page


def test_the_admin_asks_first_with_the_count_then_queues_official_rescores_by_the_configured_judge(
        client, maintainer, owner, judge):
    """The first post is a confirmation (count, cost, judge); confirming queues one iwr-official rescore per
    entry with a bundle, carrying the judge's model ids; doing it again queues nothing more."""
    entries = [make_bundle_submission(owner, pages={"1": PAGE}) for _ in range(2)]
    no_bundle = make_submission(owner)
    logged_in(client, maintainer)
    page = act(client, [*entries, no_bundle]).content.decode()
    assert "2 of 3 selected entries would be judged" in page and "costs money" in page
    assert "judge-pro-2" in page and "grounder-4o" in page and "judge.example.org" in page
    assert "No stored bundle to judge" in page and 'value="Judge 2 entries"' in page
    assert not Evaluation.objects.exists()  # asking costs nothing
    act(client, [*entries, no_bundle], apply="1")
    queued = Evaluation.objects.order_by("submission_id")
    assert [(e.submission_id, e.protocol, e.judge_model, e.grounding_model, e.is_rescore, e.priority, e.status)
            for e in queued] == [(s.pk, "iwr-official-1", "judge-pro-2", "grounder-4o", True, 9, "queued")
                                 for s in sorted(entries, key=lambda s: s.pk)]
    act(client, entries, apply="1")
    assert Evaluation.objects.count() == 2
    judge.OFFICIAL_JUDGE_MODEL = "judge-pro-3"  # another judge is another evaluation
    act(client, entries[:1], apply="1")
    assert Evaluation.objects.filter(judge_model="judge-pro-3").count() == 1


def test_held_out_entries_are_refused_until_the_operator_accepts_the_disclosure(client, maintainer, owner, judge):
    """Test-split entries are refused with the reason (their ground truth would reach the judge's provider);
    with the test split named in IWR_OFFICIAL_JUDGE_SPLITS they are queued."""
    held_out = make_bundle_submission(owner, pages={"1": PAGE}, split="test")
    logged_in(client, maintainer)
    page = act(client, [held_out]).content.decode()
    assert "0 of 1 selected entry would be judged" in page
    assert "ground truth" in page and "judge.example.org" in page and "IWR_OFFICIAL_JUDGE_SPLITS" in page
    messages = [str(m) for m in act(client, [held_out], apply="1", follow=True).context["messages"]]
    assert not held_out.evaluations.exists() and any("IWR_OFFICIAL_JUDGE_SPLITS" in m for m in messages)
    judge.OFFICIAL_JUDGE_SPLITS = ["dev", "test"]
    act(client, [held_out], apply="1")
    assert held_out.evaluations.get().protocol == "iwr-official-1"


def test_the_about_page_states_the_disclosure_rule(client, judge):
    """By default the held-out split is never sent; once named, the About page says it is, and to whom."""
    page = client.get("/about/").content.decode()
    assert "judge-pro-2" in page and "never</strong> sent to a judge" in page
    judge.OFFICIAL_JUDGE_SPLITS = ["dev", "test"]
    page = client.get("/about/").content.decode()
    assert "the held-out test split is sent to the judge</strong> (judge.example.org)" in page


# --------------------------------------------------------------------------- the worker's command


def official_job(owner, **fields) -> evaluator_run.EvaluatorRun:
    from evaluator.protocols import get_protocol
    from leaderboard.intake.evaluations import queue_evaluation

    judge = {"judge_model": "judge-pro-2", "grounding_model": "grounder-4o", **fields}
    evaluation = queue_evaluation(make_submission(owner), get_protocol("iwr-official"), rescore=True, **judge)
    job = evaluator_run.EvaluatorRun(evaluation, "token")
    job.data_path = job.dir / "data.jsonl"
    return job


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_an_official_job_gets_the_judge_flags_of_its_evaluation_and_its_own_time_limit(owner, judge):
    """The command names the endpoint, the evaluation's own model ids (not today's settings), the key's
    variable name, the weights and the device, with the official time limit; iwr-det jobs get none of it."""
    job = official_job(owner)
    judge.OFFICIAL_JUDGE_MODEL = "changed-since"
    judge.OFFICIAL_EVALUATOR_COMMAND = "/opt/iwr/.venv-official/bin/python -m evaluator"
    command = job.command()
    assert command[:3] == ["/opt/iwr/.venv-official/bin/python", "-m", "evaluator"]
    assert option(command, "--protocol") == "iwr-official-1"
    assert option(command, "--judge-base-url") == "https://judge.example.org/v1"
    assert (option(command, "--judge-model"), option(command, "--grounding-model")) == ("judge-pro-2", "grounder-4o")
    assert option(command, "--judge-key-env") == KEY_ENV
    assert (option(command, "--official-weights"), option(command, "--device")) == ("/srv/iwr/dinov2-base", "cpu")
    assert option(command, "--time-limit") == str(5 * 3600) and job.time_limit == 5 * 3600
    assert option(command, "--judge-cache") == str(judge.DATA_DIR / "judge-cache")  # kept between jobs
    deterministic = evaluator_run.EvaluatorRun(make_queued_evaluation(make_submission(owner)), "token")
    deterministic.data_path = deterministic.dir / "data.jsonl"
    plain = deterministic.command()
    assert "--judge-base-url" not in plain and "--judge-key-env" not in plain
    assert option(plain, "--time-limit") == str(judge.EVALUATION_TIME_LIMIT_SECONDS)
    assert plain[:3] != command[:3]


def test_the_key_reaches_only_the_relay_never_the_job_or_the_command_line(owner, judge, monkeypatch):
    """The score command (which runs the judge relay outside the sandbox) gets the key under its variable;
    the job environment the evaluator builds from it has no trace of it, nor does the command line; an
    iwr-det job's score command never has it."""
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("DJANGO_SECRET_KEY", "x" * 40)
    job = official_job(owner)
    job.dir.mkdir(parents=True)
    launcher = job.environment()
    assert launcher[KEY_ENV] == KEY and "DJANGO_SECRET_KEY" not in launcher
    assert KEY not in " ".join(job.command())
    inside = isolation.job_environment(str(job.dir), str(job.dir / "tmp"), "bubblewrap", source=launcher)
    assert KEY_ENV not in inside and KEY not in "".join(inside.values())
    deterministic = evaluator_run.EvaluatorRun(make_queued_evaluation(make_submission(owner)), "token")
    deterministic.dir.mkdir(parents=True)
    assert KEY not in "".join(deterministic.environment().values())


def test_in_container_mode_an_official_job_runs_the_launcher_with_the_official_image_and_never_the_key(
        owner, judge, monkeypatch, tmp_path):
    """The worker runs ``container-job`` (the judge relay's launcher) instead of ``docker run``: the official
    image, the attempt's labels and name, the judge flags and a relay folder in the job folder; the key reaches
    the launcher's environment only, never its command line nor job.json."""
    from evaluator import container
    from tests.leaderboard.test_pipeline_sandbox import fake_engine

    monkeypatch.setenv(KEY_ENV, KEY)
    fake_engine(tmp_path, judge, "")
    judge.OFFICIAL_EVALUATOR_IMAGE = "registry.example.org/iwr/evaluator-official:7"
    judge.JOBS_ROOT = tmp_path / "jobs"
    monkeypatch.setattr(container, "start_fill", lambda *args: True)
    monkeypatch.setattr(container, "chromium_sandbox_problem", lambda: None)
    job = official_job(owner)
    job.dir.mkdir(parents=True)
    command = job.command()
    assert command[command.index("-m") + 1:][:2] == ["evaluator", "container-job"]
    assert command[command.index("container-job") + 1] == str(job.dir)
    assert option(command, "--image") == "registry.example.org/iwr/evaluator-official:7"
    assert option(command, "--name") == job.container_name and "--keep-container" in command
    assert option(command, "--judge-dir") == str(job.dir / "judge")
    assert option(command, "--time-limit") == str(5 * 3600 + evaluator_run.STOP_GRACE_SECONDS)  # the official limit
    assert (option(command, "--judge-model"), option(command, "--judge-key-env")) == ("judge-pro-2", KEY_ENV)
    assert any(word.startswith("--label=org.iwr-bench.evaluation=") for word in command)
    assert KEY not in " ".join(command)
    job_json = (job.dir / "job.json").read_text()
    assert KEY not in job_json and json.loads(job_json)["protocol"] == "iwr-official-1"
    launcher = job.environment()
    assert launcher[KEY_ENV] == KEY


def test_an_official_job_without_the_key_fails_at_once_and_says_which_variable(owner, judge, monkeypatch):
    """No key in the worker's environment: the job fails before anything is copied, as ours (not charged)."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    outcome = official_job(owner).prepare()
    assert (outcome.status, outcome.kind) == ("failed", "infrastructure")
    assert f"set {KEY_ENV}" in outcome.reason and "Not charged" in outcome.reason


# --------------------------------------------------------------------------- one board per judge


def official_entry(owner, judge_model: str, grounding_model: str, final: float, split: str = "dev", **fields):
    return make_entry(owner, final=final, split=split, protocol="iwr-official-1",
                      evaluation_fields={"judge_model": judge_model, "grounding_model": grounding_model},
                      **fields)


def test_scores_of_different_judges_never_share_a_board(client, owner, fresh_cache):
    """Each judge's entries are a board of their own, labelled with its model ids and reached by its own tab;
    the iwr-det board holds neither."""
    official_entry(owner, "judge-a", "judge-a", 0.61, model_name="Alpha-VL")
    official_entry(owner, "judge-b", "grounder-c", 0.42, model_name="Beta-VL")
    make_entry(owner, final=0.5, split="dev", model_name="Det-VL")
    board_a = client.get("/?split=dev&protocol=iwr-official-1&judge=judge-a").content.decode()
    assert "Alpha-VL" in board_a and "Beta-VL" not in board_a and "Det-VL" not in board_a
    assert "iwr-official-1 (judge judge-a)" in board_a
    assert "iwr-official-1 (judge judge-b, grounding grounder-c)" in board_a  # the other judge's tab
    board_b = client.get("/?split=dev&protocol=iwr-official-1&judge=" + quote("judge-b+grounder-c")).content.decode()
    assert "Beta-VL" in board_b and "Alpha-VL" not in board_b
    det = client.get("/?split=dev").content.decode()
    assert "Det-VL" in det and "Alpha-VL" not in det and "Beta-VL" not in det
    api = client.get("/api/v1/leaderboard/?split=dev&protocol=iwr-official-1&judge=judge-a").json()
    assert [row["model_name"] for row in api["entries"]] == ["Alpha-VL"] and api["judge"] == "judge-a+judge-a"
    assert client.get("/?split=dev&judge=judge-a").status_code == 400  # iwr-det has no judge


# --------------------------------------------------------------------------- agreement


def steps(*verdicts) -> list[dict]:
    """Stored step records: the load step, then one per verdict ("pass", "fail"; an action never reached is
    not recorded, as the evaluator does)."""
    records = [{"index": 0, "type": "load", "executed": True, "passed": True, "reason": ""}]
    for index, verdict in enumerate(verdicts, start=1):
        records.append({"index": index, "type": "Click", "executed": verdict == "pass", "passed": verdict == "pass",
                        "reason": "" if verdict == "pass" else "no element matches", "assertion": None})
    return records


def paired_entry(owner, split: str, task_steps: dict, model_name: str = "Pair-VL"):
    """An iwr-det and an official evaluation of one submission, with stored steps per task:
    ``task_steps`` maps a task to (det verdicts, official verdicts)."""
    det = make_entry(owner, final=0.5, split=split, model_name=model_name)
    judged = make_entry(owner, final=0.4, split=split, protocol="iwr-official-1", model_name=model_name,
                        evaluation_fields={"judge_model": "judge-a", "grounding_model": "judge-a"})
    judged.submission_id = det.submission_id
    Evaluation.objects.filter(pk=judged.pk).update(submission_id=det.submission_id)
    for task, (det_verdicts, official_verdicts) in task_steps.items():
        make_task_result(det, task, steps=steps(*det_verdicts), steps_total=task.n_actions)
        make_task_result(judged, task, steps=steps(*official_verdicts), steps_total=task.n_actions)
    return det, judged


def test_the_agreement_view_sets_both_judges_steps_side_by_side(client, owner, fresh_cache):
    """Per task and step, the two verdicts and whether they agree; the rate counts agreeing steps."""
    task_set = make_task_set()
    first = make_task(task_set, key="t1", split="dev", n_actions=3, domain="shop")
    second = make_task(task_set, key="t2", split="dev", n_actions=2, domain="games")
    # t1: both pass step 1; det passes step 2 where the judge fails it; step 3: det fails, judge never got there.
    # t2: both pass both steps. 4 of 5 steps agree.
    _det, judged = paired_entry(owner, "dev", {first: (["pass", "pass", "fail"], ["pass", "fail"]),
                                               second: (["pass", "pass"], ["pass", "pass"])})
    quirked = judged.task_results.get(task=second)  # the judge's answer to step 2 was unparseable: a pass
    quirked.steps[2]["assertion"] = {"passed": True, "evidence": {"raw": "hmm", "quirk": "unparseable_assertion_pass"}}
    quirked.save()
    pairs = agreement.task_pairs(agreement.partner(judged), judged)
    assert [(p.task_key, [(s.deterministic, s.official, s.agree) for s in p.steps]) for p in pairs] == [
        ("t1", [("passed", "passed", True), ("passed", "failed", False), ("failed", "not reached", True)]),
        ("t2", [("passed", "passed", True), ("passed", "passed", True)])]
    page = client.get(f"/results/{judged.pk}/agreement/").content.decode()
    assert 'id="task-t1"' in page and "2 of 3 steps agree" in page and "2 of 2 steps agree" in page
    assert "4 / 5" in page and "80.0" in page
    assert "judge judge-a" in page and "unparseable_assertion_pass" in page
    results = client.get(f"/results/{judged.pk}/").content.decode()
    assert f"/results/{judged.pk}/agreement/" in results
    assert client.get(f"/results/{_det.pk}/agreement/").status_code == 404  # iwr-det has no agreement view


def test_held_out_agreement_shows_rates_to_readers_and_steps_to_staff(client, owner, outsider, staff, fresh_cache):
    """On the test split a reader sees the rates, with categories pooled as the held-out rule does, and no task;
    staff see every task's steps."""
    task_set = make_task_set()
    tasks = [make_task(task_set, key=f"held-out-{n}", split="test", n_actions=1, domain=f"domain-{n}")
             for n in range(2)]
    _det, judged = paired_entry(owner, "test", {tasks[0]: (["pass"], ["pass"]), tasks[1]: (["pass"], ["fail"])})
    logged_in(client, outsider)
    page = client.get(f"/results/{judged.pk}/agreement/").content.decode()
    assert "held-out-0" not in page and "held-out-1" not in page and "domain-0" not in page and "domain-1" not in page
    assert 'id="hidden-tasks"' in page and "1 / 2" in page
    board = client.get("/leaderboard/agreement/?split=test&protocol=iwr-official-1&judge=judge-a").content.decode()
    assert "1 / 2" in board and "domain-0" not in board
    logged_in(client, staff)
    page = client.get(f"/results/{judged.pk}/agreement/").content.decode()
    assert 'id="task-held-out-0"' in page and 'id="task-held-out-1"' in page and "domain-1" in page


def test_the_protocol_agreement_page_pools_every_entry_of_one_judge_per_split_and_category(
        client, owner, collaborator, fresh_cache):
    """The official board links its agreement page; rates pool both entries of that judge, per split and
    per domain, and leave out another judge's entries."""
    task_set = make_task_set()
    task = make_task(task_set, key="d1", split="dev", n_actions=2, domain="shop")
    paired_entry(owner, "dev", {task: (["pass", "pass"], ["pass", "pass"])}, model_name="One")
    paired_entry(collaborator, "dev", {task: (["pass", "fail"], ["pass", "pass"])}, model_name="Two")
    other = make_entry(owner, final=0.3, split="dev", protocol="iwr-official-1", model_name="One",
                       evaluation_fields={"judge_model": "judge-z", "grounding_model": "judge-z"})
    make_task_result(other, task, steps=steps("fail", "fail"), steps_total=2)
    board = client.get("/?split=dev&protocol=iwr-official-1&judge=judge-a").content.decode()
    url = "/leaderboard/agreement/?split=dev&amp;protocol=iwr-official-1&amp;judge=judge-a"
    assert url in board
    page = client.get(url.replace("&amp;", "&")).content.decode()
    assert "3 / 4" in page and "75.0" in page and "shop" in page
    assert client.get("/leaderboard/agreement/?split=dev&protocol=iwr-det").status_code == 400


def test_an_official_run_is_published_only_complete_and_by_the_judge_it_was_queued_with(owner, judge):
    """The judge record of results.json decides: missing, naming other models, or with incomplete tasks, the
    evaluation is not published; complete and by the evaluation's judge, it is."""
    from leaderboard.official import judge_problem

    evaluation = official_job(owner).evaluation
    record = {"host": "judge.example.org", "models": {"judge": "judge-pro-2", "grounding": "grounder-4o"},
              "requests": 40, "cache_hits": 0, "complete": True, "incomplete_tasks": []}
    assert judge_problem({"judge": record}, evaluation) == ""
    assert "no judge record" in judge_problem({}, evaluation)
    other = {**record, "models": {"judge": "judge-pro-2", "grounding": "judge-pro-2"}}
    assert "not the evaluation's" in judge_problem({"judge": other}, evaluation)
    incomplete = {**record, "complete": False, "incomplete_tasks": ["7", "9"]}
    assert "left 2 task(s) incomplete" in judge_problem({"judge": incomplete}, evaluation)


def test_the_worker_refuses_official_jobs_the_admin_did_not_start_or_may_no_longer_send(owner, judge, monkeypatch):
    """No judge chosen (e.g. a protocol offered on the Submit page), or a split no longer allowed: refused."""
    monkeypatch.setenv(KEY_ENV, KEY)
    unjudged = official_job(owner, judge_model="")
    assert "started by maintainers from the admin" in unjudged.prepare().reason
    held_out = official_job(owner)
    Submission = type(held_out.evaluation.submission)
    Submission.objects.filter(pk=held_out.evaluation.submission_id).update(split="test")
    held_out.evaluation.refresh_from_db()
    held_out.evaluation.submission.refresh_from_db()
    assert "IWR_OFFICIAL_JUDGE_SPLITS" in held_out.prepare().reason

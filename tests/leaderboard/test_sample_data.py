"""``manage.py load_sample_data``: the sample benchmark's task sets, the paper's rows and the baselines.

The benchmark here is a tiny one built on the fly in the sample's layout (``<root>/dev/data.jsonl``,
``<root>/test/data.jsonl``), each task with a reference page so every baseline kind has pages.
Queuing a baseline builds its snapshot pages in Chromium; the wake-up sent to the workers is
recorded instead of reaching a broker. The last test scores a baseline with the real evaluator.
"""

from __future__ import annotations

import io
import re
import shutil
import zipfile

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command

from evaluator.baselines import EMPTY_PAGE, KINDS
from evaluator.protocols import get_protocol
from leaderboard.intake import dispatch
from leaderboard.management.commands.load_paper_results import DEFAULT_FILE, read_rows
from leaderboard.models import Evaluation, Submission, Task, TaskSet
from leaderboard.models.submissions import PAPER_PROTOCOL
from leaderboard.worker import scoring
from leaderboard.worker.claims import EVALUATIONS
from tests.leaderboard.factories import make_entry

pytest_plugins = ["tests.leaderboard.datasets"]  # tiny_video, tasks_root

KEYS = {"dev": ["101", "dev-b"], "test": ["201"]}
BASELINE_NAMES = sorted(KINDS.values())


def reference_site(key: str) -> str:
    """A reference page with a heading and a script: the snapshot must keep the one and drop the other."""
    return (f"<!doctype html><html><body><h1>Reference {key}</h1>"
            f"<script>document.title = 'scripted {key}';</script></body></html>")


def add_reference_sites(data_path, keys) -> None:
    for key in keys:
        site = data_path.parent / "data" / key / "reference" / "site"
        site.mkdir(parents=True, exist_ok=True)
        (site / "index.html").write_text(reference_site(key))


@pytest.fixture
def benchmark(tmp_path, tiny_video, tasks_root, settings):
    """A built sample benchmark (two dev tasks, one test task) and throw-away bundle storage."""
    from tests.leaderboard.datasets import build_dataset, make_record

    settings.MEDIA_ROOT = tmp_path / "media"
    root = tmp_path / "benchmark"
    for split, keys in KEYS.items():
        data = build_dataset(root / split, [make_record(key, split) for key in keys], tiny_video)
        add_reference_sites(data, keys)
    return root


@pytest.fixture
def dispatched(monkeypatch) -> list[int]:
    """Evaluation ids whose wake-up was sent to the workers."""
    sent = []
    monkeypatch.setattr(dispatch, "evaluation", lambda evaluation_id: sent.append(evaluation_id) or True)
    return sent


def load(root, *args) -> str:
    out = io.StringIO()
    call_command("load_sample_data", "--benchmark", str(root), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def baselines():
    return Submission.objects.filter(kind=Submission.Kind.BASELINE)


def bundle_pages(submission: Submission) -> dict[str, str]:
    with submission.bundle.open("rb") as handle, zipfile.ZipFile(io.BytesIO(handle.read())) as archive:
        return {name.split("/")[0]: archive.read(name).decode() for name in archive.namelist()}


def stored_counts() -> dict[str, int]:
    return {"task sets": TaskSet.objects.count(), "tasks": Task.objects.count(),
            "submissions": Submission.objects.count(), "evaluations": Evaluation.objects.count()}


# --------------------------------------------------------------------------- a fresh site


@pytest.mark.browser
@pytest.mark.django_db
def test_a_fresh_site_gets_both_splits_the_paper_rows_and_queued_baselines(benchmark, dispatched,
                                                                           django_capture_on_commit_callbacks):
    """Each split's tasks in the sample task set; every paper row scored under the paper's protocol; one
    owner-less, public, free baseline per kind and split, queued once under iwr-det's current version."""
    with django_capture_on_commit_callbacks(execute=True):
        output = load(benchmark)
    task_set = TaskSet.objects.get()
    assert (task_set.slug, task_set.name) == ("sample", "IWR-Bench sample benchmark")
    for split, keys in KEYS.items():
        assert sorted(task_set.tasks.filter(split=split).values_list("key", flat=True)) == keys
        assert f"split {split}: {len(keys)} created, 0 updated, 0 unchanged" in output
        assert sorted(baselines().filter(split=split).values_list("model_name", flat=True)) == BASELINE_NAMES
        assert f"baselines ({split}): {', '.join(KINDS.values())}" in output

    rows = read_rows(DEFAULT_FILE)
    paper = Submission.objects.filter(kind=Submission.Kind.PAPER)
    assert sorted(paper.values_list("model_name", flat=True)) == sorted(row["model"] for row in rows)
    assert set(paper.values_list("split", "owner", "protocol")) == {("test", None, PAPER_PROTOCOL)}
    assert set(Evaluation.objects.filter(submission__in=paper).values_list("protocol", "status")) == {
        (PAPER_PROTOCOL, "scored")}
    assert Evaluation.objects.filter(submission__in=paper).count() == len(rows)
    assert f"paper results: {len(rows)} created, 0 updated" in output

    assert {(s.owner, s.public, s.charged) for s in baselines()} == {(None, True, False)}
    queued = Evaluation.objects.filter(submission__kind=Submission.Kind.BASELINE)
    assert queued.count() == 6
    assert set(queued.values_list("status", "protocol")) == {("queued", get_protocol("iwr-det").full_name)}
    assert sorted(dispatched) == sorted(queued.values_list("pk", flat=True))


@pytest.mark.browser
@pytest.mark.django_db
def test_each_baseline_bundle_holds_its_kind_of_page_for_every_task_of_its_split(benchmark, dispatched):
    """Reference = the reference page; snapshot = its rendered view without scripts; empty = the empty page."""
    load(benchmark)
    for split, keys in KEYS.items():
        pages = {s.model_name: bundle_pages(s) for s in baselines().filter(split=split)}
        assert pages[KINDS["reference"]] == {key: reference_site(key) for key in keys}
        assert pages[KINDS["empty"]] == {key: EMPTY_PAGE for key in keys}
        snapshots = pages[KINDS["snapshot"]]
        assert sorted(snapshots) == keys
        for key, html in snapshots.items():
            assert f"<h1>Reference {key}</h1>" in html and "<script" not in html


@pytest.mark.browser
@pytest.mark.django_db
def test_tasks_without_reference_pages_get_only_the_empty_page_baseline(benchmark, dispatched):
    """No reference data (e.g. official tasks): no reference or snapshot row that could only fail as empty."""
    for site in benchmark.glob("*/data/*/reference/site"):
        shutil.rmtree(site)
    output = load(benchmark)
    assert sorted(baselines().values_list("split", "model_name")) == [(split, KINDS["empty"]) for split in KEYS]
    assert set(Evaluation.objects.filter(submission__in=baselines()).values_list("status", flat=True)) == {"queued"}
    assert f"baselines (dev): {KINDS['empty']}\n" in output


# --------------------------------------------------------------------------- running it again


@pytest.mark.browser
@pytest.mark.django_db
def test_a_second_run_duplicates_nothing_and_requeues_nothing(benchmark, dispatched,
                                                             django_capture_on_commit_callbacks):
    """Tasks unchanged, paper rows updated in place, scored and queued baselines left alone, and it says so."""
    with django_capture_on_commit_callbacks(execute=True):
        load(benchmark)
    Evaluation.objects.filter(submission__kind=Submission.Kind.BASELINE, submission__split="dev").update(
        status=Evaluation.Status.SCORED)
    before, sent = stored_counts(), list(dispatched)
    with django_capture_on_commit_callbacks(execute=True):
        output = load(benchmark)
    assert stored_counts() == before
    assert dispatched == sent
    for split, keys in KEYS.items():
        assert f"split {split}: 0 created, 0 updated, {len(keys)} unchanged" in output
        assert f"baselines ({split}): already scored or queued" in output
    assert f"paper results: 0 created, {len(read_rows(DEFAULT_FILE))} updated" in output


@pytest.mark.browser
@pytest.mark.django_db
def test_a_failed_baseline_is_queued_again_on_the_same_row(benchmark, dispatched, django_capture_on_commit_callbacks):
    """Only the baseline whose evaluation failed gets a new evaluation; no second baseline row appears."""
    load(benchmark)
    empty = baselines().get(split="test", model_name=KINDS["empty"])
    empty.evaluations.update(status=Evaluation.Status.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        output = load(benchmark)
    assert baselines().count() == 6
    assert list(empty.evaluations.order_by("pk").values_list("status", flat=True)) == ["failed", "queued"]
    assert dispatched == [empty.evaluations.latest("pk").pk]
    assert f"baselines (test): {KINDS['empty']}" in output
    assert "baselines (dev): already scored or queued" in output


# --------------------------------------------------------------------------- bad input


@pytest.mark.django_db
@pytest.mark.parametrize("missing", ["benchmark", "test split"])
def test_a_missing_benchmark_names_the_path_and_the_setup_script(benchmark, missing):
    """No data.jsonl where expected: a CommandError naming it and scripts/setup.sh; nothing stored."""
    root = benchmark.parent / "nowhere" if missing == "benchmark" else benchmark
    if missing == "test split":
        (benchmark / "test" / "data.jsonl").unlink()
    with pytest.raises(CommandError) as error:
        load(root)
    message = str(error.value)
    assert str(root / "test" / "data.jsonl") in message and "run scripts/setup.sh" in message
    assert (str(root / "dev" / "data.jsonl") in message) == (missing == "benchmark")
    assert stored_counts() == {"task sets": 0, "tasks": 0, "submissions": 0, "evaluations": 0}


@pytest.mark.django_db
def test_an_invalid_split_stores_nothing_from_the_valid_one(benchmark, tasks_root):
    """A broken test split fails the whole command before the valid dev split, or anything else, is stored."""
    broken = benchmark / "test" / "data.jsonl"
    broken.write_text(broken.read_text() + "{not json\n")
    with pytest.raises(CommandError) as error:
        load(benchmark)
    assert str(broken) in str(error.value) and "nothing was stored" in str(error.value)
    assert stored_counts() == {"task sets": 0, "tasks": 0, "submissions": 0, "evaluations": 0}
    assert not (tasks_root / "sample").exists()


# --------------------------------------------------------------------------- through the real evaluator


@pytest.fixture
def scorable_benchmark(tmp_path, tasks_root, settings):
    """One dev task and one test task whose reference page passes every action (pipeline_support's
    tiny tasks), and pipeline settings for an in-process run of the real evaluator."""
    from tests.leaderboard.pipeline_support import reference_page, write_tiny_dataset

    for name in ("MEDIA_ROOT", "JOBS_ROOT", "ARTIFACTS_ROOT"):
        setattr(settings, name, tmp_path / name.lower())
    settings.EVALUATOR_WORKERS = 1
    settings.EVALUATOR_EXTRA_ARGS = "--no-video"
    root = tmp_path / "benchmark"
    for split in KEYS:
        data = write_tiny_dataset(root / split, split, 1, n_actions=1)
        site = data.parent / "data" / f"{split}1" / "reference" / "site"
        site.mkdir(parents=True)
        (site / "index.html").write_text(reference_page(f"{split}1", n_actions=1))
    return root


def board_row(body: str, model_name: str) -> str:
    rows = re.findall(r"<tr class=\"([^\"]*)\"[^>]*>(.*?)</tr>", body, re.S)
    found = [(cls, cells) for cls, cells in rows if f">{model_name}</a>" in cells]
    assert len(found) == 1, f"{model_name} appears {len(found)} times"
    return found[0][0] + found[0][1]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.django_db
def test_a_queued_baseline_scored_by_the_real_evaluator_is_a_labelled_row_of_its_board(
        scorable_benchmark, dispatched, owner, client, django_capture_on_commit_callbacks):
    """The dev reference baseline, run through the pipeline, tops the dev board as an unranked baseline row."""
    load(scorable_benchmark)
    make_entry(owner, model_name="Some model", split="dev",
               protocol=get_protocol("iwr-det").full_name, final=0.3)
    evaluation = Evaluation.objects.get(submission__split="dev", submission__model_name=KINDS["reference"])
    token = EVALUATIONS.claim(evaluation.pk, "test-node:1")
    with django_capture_on_commit_callbacks(execute=True):
        scoring.run_claimed(evaluation.pk, token)
    evaluation.refresh_from_db()
    assert evaluation.status == "scored", evaluation.failure_reason + evaluation.log[-2000:]
    assert evaluation.final > 0.5 and evaluation.task_results.count() == 1
    cache.clear()
    body = client.get("/?split=dev").content.decode()
    names = re.findall(r'<td class="model"><a href="/results/\d+/">([^<]+)</a>', body)
    assert names == [KINDS["reference"], "Some model"]  # other baselines are not scored yet
    row = board_row(body, KINDS["reference"])
    assert row.startswith("baseline") and '<span class="badge baseline">baseline</span>' in row
    assert '<span class="rank">' not in row  # a yardstick, not a competitor
    assert '<span class="rank">1</span>' in board_row(body, "Some model")

"""No held-out ground truth on any public page, file, download or API answer.

The crawl starts from every parameter-free route and follows every same-site link, as
an anonymous reader and as a signed-in researcher who is not staff. Areas with pages that
need their own data reuse :mod:`tests.leaderboard.secrecy` in their own tests.
"""

from __future__ import annotations

import io
import zipfile

import pytest

from leaderboard import tasksets
from leaderboard.models import Task
from tests.leaderboard import secrecy
from tests.leaderboard.base import logged_in

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # dataset fixtures


@pytest.fixture(autouse=True)
def _heldout_task_results_opened(settings):
    """These tests follow what readers see of test-split tasks when an operator opens their per-task
    results (IWR_HELDOUT_TASK_RESULTS=1): still never ground truth. The default, per-task results of
    the held-out split for staff only, is tested in test_heldout.py."""
    settings.HELDOUT_TASK_RESULTS_PUBLIC = True


@pytest.fixture
def reader(request, client):
    """The client as an anonymous visitor or as a signed-in non-staff user."""
    if request.param == "outsider":
        logged_in(client, request.getfixturevalue("outsider"))
    return client


@pytest.mark.parametrize("reader", ["anonymous", "outsider"], indirect=True)
def test_no_public_page_reveals_test_split_ground_truth(reader, imported_sample):
    """Crawling the whole public site finds no held-out description, assertion, checkpoint or reference."""
    secrets = secrecy.held_out_secrets()
    visited = secrecy.crawl(reader, secrecy.start_urls(), secrets)
    # The crawl must have reached the pages where a leak would be likeliest.
    for url in ("/tasks/", "/tasks/sample/201/", "/tasks/sample/201/inputs.zip", "/tasks/sample/inputs-test.zip",
                "/tasks/sample/201/files/video.mp4", "/api/v1/tasks/", f"/api/v1/tasks/{imported_sample[1].pk}/"):
        assert url in visited, url


@pytest.mark.parametrize("reader", ["anonymous", "outsider"], indirect=True)
def test_scored_entries_and_their_results_keep_ground_truth_secret(reader, imported_sample, owner):
    """With scored test-split entries on the board, results, replays and comparisons leak nothing either."""
    from tests.leaderboard.factories import make_entry

    held_out = [task for task in imported_sample if task.split == "test"]
    first = make_entry(owner, tasks=held_out, finals=[0.4, 0.6], model_name="model-a")
    second = make_entry(owner, tasks=held_out, finals=[0.5, 0.7], model_name="model-b")
    start = [*secrecy.start_urls(), f"/results/{first.pk}/", f"/compare/{first.pk}/{second.pk}/"]
    visited = secrecy.crawl(reader, start, secrecy.held_out_secrets())
    assert f"/results/{first.pk}/tasks/201/" in visited


def test_retired_and_draft_held_out_tasks_stay_secret_too(client, imported_sample):
    """Unpublished test tasks are not reachable at all, their inputs included."""
    Task.objects.filter(key="201").update(status=Task.Status.RETIRED)
    Task.objects.filter(key="202").update(status=Task.Status.DRAFT)
    secrets = secrecy.held_out_secrets()
    visited = secrecy.crawl(client, secrecy.start_urls(), secrets)
    assert not [url for url in visited if "/201/" in url or "/202/" in url]


def test_the_crawl_catches_a_leak(client, imported_sample, monkeypatch):
    """If test tasks showed their actions, the crawl would fail naming the page and the secret."""
    monkeypatch.setattr(tasksets, "dev_actions", tasksets.action_rows)
    with pytest.raises(AssertionError, match=r"/tasks/sample/201/: text 'SECRET-TEST-201-DESCRIPTION-1'"):
        secrecy.crawl(client, ["/tasks/"], secrecy.held_out_secrets())


def test_leaks_inside_zips_and_json_escapes_are_found(imported_sample):
    """A checkpoint inside a deflated zip and a secret written as a JSON string are both found."""
    secrets = secrecy.held_out_secrets()
    task = Task.objects.get(key="201")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.write(task.files_path / "checkpoints/step_1.png", "x/step_1.png")
    assert any("checkpoints/step_1.png" in leak for leak in secrecy.find_leaks(buffer.getvalue(), secrets))
    body = b'{"d": "SECRET-TEST-202-ASSERTION-3"}'
    assert secrecy.find_leaks(body, secrets) == ["text 'SECRET-TEST-202-ASSERTION-3'"]


def test_start_urls_cover_parameter_free_routes_but_not_admin():
    """The crawl starts from every route without parameters, the admin excluded."""
    urls = secrecy.start_urls()
    assert {"/", "/tasks/", "/api/v1/", "/api/v1/tasks/", "/about/"} <= set(urls)
    assert not [url for url in urls if url.startswith("/admin/")]


@pytest.mark.parametrize("reader", ["anonymous", "outsider"], indirect=True)
def test_submission_pages_progress_and_previews_keep_ground_truth_secret(reader, imported_sample, owner, staff,
                                                                        settings, tmp_path):
    """A test-split submission's page, progress JSON and live previews leak nothing, even with judge notes that
    quote secrets; a reference baseline (its bundle is ground truth) offers no preview to non-staff readers."""
    from django.test import Client

    from leaderboard.models import Submission
    from tests.leaderboard.base import logged_in
    from tests.leaderboard.factories import make_bundle_submission, make_scored_evaluation, make_task_result

    settings.MEDIA_ROOT, settings.PREVIEW_ROOT = tmp_path / "media", tmp_path / "previews"
    held_out = [task for task in imported_sample if task.split == "test"]
    reference = (held_out[0].files_path / "reference" / "step_0.json").read_text()
    entries = {}
    for name, kind, page in (("mine", Submission.Kind.BUNDLE, "<p>MY-PAGE</p>"),
                             ("baseline", Submission.Kind.BASELINE, f"<pre>{reference}</pre>")):
        submission = make_bundle_submission(owner if name == "mine" else None, split="test", kind=kind,
                                            pages={task.key: page for task in held_out})
        evaluation = make_scored_evaluation(submission, n_tasks=len(held_out))
        for task in held_out:
            secret = task.record["action_sequence"][0]["parameters"]["description"]
            make_task_result(evaluation, task, error=f"could not find {secret}", steps=[
                {"index": 1, "type": "Click", "passed": False, "reason": f"no element like {secret}"}])
        entries[name] = submission
    secrets = secrecy.held_out_secrets()
    start = [*secrecy.start_urls(), *(f"/submissions/{s.pk}/" for s in entries.values()),
             *(f"/submissions/{s.pk}/progress.json" for s in entries.values())]
    visited = secrecy.crawl(reader, start, secrets)
    mine, baseline = entries["mine"], entries["baseline"].pk
    assert f"/submissions/{mine.pk}/?preview=202" in visited and f"/results/{mine.primary_evaluation.pk}/" in visited
    assert any(url.startswith("/preview/") for url in visited)  # the crawl did open previews
    assert not [url for url in visited if url.startswith(f"/submissions/{baseline}/?preview=")]
    # Shown to staff, the baseline's preview would be caught as a leak: the crawl above would have noticed.
    staff_page = logged_in(Client(), staff).get(f"/submissions/{baseline}/").content.decode()
    link = staff_page.split('id="preview-open" href="', 1)[1].split('"', 1)[0]
    assert secrecy.find_leaks(Client().get(link).content, secrets)


@pytest.fixture
def reference_baseline(imported_sample, settings, tmp_path):
    """The test split's "Reference pages (upper bound)" baseline, scored, with its artifacts on disk: each
    step's screenshot is the task's reference checkpoint (what a perfect page renders), plus a replay video."""
    from leaderboard.models import Submission
    from tests.leaderboard.factories import make_entry

    settings.ARTIFACTS_ROOT = tmp_path / "artifacts"
    held_out = [task for task in imported_sample if task.split == "test"]
    evaluation = make_entry(None, kind=Submission.Kind.BASELINE, model_name="Reference pages (upper bound)",
                            tasks=held_out, finals=[0.97, 0.95], evaluation_fields={"artifacts_dir": "ref"})
    for result in evaluation.task_results.select_related("task"):
        folder = settings.ARTIFACTS_ROOT / "ref" / "tasks" / result.task.key
        folder.mkdir(parents=True)
        result.steps = []
        for index in range(result.task.n_actions + 1):
            (folder / f"step_{index}.png").write_bytes(
                (result.task.files_path / "checkpoints" / f"step_{index}.png").read_bytes())
            result.steps.append({"index": index, "passed": True, "screenshot": f"step_{index}.png",
                                 "elapsed_ms": 500})
        (folder / "replay.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42 reference replay of " + result.task.key.encode())
        result.steps_passed = result.steps_total = result.task.n_actions
        result.save()
    return evaluation


@pytest.mark.parametrize("reader", ["anonymous", "outsider"], indirect=True)
def test_the_reference_baselines_screenshots_and_replays_stay_with_staff(reader, reference_baseline):
    """A held-out split's reference baseline shows its scores and passed/failed per step, never its pages'
    screenshots, replay video or preview (they are near-copies of the reference checkpoints)."""
    secrets = secrecy.held_out_secrets()
    secrecy.add_page_artifacts(secrets, reference_baseline)
    start = [*secrecy.start_urls(), f"/submissions/{reference_baseline.submission_id}/",
             *(f"/results/{reference_baseline.pk}/tasks/{key}/files/{name}"
               for key in ("201", "202") for name in ("replay.mp4", "step_1.png"))]
    visited = secrecy.crawl(reader, start, secrets)
    replay = f"/results/{reference_baseline.pk}/tasks/201/"
    assert replay in visited and f"/results/{reference_baseline.pk}/" in visited
    page = reader.get(replay).content.decode()
    assert "Reference pages (upper bound)" in page and "97.00" in page and page.count('class="badge pass">passed') == 3
    assert "shown to maintainers only" in page


def test_the_crawl_catches_a_reference_baseline_showing_its_replay(client, reference_baseline, monkeypatch):
    """Were the baseline's artifacts served like any submission's, the crawl would name the screenshot and video."""
    from leaderboard import access

    monkeypatch.setattr(access, "reveals_ground_truth", lambda submission: False)
    secrets = secrecy.held_out_secrets()
    secrecy.add_page_artifacts(secrets, reference_baseline)
    with pytest.raises(AssertionError) as failure:
        secrecy.crawl(client, [f"/results/{reference_baseline.pk}/tasks/201/"], secrets)
    message = str(failure.value)
    assert "201/checkpoints/step_1.png" in message and "201/replay.mp4" in message


def test_staff_see_the_reference_baselines_screenshots_and_replay(client, staff, reference_baseline):
    """Maintainers still get every artifact of the baseline."""
    logged_in(client, staff)
    page = client.get(f"/results/{reference_baseline.pk}/tasks/201/").content.decode()
    base = f"/results/{reference_baseline.pk}/tasks/201/files/"
    assert f"{base}replay.mp4" in page and f"{base}step_1.png" in page
    assert client.get(f"{base}step_1.png").status_code == 200 and client.get(f"{base}replay.mp4").status_code == 200

"""The submission page (scores, intervals, category charts, per-task table, live progress) and the
live preview of submitted pages: who gets a preview link, and what every preview answer allows."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.core import signing
from django.core.cache import cache
from django.test import Client

from leaderboard import previews
from leaderboard.models import GenerationJob, Submission
from tests.leaderboard.base import logged_in
from tests.leaderboard.factories import (
    make_bundle_submission,
    make_queued_evaluation,
    make_scored_evaluation,
    make_submission,
    make_task_result,
)

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.leaderboard.datasets"]  # imported_sample
PAGE = ('<!doctype html><html><head><link rel="stylesheet" href="css/site.css"></head><body>'
        '<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.png"><iframe src="https://evil.example/"></iframe>'
        '<p>SUBMITTED-PAGE</p></body></html>')
PREVIEW_LINK = re.compile(r'id="preview-open" href="([^"]+)"')


@pytest.fixture(autouse=True)
def storage(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PREVIEW_ROOT = tmp_path / "previews"
    cache.clear()


@pytest.fixture
def bundle_pages(tmp_path) -> dict:
    """Task 101's page with a stylesheet beside it, dev-b's as plain HTML (no 201/202 pages: test split)."""
    folder = tmp_path / "page-101"
    (folder / "css").mkdir(parents=True)
    (folder / "index.html").write_text(PAGE)
    (folder / "css" / "site.css").write_text("p { color: rgb(1, 2, 3); }")
    return {"101": folder, "dev-b": "<!doctype html><p>DEV-B-PAGE</p>"}


def scored(owner, tasks, pages, **fields):
    """A scored bundle submission with task results and 95% intervals."""
    submission = make_bundle_submission(owner, pages=pages, split=tasks[0].split, **fields)
    evaluation = make_scored_evaluation(submission, final=0.55, ifs=0.5, vfs=0.66, n_tasks=len(tasks),
                                        final_ci_low=0.41, final_ci_high=0.69, ifs_ci_low=0.3, ifs_ci_high=0.7,
                                        vfs_ci_low=0.6, vfs_ci_high=0.72, low_level_ci_low=0.58,
                                        low_level_ci_high=0.74, high_level_ci_low=0.51, high_level_ci_high=0.8)
    for n, task in enumerate(tasks):
        make_task_result(evaluation, task, final=0.3 + 0.2 * n, ifs=0.25, vfs=0.75, steps_passed=n,
                         steps_total=task.n_actions)
    return evaluation


def dev(tasks):
    return [task for task in tasks if task.split == "dev"]


def text(response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return body.decode("utf-8", "replace")


def preview_link(client, submission, key: str | None = None) -> str:
    page = text(client.get(f"/submissions/{submission.pk}/" + (f"?preview={key}" if key else "")))
    match = PREVIEW_LINK.search(page)
    assert match, "the page offers no preview"
    return match[1]


# --------------------------------------------------------------------------- the page


def test_the_page_shows_scores_with_intervals_rank_category_charts_and_tasks(client, owner, imported_sample,
                                                                             bundle_pages):
    """Summary, Final/IFS/VFS with 95% intervals, rank, the category charts' JSON and a row per task."""
    evaluation = scored(owner, dev(imported_sample), bundle_pages, model_name="Page-VL")
    page = text(client.get(f"/submissions/{evaluation.submission_id}/"))
    assert "Page-VL" in page and "55.00" in page and "95% CI 41.00\u201369.00" in page
    assert "#1" in page and "Low-level" in page
    assert f'data-chart-url="/results/{evaluation.pk}/categories.json"' in page and "Interaction level" in page
    for key in ("101", "dev-b"):
        assert f"/results/{evaluation.pk}/tasks/{key}/" in page
        assert f"/submissions/{evaluation.submission_id}/?preview={key}#preview" in page
    assert "0/2" in page and "step 1" in page  # steps passed / total and why task 101 stopped
    assert client.get(f"/results/{evaluation.pk}/categories.json").json()["by_category"]


def test_every_score_shows_its_interval_on_the_page_and_in_the_progress_json(client, owner, imported_sample,
                                                                              bundle_pages):
    """Final, IFS, VFS, Low-level and High-level each carry their 95% interval, rendered and polled alike."""
    evaluation = scored(owner, dev(imported_sample), bundle_pages)
    page = text(client.get(f"/submissions/{evaluation.submission_id}/"))
    expected = {"final": "41.00\u201369.00", "ifs": "30.00\u201370.00", "vfs": "60.00\u201372.00",
                "low_level": "58.00\u201374.00", "high_level": "51.00\u201380.00"}
    shown = dict(re.findall(r'<span class="ci" data-ci="(\w+)">([^<]*)</span>', page))
    assert shown == {name: f"95% CI {bounds}" for name, bounds in expected.items()}
    scores = client.get(f"/submissions/{evaluation.submission_id}/progress.json").json()["scores"]
    assert (scores["low_level_ci_low"], scores["low_level_ci_high"]) == (0.58, 0.74)
    assert (scores["high_level_ci_low"], scores["high_level_ci_high"]) == (0.51, 0.8)


def test_a_running_submission_shows_a_table_that_fills_in_as_tasks_finish(client, owner, imported_sample,
                                                                          bundle_pages):
    """While scoring, the page polls; the progress JSON carries the rows the table shows and says it is live."""
    submission = make_bundle_submission(owner, pages=bundle_pages)
    evaluation = make_queued_evaluation(submission, status="running", tasks_total=2)
    page = text(client.get(f"/submissions/{submission.pk}/"))
    assert 'data-live="1"' in page and "No task scored yet" in page and "js/progress.js" in page
    make_task_result(evaluation, imported_sample[0], final=0.25)
    state = client.get(f"/submissions/{submission.pk}/progress.json").json()
    assert state["live"] is True and state["tasks"][0]["final"] == 0.25
    row = state["rows"][0]
    assert row["key"] == "101" and row["final"] == "25.00"
    assert row["replay_url"] == f"/results/{evaluation.pk}/tasks/101/"


def test_generating_pages_is_live_until_the_generation_ends(client, owner, imported_sample):
    """An endpoint submission without an evaluation polls while its pages are made, and stops if that fails."""
    submission = make_submission(owner, kind=Submission.Kind.ENDPOINT)
    job = GenerationJob.objects.create(submission=submission, base_url="http://model.invalid/v1", model_id="m",
                                       status=GenerationJob.Status.RUNNING)
    state = client.get(f"/submissions/{submission.pk}/progress.json").json()
    assert state["status"] == "generating" and state["live"] is True
    assert 'data-live="1"' in text(client.get(f"/submissions/{submission.pk}/"))
    GenerationJob.objects.filter(pk=job.pk).update(status=GenerationJob.Status.FAILED)
    assert client.get(f"/submissions/{submission.pk}/progress.json").json()["live"] is False


# --------------------------------------------------------------------------- who gets a preview


def test_the_preview_panel_offers_every_task_of_the_split_in_a_sandboxed_frame(client, owner, imported_sample,
                                                                                bundle_pages):
    """One signed link per task; the chosen task's page in an iframe sandboxed to scripts only."""
    evaluation = scored(owner, dev(imported_sample), bundle_pages)
    page = text(client.get(f"/submissions/{evaluation.submission_id}/?preview=dev-b"))
    assert re.search(r'<iframe id="preview-frame" src="/preview/[^"]+/" sandbox="allow-scripts"', page)
    assert page.count('data-src="/preview/') == 2 and '<option value="dev-b" data-src=' in page
    assert re.search(r'value="dev-b"[^>]*selected', page)
    assert "DEV-B-PAGE" in text(client.get(preview_link(client, evaluation.submission, "dev-b")))


def test_private_submissions_are_previewed_by_their_owner_and_staff_only(client, owner, outsider, staff,
                                                                         imported_sample, bundle_pages):
    """Others cannot open the page at all; a link given out while public dies when it is made private."""
    public = scored(owner, dev(imported_sample), bundle_pages).submission
    public_link = preview_link(client, public)
    owners_link = preview_link(logged_in(Client(), owner), public)
    Submission.objects.filter(pk=public.pk).update(public=False)
    assert client.get(public_link).status_code == 404
    assert logged_in(client, outsider).get(f"/submissions/{public.pk}/").status_code == 404
    assert "SUBMITTED-PAGE" in text(Client().get(owners_link))  # no cookie needed: the link is the permission
    assert "SUBMITTED-PAGE" in text(Client().get(preview_link(logged_in(Client(), staff), public)))


def test_held_out_reference_baselines_are_previewed_by_staff_only(client, staff, imported_sample):
    """A test-split baseline bundle holds the reference pages themselves: no preview, no Preview links."""
    held_out = [task for task in imported_sample if task.split == "test"]
    baseline = scored(None, held_out, {"201": "<p>REFERENCE-PAGE</p>"}, kind=Submission.Kind.BASELINE)
    page = text(client.get(f"/submissions/{baseline.submission_id}/"))
    assert 'id="preview"' not in page and "?preview=" not in page and "/preview/" not in page
    assert "?preview=" not in text(client.get(f"/results/{baseline.pk}/"))
    forged = signing.dumps({"s": baseline.submission_id, "k": "201", "a": previews.PUBLIC}, salt=previews.SALT)
    assert "REFERENCE-PAGE" not in text(client.get(f"/preview/{forged}/"))
    assert "REFERENCE-PAGE" in text(Client().get(preview_link(logged_in(Client(), staff), baseline.submission)))


# --------------------------------------------------------------------------- what a preview may do


def test_every_preview_answer_is_sandboxed_without_network_and_sets_no_cookie(client, owner, imported_sample,
                                                                              bundle_pages):
    """CSP sandbox (opaque origin), no connections, only the link's own files; nosniff; no cookie, no session."""
    evaluation = scored(owner, dev(imported_sample), bundle_pages)
    link = preview_link(client, evaluation.submission, "101")
    fresh = Client()
    for url, status in ((link, 200), (link + "css/site.css", 200), (link + "__assets__/asset001.png", 200),
                        (link + "nothing-here.js", 404), ("/preview/forged/", 404)):
        response = fresh.get(url)
        assert response.status_code == status, url
        policy = response["Content-Security-Policy"]
        assert policy.startswith("sandbox allow-scripts;") and "allow-same-origin" not in policy
        for directive in ("default-src 'none'", "connect-src 'none'", "form-action 'none'", "frame-src 'none'",
                          "frame-ancestors 'self'"):
            assert directive in policy, (url, directive)
        assert response["X-Content-Type-Options"] == "nosniff" and response["Referrer-Policy"] == "no-referrer"
        assert "X-Frame-Options" not in response and not response.cookies and "Cookie" not in response.get("Vary", "")
    assert f"script-src http://testserver{link} 'unsafe-inline'" in fresh.get(link)["Content-Security-Policy"]
    assert client.get("/about/")["X-Frame-Options"] == "DENY"  # the site's own pages stay unframeable


def test_a_preview_serves_the_page_as_the_judge_does_its_files_and_the_tasks_assets(client, owner, imported_sample,
                                                                                   bundle_pages):
    """Iframes stripped, asset placeholders under the link, files beside the page; nothing else on disk."""
    evaluation = scored(owner, dev(imported_sample), bundle_pages)
    link = preview_link(client, evaluation.submission, "101")
    page = text(client.get(link))
    assert "SUBMITTED-PAGE" in page and "<iframe" not in page and f'src="{link}__assets__/asset001.png"' in page
    assert text(client.get(link + "css/site.css")) == "p { color: rgb(1, 2, 3); }"
    assert client.get(link + "css/site.css")["Content-Type"].startswith("text/css")
    task = next(task for task in imported_sample if task.key == "101")
    assert b"".join(client.get(link + "__assets__/asset001.png").streaming_content) == \
        (task.files_path / "assets" / "asset001.png").read_bytes()
    for path in ("../dev-b/index.html", "%2e%2e/dev-b/index.html", "__assets__/../checkpoints/step_1.png",
                 "__assets__/../../201/checkpoints/step_1.png", "/etc/passwd"):
        assert client.get(link + path).status_code == 404, path


def test_a_page_missing_from_the_bundle_says_so(client, owner, imported_sample, bundle_pages):
    """A task without a page in the bundle previews as a short note."""
    submission = make_bundle_submission(owner, pages={"101": bundle_pages["101"]})
    response = client.get(preview_link(client, submission, "dev-b"))
    assert response.status_code == 404 and "no page for task dev-b" in text(response)


def test_a_forged_or_expired_link_opens_nothing(client, owner, imported_sample, bundle_pages, settings, monkeypatch):
    """The signature and its age are checked on every request."""
    submission = make_bundle_submission(owner, pages=bundle_pages)
    link = preview_link(client, submission, "101")
    token = link.split("/")[2]
    assert client.get(link).status_code == 200
    assert client.get(link.replace(token, token[:-2] + "xx")).status_code == 404
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + settings.PREVIEW_LINK_SECONDS + 5)
    response = client.get(link)
    assert response.status_code == 404 and "expired" in text(response)


def test_a_separate_preview_origin_serves_the_links_when_configured(client, owner, imported_sample, bundle_pages,
                                                                    settings):
    """With IWR_PREVIEW_ORIGIN the frame points there, and the site may frame it."""
    settings.PREVIEW_ORIGIN = "https://preview.example.org"
    settings.SITE_URL = "https://leaderboard.example.org"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "preview.example.org"]
    submission = make_bundle_submission(owner, pages=bundle_pages)
    link = preview_link(client, submission, "101")
    assert link.startswith("https://preview.example.org/preview/")
    response = client.get(link.removeprefix("https://preview.example.org"), HTTP_HOST="preview.example.org",
                          secure=True)
    assert "SUBMITTED-PAGE" in text(response)
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://leaderboard.example.org" in policy
    assert f"img-src {link} data:" in policy


def test_the_bundle_is_unpacked_once_and_a_refused_bundle_shows_no_page(owner, imported_sample, bundle_pages,
                                                                        settings, tmp_path):
    """Unpacking is cached per bundle; a bundle the intake refuses gives an empty folder, not an error."""
    submission = make_bundle_submission(owner, pages=bundle_pages)
    folder = previews.unpacked(submission)
    assert (folder / "101" / "css" / "site.css").is_file()
    (folder / "101" / "marker").write_text("kept")
    assert previews.unpacked(submission) == folder and (folder / "101" / "marker").is_file()
    broken = make_submission(owner)
    broken.bundle.save("broken.zip", _file(tmp_path / "broken.zip", b"not a zip"), save=True)
    empty = previews.unpacked(broken)
    assert empty.is_dir() and not list(empty.iterdir())


def _file(path: Path, data: bytes):
    from django.core.files.base import ContentFile

    return ContentFile(data, name=path.name)

"""The submission page in a real browser: scores, charts, per-task table and the live preview of
the submitted pages, at desktop and phone width (screenshots in test-artifacts/e2e/).

The preview runs untrusted HTML, so a probe page tries what a hostile page would: read the site's
cookies and storage, call the site's API with the reader's credentials, reach into the parent
page. Inside the submission page's frame and opened directly in a tab, all of it must fail, while
the page's own script, stylesheet and the task's assets still load.
"""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from evaluator.bundle import make_bundle_zip
from leaderboard import tasksets
from leaderboard.models import Task
from tests.e2e.conftest import DESKTOP, log_in, no_horizontal_overflow, snap, snap_path
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PROBE_TASK = "sb-admin-tables-search"
FINALS = (0.81, 0.42, 0.66, 0.35, 0.74)  # per task, repeated over however many tasks the dev split has
SHOWN_TASK = "sb-admin-dashboard-menus"
PROBE_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Probe</title><link rel="stylesheet" href="css/probe.css"></head>
<body><h1 id="title">Register</h1>
<img id="asset" src="__PLACEHOLDER_ASSETS_BASE_DIR__/asset001.svg" alt="">
<ul id="out"></ul>
<script>document.getElementById("title").setAttribute("data-inline", "ran");</script>
<script src="js/probe.js"></script>
</body></html>
"""
PROBE_SCRIPT = """
function say(id, text) {
  var item = document.createElement("li"); item.id = id; item.textContent = text;
  document.getElementById("out").appendChild(item);
}
try { say("cookie", "cookie:" + document.cookie); } catch (e) { say("cookie", "cookie-blocked"); }
try { window.localStorage.setItem("probe", "1"); say("storage", "storage-open"); }
catch (e) { say("storage", "storage-blocked"); }
try { say("parent", "parent:" + window.parent.document.cookie); } catch (e) { say("parent", "parent-blocked"); }
say("origin", "origin:" + window.origin);
say("inline", "inline:" + document.getElementById("title").getAttribute("data-inline"));
say("style", "style:" + getComputedStyle(document.getElementById("title")).color);
fetch("/api/v1/submissions/", {credentials: "include"})
  .then(function (r) { say("fetch", "fetch-read:" + r.status); }, function () { say("fetch", "fetch-blocked"); });
var image = document.getElementById("asset");
image.decode().then(function () { say("asset", "asset-loaded"); }, function () { say("asset", "asset-failed"); });
"""
PROBE_STYLE = "#title { color: rgb(1, 2, 3); }"


@pytest.fixture
def site(live_server, settings, tmp_path):
    """The sample benchmark's dev split, and a researcher's scored, public submission of its pages
    (the reference pages, with one task's page replaced by the probe)."""
    data = settings.SAMPLE_BENCHMARK_DIR / "dev" / "data.jsonl"
    if not data.is_file():
        pytest.skip("the sample benchmark is not built (scripts/setup.sh builds it)")
    for name in ("TASKS_ROOT", "ARTIFACTS_ROOT", "JOBS_ROOT", "MEDIA_ROOT", "PREVIEW_ROOT"):
        setattr(settings, name, tmp_path / name.lower())
    cache.clear()
    tasksets.import_dataset(data, "dev", "sample", "Sample benchmark")
    tasks = list(Task.objects.order_by("key"))
    researcher = make_user("researcher")
    evaluation = make_entry(researcher, model_name="Probe-VL 7B", organisation="Probe Lab", split="dev",
                            tasks=tasks, finals=[FINALS[k % len(FINALS)] for k in range(len(tasks))], open_weights=True)
    pages = {task.key: data.parent / "data" / task.key / "reference" / "site" / "index.html" for task in tasks}
    folder = tmp_path / "bundle"
    (folder / PROBE_TASK / "css").mkdir(parents=True)
    (folder / PROBE_TASK / "js").mkdir()
    (folder / PROBE_TASK / "index.html").write_text(PROBE_PAGE)
    (folder / PROBE_TASK / "css" / "probe.css").write_text(PROBE_STYLE)
    (folder / PROBE_TASK / "js" / "probe.js").write_text(PROBE_SCRIPT)
    pages[PROBE_TASK] = folder / PROBE_TASK
    _store_bundle(evaluation.submission, make_bundle_zip(pages, tmp_path / "bundle.zip"))
    return {"url": live_server.url, "page": f"{live_server.url}/submissions/{evaluation.submission_id}/",
            "tasks": len(tasks)}


def _store_bundle(submission, path) -> None:
    from django.core.files import File

    with open(path, "rb") as handle:
        submission.bundle.save("bundle.zip", File(handle), save=True)


def probe_results(scope) -> dict[str, str]:
    """What the probe page could do, as it wrote it into its list."""
    expect(scope.locator("#out li")).to_have_count(8)
    expect(scope.locator("#fetch")).to_be_attached()
    return {item.get_attribute("id"): item.inner_text() for item in scope.locator("#out li").all()}


def assert_contained(results: dict[str, str]) -> None:
    assert results["cookie"] == "cookie-blocked", results  # an opaque origin has no cookies to read
    assert results["storage"] == "storage-blocked", results
    assert results["parent"] == "parent-blocked", results
    assert results["origin"] == "origin:null", results
    assert results["fetch"] == "fetch-blocked", results  # connect-src 'none': not even to the site's API
    # ... while the page's own inline script, stylesheet, script file and the task's asset all work.
    assert results["inline"] == "inline:ran" and results["style"] == "style:rgb(1, 2, 3)", results
    assert results["asset"] == "asset-loaded", results


def test_the_preview_runs_the_page_but_cannot_touch_the_site(site, desktop):
    """In the page's frame and opened directly, the submitted page has no cookies, storage, parent or network."""
    page = desktop
    log_in(page, site["url"])
    page.goto(site["page"] + f"?preview={PROBE_TASK}")
    # The site's own cookies are HttpOnly: give its page a script-readable one, which the preview must not reach.
    page.evaluate("document.cookie = 'site-probe=1; path=/'")
    assert "site-probe=1" in page.evaluate("document.cookie")
    frame = page.frame_locator("#preview-frame")
    assert_contained(probe_results(frame))
    link = page.locator("#preview-open").get_attribute("href")
    assert re.match(r"^/preview/[^/]+/$", link), link

    page.goto(site["url"] + link)  # a direct visit is sandboxed by the response's own CSP
    assert_contained(probe_results(page))


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_the_submission_page_shows_scores_charts_tasks_and_a_preview(site, request, width):
    """Scores with intervals, category charts, the per-task table and the scaled preview, at both widths."""
    page = request.getfixturevalue(width)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" and not
            from_preview(message) else None)  # the submitted page's own errors (say a blocked request) are its business
    page.goto(site["page"] + f"?preview={SHOWN_TASK}")
    expect(page.locator("h1")).to_contain_text("Probe-VL 7B")
    expect(page.locator("#scores [data-ci=final]")).to_contain_text("95% CI")
    expect(page.locator(".lb-task-table tbody tr")).to_have_count(site["tasks"])  # one row per dev task
    expect(page.locator(".lb-task-table a", has_text="Preview")).to_have_count(site["tasks"])
    page.locator(".lb-categories").scroll_into_view_if_needed()
    expect(page.locator(".lb-categories .main-svg").first).to_be_attached(timeout=30_000)
    page.locator("#preview").scroll_into_view_if_needed()
    frame = page.frame_locator("#preview-frame")
    expect(frame.locator("body")).to_contain_text("Dashboard", timeout=20_000)
    stage = page.locator("#preview-stage").bounding_box()
    assert stage["width"] <= page.viewport_size["width"] and abs(stage["height"] - stage["width"] * 720 / 1280) < 3
    assert no_horizontal_overflow(page), f"the submission page scrolls sideways at {width} width"
    snap(page, f"20-submission-{width}")
    page.locator("#preview").screenshot(path=str(snap_path(f"21-preview-{width}")))
    assert not errors, errors

    page.select_option("#preview-task", "2048-first-moves")  # switching tasks swaps the frame in place
    expect(frame.locator("body")).to_contain_text("2048", timeout=20_000)
    assert "preview=2048-first-moves" in page.url
    page.goto(site["url"] + page.locator("#preview-open").get_attribute("href"))  # "Open in a new tab"
    expect(page.locator("body")).to_contain_text("2048")
    snap(page, f"23-preview-opened-directly-{width}")


def test_the_page_and_its_charts_follow_a_dark_system_setting(site, browser):
    """With the system set to dark: the site's colours and the category charts are dark, text stays legible."""
    context = browser.new_context(viewport=DESKTOP, color_scheme="dark", locale="en-US", timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(site["page"])
    page.locator(".lb-categories").scroll_into_view_if_needed()
    chart = page.locator(".lb-categories .chart[data-theme=dark]").first
    expect(chart.locator(".main-svg").first).to_be_attached(timeout=30_000)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 23, 42)"
    assert page.evaluate("getComputedStyle(document.body).color") == "rgb(229, 231, 235)"
    assert chart.evaluate("element => element._fullLayout.paper_bgcolor") == "#131d33"
    assert page.evaluate("getComputedStyle(document.querySelector('.card') || document.body).backgroundColor") \
        in ("rgb(19, 29, 51)", "rgb(15, 23, 42)")
    snap(page, "24-submission-dark")
    context.close()


def from_preview(message) -> bool:
    return "/preview/" in (message.location or {}).get("url", "")


def test_an_expired_or_forged_link_shows_nothing(site, desktop, settings):
    """A tampered link answers with a short note, still under the sandboxing policy."""
    page = desktop
    page.goto(site["page"])
    link = page.locator("#preview-open").get_attribute("href")
    response = page.goto(site["url"] + link.replace("/preview/", "/preview/x"))
    assert response.status == 404 and "sandbox allow-scripts" in response.headers["content-security-policy"]
    expect(page.locator("body")).to_contain_text("not valid")


def test_the_page_follows_a_submission_from_page_generation_to_its_scores(site, desktop):
    """Generating, then being scored, then scored: the page keeps polling and fills itself in, then shows the charts."""
    from django.utils import timezone

    from leaderboard.models import Evaluation, GenerationJob, Submission
    from tests.leaderboard.factories import make_evaluation, make_submission, make_task_result

    page, tasks = desktop, list(Task.objects.order_by("key"))
    submission = make_submission(None, kind=Submission.Kind.ENDPOINT, model_name="Endpoint-VL", split="dev")
    GenerationJob.objects.create(submission=submission, base_url="http://model.invalid/v1", model_id="m",
                                 status=GenerationJob.Status.RUNNING)
    page.goto(f"{site['url']}/submissions/{submission.pk}/")
    badge = page.locator("#status-badge")
    expect(badge).to_have_text("generating")

    evaluation = make_evaluation(submission, status=Evaluation.Status.RUNNING, tasks_total=len(tasks))
    expect(badge).to_have_text("running", timeout=30_000)  # still polling while pages were generated
    expect(page.locator("#generation-note [data-generated]")).to_be_visible()
    expect(page.locator("#progress-text")).to_have_text(f"0 of {len(tasks)} tasks scored")
    make_task_result(evaluation, tasks[0], final=0.5, ifs=0.4, vfs=0.73)
    Evaluation.objects.filter(pk=evaluation.pk).update(tasks_done=1)
    expect(page.locator("#task-rows tr")).to_have_count(1, timeout=30_000)
    expect(page.locator("#task-rows tr")).to_contain_text(tasks[0].key)
    expect(page.locator("#task-rows tr a", has_text="Replay")).to_have_count(1)
    snap(page, "22-submission-running-desktop")

    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=Evaluation.Status.SCORED, finished_at=timezone.now(), n_tasks=1, final=0.5, ifs=0.4, vfs=0.73,
        low_level=0.7, high_level=0.6, final_ci_low=0.3, final_ci_high=0.7)
    expect(page.locator(".lb-categories")).to_be_visible(timeout=30_000)  # reloaded once, drawn by the server
    expect(badge).to_have_text("scored")
    expect(page.locator("#scores [data-ci=final]")).to_have_text("95% CI 30.00\u201370.00")
    # the reloaded page's last requests (charts, assets) end before the test's database is flushed: a request
    # still being served holds the shared in-memory database and the flush fails
    page.wait_for_load_state("networkidle")

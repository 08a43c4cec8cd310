"""A researcher's journey in a real browser: upload a bundle, wait for the real evaluator to score
it, find it ranked, open its results and step through a replay; then every leaderboard page
at desktop and phone width, saved as screenshots in test-artifacts/e2e/ for a person to look at.

The scoring worker runs inside the request (Celery's eager mode) and calls the evaluator CLI as
production does, with its process sandbox and Chromium's own sandbox.
"""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.core.management import call_command
from playwright.sync_api import expect

from leaderboard import tasksets
from leaderboard.celery import app as celery_app
from leaderboard.models import Evaluation, Submission, Task
from tests.e2e.conftest import log_in, no_horizontal_overflow, scoring_story, snap, snap_path
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry
from tests.leaderboard.pipeline_support import write_bundle, write_tiny_dataset

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
MODEL = "E2E Vision 7B"
SCORING_TIMEOUT_MS = 420_000


@pytest.fixture
def site(live_server, settings, tmp_path):
    """A live site with two dev tasks, the paper's rows, a baseline, and a researcher account."""
    for name in ("TASKS_ROOT", "ARTIFACTS_ROOT", "JOBS_ROOT", "MEDIA_ROOT"):
        setattr(settings, name, tmp_path / name.lower())
    # The real evaluator, whatever an earlier test of the session left configured: in CI this job once ran
    # the pipeline tests' stand-in evaluator (its results, step records without an index, in 0.8 s).
    settings.EVALUATOR_COMMAND, settings.EVALUATOR_EXTRA_ARGS = "", ""
    cache.clear()
    data = write_tiny_dataset(tmp_path / "tiny", "dev", 2, n_actions=2)
    tasksets.import_dataset(data, "dev", "tiny")
    tasks = list(Task.objects.order_by("key"))
    make_entry(None, kind=Submission.Kind.BASELINE, model_name="Empty page (lower bound)", split="dev",
               tasks=tasks, finals=[0.02, 0.04])
    call_command("load_paper_results", verbosity=0)
    make_user("researcher")
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield {"url": live_server.url, "bundle": write_bundle(tmp_path / "pages.zip", [t.key for t in tasks])}
    celery_app.conf.task_always_eager = previous


def submit_bundle(page, url: str, bundle) -> None:
    page.goto(f"{url}/submit/")
    # The bytes, not a path: Chromium runs as the sandbox user, who may not read the test's files.
    page.set_input_files("input[name=bundle]", files=[{"name": "pages.zip", "mimeType": "application/zip",
                                                        "buffer": bundle.read_bytes()}])
    page.select_option("select[name=split]", "dev")
    page.fill("input[name=model_name]", MODEL)
    page.fill("input[name=organisation]", "Test Lab")
    page.check("input[name=open_weights]")
    snap(page, "01-submit-desktop")
    page.click("#submit-button")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"), timeout=SCORING_TIMEOUT_MS)
    expect(page.locator("#status-badge")).to_have_text("scored", timeout=60_000)
    snap(page, "02-submission-scored-desktop")
    # The live preview runs the submitted page itself, inline handlers included, in its sandbox.
    page.locator("#preview").scroll_into_view_if_needed()
    frame = page.frame_locator("#preview-frame")
    expect(frame.locator("h1")).to_have_text("Task dev1")
    frame.locator("button", has_text="Step 1").click()
    expect(frame.locator("button").first).to_have_text("Done 1")
    page.locator("#preview").screenshot(path=str(snap_path("02b-submission-preview-desktop")))


def test_a_researcher_submits_finds_the_entry_ranked_and_steps_through_its_replay(site, desktop):
    """Upload -> scored by the evaluator -> ranked on the dev board -> results -> replay, step by step."""
    page, url = desktop, site["url"]
    log_in(page, url)
    submit_bundle(page, url, site["bundle"])
    evaluation = Evaluation.objects.get(submission__model_name=MODEL)
    assert evaluation.status == Evaluation.Status.SCORED and evaluation.final > 0.5, scoring_story(evaluation)

    page.goto(f"{url}/?split=dev")
    row = page.locator("#leaderboard-table tbody tr", has_text=MODEL)
    expect(row.locator(".rank")).to_have_text("1")
    expect(row).to_contain_text("open weights")
    expect(page.locator("#leaderboard-table tbody tr.baseline")).to_contain_text("Empty page (lower bound)")
    expect(page.locator(".chart[data-chart-key=scores] .main-svg").first).to_be_attached(timeout=30_000)
    snap(page, "03-leaderboard-dev-desktop")

    row.locator("td.model a").click()
    expect(page.locator("h1")).to_contain_text(MODEL)
    expect(page.locator(".lb-task-table tbody tr")).to_have_count(2)
    page.locator(".lb-categories").scroll_into_view_if_needed()
    expect(page.locator(".lb-categories .main-svg").first).to_be_attached(timeout=30_000)
    snap(page, "04-results-desktop")

    page.locator(".lb-task-table a", has_text="Replay").first.click()
    expect(page.locator("h1")).to_contain_text("Task dev1")
    steps = page.locator("[data-timeline='0'] button")
    expect(steps).to_have_count(3)
    for index in range(3):
        steps.nth(index).click()
        expect(steps.nth(index)).to_have_attribute("aria-pressed", "true")
        panel = page.locator(f"#{steps.nth(index).get_attribute('data-step')}")
        expect(panel).to_be_visible()
        expect(panel.locator(".badge.pass")).to_be_visible()
        for image in panel.locator("img").all():  # reference checkpoint and the generated screenshot
            expect(image).to_be_visible()
            expect(image).to_have_js_property("complete", True)  # visible before loaded: wait for the load
            assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    visible = page.locator(".step-panel:visible")
    expect(visible).to_have_count(1)
    expect(visible).to_contain_text("Element chosen")
    expect(visible).to_contain_text("Click the button labelled 'Step 2'")
    snap(page, "05-replay-desktop")


@pytest.fixture
def populated(site):
    """The site of ``site`` with two scored dev entries (no browser scoring needed)."""
    tasks = list(Task.objects.order_by("key"))
    first = make_entry(make_user("alice"), model_name="Alpha-VL 72B", organisation="Alpha Lab", split="dev",
                       tasks=tasks, finals=[0.82, 0.64], open_weights=True, verified=True)
    second = make_entry(make_user("bob"), model_name="Beta-Vision", organisation="Beta Inc.", split="dev",
                        tasks=tasks, finals=[0.5, 0.7])
    return {**site, "pages": {
        "leaderboard": "/", "leaderboard-dev": "/?split=dev", "paper": "/?protocol=paper",
        "categories": "/leaderboard/categories/?split=dev", "results": f"/results/{first.pk}/",
        "replay": f"/results/{first.pk}/tasks/{tasks[0].key}/", "compare": f"/compare/{first.pk}/{second.pk}/",
        "compare-replay": f"/compare/{first.pk}/{second.pk}/tasks/{tasks[0].key}/",
        "about": "/about/", "api-docs": "/api/docs/",
    }}


@pytest.mark.parametrize("width", ["desktop", "phone"])
def test_every_leaderboard_page_renders_cleanly_at_desktop_and_phone_width(populated, request, width):
    """Each page loads without script errors or failed requests, never scrolls sideways, and is saved."""
    page = request.getfixturevalue(width)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("response", lambda response: errors.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    for name, path in populated["pages"].items():
        page.goto(populated["url"] + path)
        expect(page.locator("main h1").first).to_be_visible()
        assert no_horizontal_overflow(page), f"{name} scrolls sideways at {width} width"
        snap(page, f"10-{name}-{width}")
    assert not errors, errors


def test_tied_rows_highlight_each_other_and_compare_needs_two_ticks(populated, desktop):
    """Hovering a row highlights the rows its interval overlaps; ticking two rows opens the comparison."""
    page = desktop
    page.goto(populated["url"] + "/?split=dev")
    rows = page.locator("#leaderboard-table tbody tr")
    rows.filter(has_text="Alpha-VL 72B").hover()
    expect(rows.filter(has_text="Beta-Vision")).to_have_class(re.compile(r"\boverlap\b"))
    expect(rows.filter(has_text="Empty page")).not_to_have_class(re.compile(r"\boverlap\b"))
    button = page.locator("#compare-button")
    expect(button).to_be_disabled()
    rows.filter(has_text="Alpha-VL 72B").locator("input[name=e]").check()
    rows.filter(has_text="Beta-Vision").locator("input[name=e]").check()
    expect(button).to_be_enabled()
    button.click()
    expect(page.locator("h1")).to_contain_text("Alpha-VL 72B vs Beta-Vision")
    page.locator("a", has_text="Both replays").first.click()
    expect(page.locator("video[data-sync]")).to_have_count(1)  # the task recording; these entries have no replays
    expect(page.locator("[data-timeline]")).to_have_count(2)

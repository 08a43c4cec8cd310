"""The replay page's shared controls in a real browser, on a submission scored by the real evaluator
(the worker's own code path, sandbox included): one play/pause for both videos, one seek bar, a
video moved on its own taking the other along, and the step timeline seeking to each step and
showing its reference checkpoint, the generated screenshot and the verdict.

The task's recording and the replay last differently, so "the same position" is the same share of
each video's length (the page says so on its seek bar).
"""

from __future__ import annotations

import subprocess
import warnings

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from evaluator.protocols import get_protocol
from leaderboard import tasksets
from leaderboard.models import Evaluation, Task
from leaderboard.worker import scoring
from tests.e2e.conftest import scoring_story, snap
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_bundle_submission, make_evaluation
from tests.leaderboard.pipeline_support import reference_page, write_tiny_dataset

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
N_ACTIONS = 3
TOLERANCE = 0.04  # of a video's length: a seek lands on a frame boundary (10 frames a second)
FRACTIONS = """() => Array.from(document.querySelectorAll("video[data-sync]"), v => v.currentTime / v.duration)"""


@pytest.fixture
def scored_replay(live_server, settings, tmp_path):
    """One dev task with three actions, and a researcher's page for it scored by the evaluator as the worker
    runs it; returns the URL of the task's replay page."""
    for name in ("TASKS_ROOT", "ARTIFACTS_ROOT", "JOBS_ROOT", "MEDIA_ROOT"):
        setattr(settings, name, tmp_path / name.lower())
    # The real evaluator, whatever an earlier test of the session left configured: in CI this job once ran
    # the pipeline tests' stand-in evaluator (its results, step records without an index, in 0.8 s).
    settings.EVALUATOR_COMMAND, settings.EVALUATOR_EXTRA_ARGS = "", ""
    cache.clear()
    tasksets.import_dataset(write_tiny_dataset(tmp_path / "tiny", "dev", 1, n_actions=N_ACTIONS), "dev", "tiny")
    key = Task.objects.get().key
    submission = make_bundle_submission(make_user("researcher"), split="dev", model_name="Replay-VL",
                                        pages={key: reference_page(key, N_ACTIONS)})
    protocol = get_protocol("iwr-det")
    evaluation = make_evaluation(submission, protocol=protocol.full_name, protocol_name=protocol.name, tasks_total=1)
    score_like_the_worker(evaluation)
    ensure_replay_video(settings.ARTIFACTS_ROOT / evaluation.artifacts_dir / "tasks" / key)
    return f"{live_server.url}/results/{evaluation.pk}/tasks/{key}/"


def score_like_the_worker(evaluation) -> None:
    """Run the queued evaluation as a worker does, retries of an infrastructure failure included."""
    from django.conf import settings

    for _attempt in range(settings.CLAIM_MAX_ATTEMPTS):
        assert scoring.run_next(worker="e2e") == evaluation.pk
        evaluation.refresh_from_db()
        if evaluation.is_finished:
            break
    assert evaluation.status == Evaluation.Status.SCORED, scoring_story(evaluation)
    # The submitted page is the reference itself: every step passes, or the timeline below has less to show.
    result = evaluation.task_results.get()
    assert result.steps_passed == result.steps_total == N_ACTIONS, scoring_story(evaluation)


def ensure_replay_video(folder) -> None:
    """The evaluator records a replay video of each task; should this run have lost it, put a stand-in
    of the same kind in its place (so the controls are still tested) and say so."""
    if (folder / "replay.mp4").is_file():
        return
    warnings.warn(f"the evaluator recorded no replay video in {folder}; the test made a stand-in", stacklevel=2)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=s=640x480:d=3:r=10",
                    "-c:v", "libx264", "-pix_fmt", "yuv420p", str(folder / "replay.mp4")], check=True, timeout=60)


def fractions(page) -> list[float]:
    return page.evaluate(FRACTIONS)


def wait_until_both_at(page, fraction: float) -> None:
    page.wait_for_function(f"""() => {{
        const videos = Array.from(document.querySelectorAll("video[data-sync]"));
        return videos.length === 2 && videos.every(v => !v.seeking && v.duration
            && Math.abs(v.currentTime / v.duration - {fraction}) <= {TOLERANCE});
    }}""")


def test_the_shared_controls_play_pause_and_seek_both_videos_and_steps_seek_to_themselves(scored_replay, desktop):
    """Play starts both videos and pause stops both; the seek bar and a video moved on its own put both at the same
    share of their length; a step of the timeline moves the replay to that step and shows its evidence."""
    page = desktop
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(scored_replay)
    videos = page.locator("video[data-sync]")
    expect(videos).to_have_count(2)  # the task's recording and the replay of the submitted page
    page.wait_for_function("""() => Array.from(document.querySelectorAll("video[data-sync]"))
        .every(v => v.readyState >= 1 && v.duration > 0)""")
    controls, play = page.locator("[data-controls]"), page.locator("[data-play]")
    expect(controls).to_be_visible()

    play.click()
    page.wait_for_function("""() => Array.from(document.querySelectorAll("video[data-sync]"))
        .every(v => !v.paused && v.currentTime > 0)""")
    expect(play).to_contain_text("Pause")
    play.click()
    assert page.evaluate("""() => Array.from(document.querySelectorAll("video[data-sync]")).every(v => v.paused)""")
    expect(play).to_contain_text("Play")

    slider = page.locator("[data-seek]")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)  # a reader clicks 3/4 along
    wanted = int(slider.input_value()) / 1000
    assert 0.6 < wanted < 0.9, wanted
    wait_until_both_at(page, wanted)

    page.evaluate("""() => {
        const replay = document.querySelector("video[data-role=replay]");
        replay.currentTime = 0.2 * replay.duration;
    }""")
    wait_until_both_at(page, 0.2)  # the recording followed the replay
    page.wait_for_function(f"() => Math.abs(document.querySelector('[data-seek]').value / 1000 - 0.2) <= {TOLERANCE}")

    steps = page.locator("[data-timeline='0'] button")
    expect(steps).to_have_count(N_ACTIONS + 1)  # the page load, then each action
    for index in (2, 1, 3):
        step_seeks_and_shows_its_evidence(page, steps.nth(index), index)
    snap(page, "30-replay-controls-desktop")
    assert not errors, errors


def step_seeks_and_shows_its_evidence(page, button, index: int) -> None:
    button.click()
    expect(button).to_have_attribute("aria-pressed", "true")
    step_time = float(button.get_attribute("data-time"))
    page.wait_for_function(f"""() => {{
        const replay = document.querySelector("video[data-role=replay]");
        const recording = document.querySelector("video[data-role=reference]");
        return !replay.seeking && !recording.seeking && replay.paused && recording.paused
            && Math.abs(replay.currentTime - Math.min(replay.duration, {step_time} - 0.05)) <= 0.15
            && Math.abs(recording.currentTime / recording.duration - {index} / {N_ACTIONS}) <= {TOLERANCE};
    }}""")
    panel = page.locator(f"#{button.get_attribute('data-step')}")
    expect(panel).to_be_visible()
    expect(page.locator(".step-panel:visible")).to_have_count(1)
    expect(panel.locator(".badge.pass")).to_have_text("passed")  # the judge's verdict on this step
    expect(panel.locator("dt", has_text="Outcome").locator("xpath=following-sibling::dd[1]")).to_have_text("clicked")
    expect(panel).to_contain_text(f"Click the button labelled 'Step {index}'")
    expect(panel.locator("dt", has_text="Element chosen").locator("xpath=following-sibling::dd[1]")).to_contain_text(
        f"Step {index}")
    images = panel.locator("img")
    expect(images).to_have_count(2)  # the reference checkpoint and the generated screenshot
    for image, alt in zip(images.all(), ("Reference screenshot", "Submitted page"), strict=True):
        expect(image).to_have_attribute("alt", f"{alt} after step {index}")
        image.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())

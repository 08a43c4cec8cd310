"""Browser tests: Playwright drives Debian's Chromium (through evaluator.browser, with its own
sandbox) against pytest-django's live server. Screenshots go to ``test-artifacts/e2e/``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.leaderboard.base import PASSWORD

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser():
    """One Chromium per module. Playwright's sync API keeps an event loop on this thread, so
    Django's guard against ORM calls from async code is lifted while it runs (tests stay sync)."""
    from evaluator.browser import launch

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with launch(sandbox=True) as chromium:
            yield chromium


@pytest.fixture
def desktop(browser):
    context = browser.new_context(viewport=DESKTOP, device_scale_factor=1, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True,
                                  locale="en-US", timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def snap(page, name: str) -> Path:
    """Save a full-page screenshot as test-artifacts/e2e/<name>.png (charts drawn first)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for _ in range(8):  # charts draw when scrolled into view
        page.mouse.wheel(0, 700)
        page.wait_for_timeout(60)
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_load_state("networkidle")
    path = ARTIFACTS / (re.sub(r"[^a-z0-9-]+", "-", name.lower()) + ".png")
    page.screenshot(path=str(path), full_page=True)
    return path


def snap_path(name: str) -> Path:
    """Where a screenshot named ``name`` goes (test-artifacts/e2e/<name>.png), for element screenshots."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / (re.sub(r"[^a-z0-9-]+", "-", name.lower()) + ".png")


def no_horizontal_overflow(page) -> bool:
    """The page is no wider than the device (wide tables scroll inside their own box). Measured
    against the configured viewport: a mobile browser widens its layout to fit overflowing content."""
    return page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"] + 1


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """The live server is on loopback: never route it through a proxy from the environment."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


def log_in(page, url: str, username: str = "researcher") -> None:
    """Sign in through the login form as ``username`` (made with tests.leaderboard.base.make_user)."""
    page.goto(f"{url}/accounts/login/")
    page.fill("input[name=login]", username)  # allauth: a user name or an e-mail address
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    expect(page.locator(".user-nav")).to_contain_text(username)


def scoring_story(evaluation) -> str:
    """What the evaluator said about an evaluation, task by task and step by step, and the tail of its
    log: the message of an assertion on a score, so a failure names the step and its reason."""
    lines = [f"evaluation {evaluation.pk}: {evaluation.status} final={evaluation.final} "
             f"reason={evaluation.failure_reason!r}"]
    for result in evaluation.task_results.select_related("task").order_by("task__key"):
        lines.append(f"task {result.task.key}: final={result.final} ifs={result.ifs} vfs={result.vfs} "
                     f"steps {result.steps_passed}/{result.steps_total} error={result.error!r}")
        for step in result.steps:
            if isinstance(step, dict):
                lines.append(f"  step {step.get('index')}: passed={step.get('passed')} "
                             f"executed={step.get('executed')} reason={step.get('reason')!r} "
                             f"assertion={(step.get('assertion') or {}).get('reason')!r}")
    return "\n".join(lines) + "\n--- evaluator log (tail) ---\n" + (evaluation.log or "")[-4000:]

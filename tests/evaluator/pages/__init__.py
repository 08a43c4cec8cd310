"""Crafted HTML pages for the targeting, action and assertion tests, and a way to open them.

Pages are served at ``http://pages.test/<name>`` from this folder through Playwright routing
(every other request is aborted), in a fresh context that carries the listener tracker.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from evaluator.agents.targeting import LISTENER_TRACKER_JS

PAGES_DIR = Path(__file__).resolve().parent
ORIGIN = "http://pages.test"


@dataclass
class Act:
    """An action as the dataset gives it (only the fields the agents and judges read)."""

    type: str
    description: str = ""
    text: str | None = None
    key: str | None = None
    element_index: int | None = None
    logical_assertion: str | None = None


def _serve(route, request) -> None:
    path = request.url[len(ORIGIN) + 1:].split("?")[0] if request.url.startswith(ORIGIN + "/") else None
    target = PAGES_DIR / path if path else None
    if target is None or not target.is_file() or target.parent != PAGES_DIR:
        route.abort() if path is None else route.fulfill(status=404, body="not found")
        return
    route.fulfill(status=200, body=target.read_bytes(), content_type="text/html; charset=utf-8")


@contextlib.contextmanager
def open_page(browser, name: str, width: int = 1000, height: int = 700):
    """A fresh context + page showing ``name`` from this folder; closed afterwards."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1,
                                  locale="en-US", timezone_id="UTC", reduced_motion="reduce")
    try:
        context.add_init_script(LISTENER_TRACKER_JS)
        context.route("**/*", _serve)
        page = context.new_page()
        page.goto(f"{ORIGIN}/{name}")
        yield page
    finally:
        context.close()

"""The board at a 1280 px window: the whole table fits (no horizontal scrolling, the date column
visible), the column chooser hides and restores columns, and the search box narrows the board."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from leaderboard.models import Task
from tests.e2e.conftest import snap
from tests.e2e.test_leaderboard_journey import populated, site  # noqa: F401 - fixtures
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WINDOW = {"width": 1280, "height": 800}


@pytest.fixture
def window(browser):
    context = browser.new_context(viewport=WINDOW, device_scale_factor=1, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def table_fits(page) -> bool:
    return page.evaluate("""() => {
        const wrap = document.querySelector('#leaderboard-table').closest('.table-wrap');
        const date = document.querySelector('#leaderboard-table th.col-date').getBoundingClientRect();
        return wrap.scrollWidth <= wrap.clientWidth + 1 && date.right <= window.innerWidth;
    }""")


@pytest.mark.parametrize("path", ["/?split=dev", "/?protocol=paper"])
def test_the_board_fits_a_1280_window(populated, window, path):  # noqa: F811
    """Long names and organisations wrap inside their cells instead of pushing the date off the window."""
    tasks = list(Task.objects.filter(split="dev").order_by("key"))
    make_entry(make_user("carol"), split="dev", tasks=tasks, finals=[1.0, 0.995], model_size="1.2T-MoE-A52B",
               model_name="Qwen2.5-VL-72B-Instruct-AWQ-long-context-preview-2026-03-01",
               organisation="Institute for Very Long Organisation Names in Multimodal Research",
               open_weights=True, verified=True)
    window.goto(populated["url"] + path)
    assert table_fits(window)
    snap(window, "board-1280-" + path.strip("/?").replace("=", "-"))


def test_columns_can_be_hidden_and_the_board_searched(populated, window):  # noqa: F811
    page = window
    page.goto(populated["url"] + "/?split=dev")
    page.click("#lb-columns summary")
    page.uncheck("#lb-columns input[data-column=date]")
    expect(page.locator("#leaderboard-table th.col-date")).to_be_hidden()
    page.reload()
    expect(page.locator("#leaderboard-table td.col-date").first).to_be_hidden()  # kept in this browser
    expect(page.locator("#leaderboard-table td.col-final").first).to_be_visible()
    page.fill("#f-q", "beta")
    page.press("#f-q", "Enter")
    page.wait_for_url("**q=beta**")
    expect(page.locator("#leaderboard-table tbody tr")).to_have_count(1)
    expect(page.locator("#search-note")).to_be_visible()


def test_swagger_ui_renders_from_our_own_static_files(populated, window):  # noqa: F811
    page = window
    seen = []
    page.on("request", lambda request: seen.append(request.url))
    page.goto(populated["url"] + "/api/docs/swagger/")
    expect(page.locator(".swagger-ui .opblock-summary-path", has_text="/api/v1/tasks/").first).to_be_visible()
    assert seen and all(url.startswith(populated["url"]) for url in seen if url.startswith("http"))
    snap(page, "api-swagger-1280")

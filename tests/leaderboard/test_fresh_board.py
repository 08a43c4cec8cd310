"""The public board never serves an old ranking, whatever the cache does with its keys.

Cached views are keyed on the leaderboard generation. These tests run on Django's file cache
with a one-second default timeout (the embedded default's backend, where ``incr`` re-stores a
key with that timeout), let keys expire or get culled, and check that every view keyed on the
generation lists the entry scored last; and that bumps made by two processes at once all count.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import override_settings

from leaderboard import ranking
from leaderboard.cache import GENERATION_KEY, bump_generation, get_generation
from tests.leaderboard.base import make_user
from tests.leaderboard.factories import make_entry, make_task, make_task_set

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
OLD_GENERATION_KEY = "leaderboard:generation"  # where the generation used to live, in the cache
VIEWS = {  # every view keyed on the generation -> how it names a model
    "home": ("/", "{}"),
    "split board": ("/?split=test", "{}"),
    "categories": ("/leaderboard/categories/", "{}"),
    "CSV export": ("/leaderboard/export/?format=csv", "{}"),
    "JSON export": ("/leaderboard/export/?format=json", '"model_name": "{}"'),
    "chart JSON": ("/leaderboard/charts/scores.json", "{}"),
    "API": ("/api/v1/leaderboard/", '"model_name":"{}"'),
}


@pytest.fixture
def short_file_cache(tmp_path):
    """The file cache with a default timeout of one second, empty at the start."""
    config = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                          "LOCATION": str(tmp_path / "cache"), "TIMEOUT": 1}}
    with override_settings(CACHES=config):
        cache.clear()
        yield
        cache.clear()


@pytest.fixture
def tasks():
    task_set = make_task_set()
    return [make_task(task_set, split="test") for _ in range(2)]


def score(name: str, tasks, final: float):
    """A public entry scored, then what the worker does when a scoring finishes: bump."""
    make_entry(make_user(), model_name=name, tasks=tasks, finals=[final] * len(tasks),
               protocol=ranking.resolve_protocol(""))
    bump_generation()


def read_every_view(client) -> dict[str, str]:
    bodies = {}
    for view, (url, _) in VIEWS.items():
        response = client.get(url)
        assert response.status_code == 200, (view, response.status_code)
        bodies[view] = response.content.decode()
    return bodies


def assert_every_view_lists(client, *names: str) -> None:
    bodies = read_every_view(client)
    for view, (_, pattern) in VIEWS.items():
        for name in names:
            assert pattern.format(name) in bodies[view], f"{view} does not list {name}"


def test_a_board_lists_an_entry_scored_after_the_cache_timeout_passed(client, short_file_cache, tasks):
    """Cache every view, score, let the default timeout pass, score again: every view lists both."""
    read_every_view(client)  # cached under the first generation
    score("model-alpha", tasks, 0.6)
    assert_every_view_lists(client, "model-alpha")
    time.sleep(1.5)  # every key stored with the default timeout is gone now
    score("model-beta", tasks, 0.4)
    assert_every_view_lists(client, "model-alpha", "model-beta")


def test_a_board_lists_a_new_entry_after_the_cache_lost_its_keys(client, short_file_cache, tasks):
    """A cache that culls keys (the generation's old home included) cannot bring back an old board."""
    score("model-alpha", tasks, 0.6)
    assert_every_view_lists(client, "model-alpha")
    cache.delete(OLD_GENERATION_KEY)
    score("model-beta", tasks, 0.4)
    assert_every_view_lists(client, "model-alpha", "model-beta")


def test_the_generation_only_grows(short_file_cache):
    """Bumps move it on; expiry and culling of cache keys do not move it back."""
    first = get_generation()
    bumped = [bump_generation() for _ in range(3)]
    time.sleep(1.2)
    cache.clear()
    assert bumped == [first + 1, first + 2, first + 3] and get_generation() == first + 3


def test_a_board_cached_before_a_lost_copy_is_not_served_again(client, short_file_cache, tasks):
    """When the cache loses its copy of the generation, the number comes back from the database,
    where it never went back: a board cached under an earlier generation stays unread."""
    score("model-alpha", tasks, 0.6)
    read_every_view(client)
    cache.delete(GENERATION_KEY)
    score("model-beta", tasks, 0.4)
    cache.delete(GENERATION_KEY)
    assert_every_view_lists(client, "model-alpha", "model-beta")


BUMPER = """
import os, sys, time
import django
django.setup()
from leaderboard.cache import bump_generation
start = sys.argv[1]
while not os.path.exists(start):
    time.sleep(0.005)
for _ in range(int(sys.argv[2])):
    bump_generation()
"""


def test_two_processes_bumping_at_once_lose_no_bump(tmp_path):
    """Two processes (a web worker and a Celery worker, say) bump a real SQLite database at once."""
    env = {**os.environ, "IWR_DATA_DIR": str(tmp_path / "data"), "DJANGO_SETTINGS_MODULE": "tests.settings",
           "IWR_ENV": "test"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    read = [sys.executable, "-c", "import django; django.setup(); from leaderboard.cache import get_generation; "
            "print(get_generation())"]
    before = int(subprocess.run(read, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
    start, rounds = tmp_path / "go", 150
    workers = [subprocess.Popen([sys.executable, "-c", BUMPER, str(start), str(rounds)], cwd=ROOT, env=env)
               for _ in range(2)]
    time.sleep(2)  # both have started Django and wait for the signal
    start.touch()
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0]
    after = int(subprocess.run(read, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
    assert after == before + 2 * rounds

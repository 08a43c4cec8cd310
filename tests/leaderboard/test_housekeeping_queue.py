"""The reaper has a queue and a worker of its own, and its periodic messages expire."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from leaderboard.celery import app

ROOT = Path(__file__).resolve().parents[2]


def consumed_queues(script: Path) -> set[str]:
    """Every queue some ``celery worker -Q`` line of ``script`` consumes."""
    return {queue for found in re.findall(r"celery -A leaderboard worker -Q (\S+)", script.read_text())
            for queue in found.split(",")}


def test_the_reaper_is_routed_to_the_housekeeping_queue():
    import leaderboard.tasks  # noqa: F401 - registers the tasks

    assert app.amqp.router.route({}, "leaderboard.reap")["queue"].name == "housekeeping"
    assert app.tasks["leaderboard.reap"].queue == "housekeeping"
    for name in ("leaderboard.evaluate", "leaderboard.generate"):
        assert app.amqp.router.route({}, name)["queue"].name != "housekeeping"


def test_periodic_reaps_expire_after_one_interval():
    entry = settings.CELERY_BEAT_SCHEDULE["reap-evaluations"]
    assert entry["options"]["queue"] == "housekeeping"
    assert 0 < entry["options"]["expires"] <= entry["schedule"]


def test_a_worker_of_its_own_consumes_housekeeping_everywhere():
    entrypoint = (ROOT / "docker" / "web-entrypoint.sh").read_text()
    housekeeper = re.search(r"housekeeper\)\n\s*#.*\n\s*exec (.*)", entrypoint)
    assert housekeeper and "-Q housekeeping " in housekeeper[1]  # nothing long shares its worker
    assert 'command: ["housekeeper"]' in (ROOT / "docker" / "compose.yaml").read_text()
    assert "housekeeping" in consumed_queues(ROOT / "scripts" / "run.sh")
    run_sh = (ROOT / "scripts" / "run.sh").read_text()
    assert re.search(r"worker -Q housekeeping -c 1", run_sh)

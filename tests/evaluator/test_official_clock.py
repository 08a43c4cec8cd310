"""The judge's waiting is not the page's time: a slow or rate-limited endpoint never trips an action's clock."""

from __future__ import annotations

import contextlib
import time

from evaluator.official.judge import OfficialJudge
from evaluator.replay import ReplayLimits, Watchdog


class StandInBrowser:
    """What the watchdog calls on a browser: it counts the kills instead of killing."""

    def __init__(self):
        self.renderer_kills = 0

    def renderer_pids(self) -> list[int]:
        return []

    def kill_renderers(self) -> None:
        self.renderer_kills += 1

    def kill(self) -> None:
        pass


def watchdog() -> tuple[Watchdog, StandInBrowser]:
    browser = StandInBrowser()
    return Watchdog(browser, ReplayLimits(kill_grace_s=5), poll_s=0.01), browser


def test_an_action_over_its_time_trips_the_clock():
    dog, browser = watchdog()
    try:
        with dog.guard(0.2):
            time.sleep(0.5)
        assert dog.tripped == "timeout" and browser.renderer_kills == 1
    finally:
        dog.close()


def test_time_waiting_for_the_judge_is_not_counted():
    """0.5 s of judge calls inside a 0.3 s action budget, 0.1 s of page work: no timeout."""
    dog, browser = watchdog()
    try:
        with dog.guard(0.3):
            time.sleep(0.05)
            with dog.paused():
                time.sleep(0.5)
            time.sleep(0.05)
        assert dog.tripped is None and browser.renderer_kills == 0
    finally:
        dog.close()


def test_the_page_time_after_a_pause_still_counts():
    """The pause moves the deadline on by its length, no more: page work past the budget still trips."""
    dog, browser = watchdog()
    try:
        with dog.guard(0.3):
            with dog.paused():
                time.sleep(0.3)
            time.sleep(0.6)
        assert dog.tripped == "timeout"
    finally:
        dog.close()


def test_a_pause_outside_a_guard_arms_nothing():
    dog, browser = watchdog()
    try:
        with dog.paused():
            time.sleep(0.05)
        time.sleep(0.1)
        assert dog.tripped is None and dog._deadline is None
    finally:
        dog.close()


class SlowRelay:
    """A relay client whose every answer takes a while (its retries and back-off), recording the clock."""

    def __init__(self, dog: Watchdog):
        self.dog = dog
        self.deadlines_seen = []

    def chat(self, purpose, model, messages, max_tokens=512):
        self.deadlines_seen.append(self.dog._deadline)
        time.sleep(0.4)
        return '{"index": 0}', False


def test_every_judge_call_runs_with_the_clock_stopped():
    dog, _browser = watchdog()
    relay = SlowRelay(dog)
    judge = OfficialJudge(relay, "judge-1")
    judge.pause_clock = dog.paused
    try:
        with dog.guard(0.2):
            record = {}
            assert judge._ask("grounding", "judge-1", [], record) == '{"index": 0}'
        assert relay.deadlines_seen == [None]  # no deadline armed while the judge answered
        assert dog.tripped is None and record["calls"][0]["purpose"] == "grounding"
    finally:
        dog.close()


def test_a_judge_without_a_replay_clock_still_answers():
    dog, _browser = watchdog()
    try:
        judge = OfficialJudge(SlowRelay(dog), "judge-1")
        assert judge.pause_clock is contextlib.nullcontext
        assert judge._ask("grounding", "judge-1", [], {}) == '{"index": 0}'
    finally:
        dog.close()

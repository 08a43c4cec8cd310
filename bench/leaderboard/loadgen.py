"""Load generator for the leaderboard benchmark: p50/p95 latency of pages on loopback.

Four conditions per path:

- warm: the page is cached for the current generation; ``--concurrency`` clients with
  keep-alive connections send ``--warm`` requests in all;
- bumped: the leaderboard generation is bumped before every request (as when a submission of
  another split or protocol is scored): the page is rebuilt from the database, while what
  depends only on the board's entries (its rank ranges) stays cached;
- new-entry: before every request a new submission (113 task results, its per-task Finals
  packed on the evaluation) is scored onto the board and the worker's first post-scoring step
  runs (``ranking.evaluation_finished``: the generation bumped, the board and its rank ranges
  ranked again and stored), but not its warm-up of the default pages: the request reads the
  stored board and renders the page;
- empty: the whole cache is cleared before every request (a fresh cache server): the request
  reads the stored board and renders the page.

The cold conditions use one client. This process changes the database and bumps the
generation through Django, so it needs the same settings (``DATABASE_URL``,
``IWR_CACHE_URL``) as the server; the entries it adds are removed at the end. Only the
HTTP request is timed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="p50/p95 latency of leaderboard pages (warm, cold, empty cache)")
    parser.add_argument("--url", default="http://127.0.0.1:8899", help="server base URL (loopback)")
    parser.add_argument("--paths", nargs="+", default=["/", "/api/v1/leaderboard/"])
    parser.add_argument("--warm", type=int, default=400, help="warm requests per path")
    parser.add_argument("--concurrency", type=int, default=2, help="parallel clients for warm requests")
    parser.add_argument("--cold", type=int, default=40, help="requests per path for 'bumped' and 'new-entry'")
    parser.add_argument("--empty", type=int, default=10, help="requests per path with an empty cache")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser.parse_args(argv)


class Client:
    """One keep-alive HTTP connection."""

    def __init__(self, base: str):
        parts = urlsplit(base)
        self.host, self.port = parts.hostname, parts.port or 80
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def get(self, path: str) -> float:
        """Seconds from sending the request to reading the whole answer; fails on a non-200."""
        started = time.perf_counter()
        self.connection.request("GET", path, headers={"Accept": "text/html,application/json"})
        response = self.connection.getresponse()
        response.read()
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"GET {path} answered {response.status}")
        return elapsed


def warm(base: str, path: str, total: int, concurrency: int) -> list[float]:
    Client(base).get(path)  # build the cached board once
    latencies: list[float] = []
    lock = threading.Lock()
    share = [total // concurrency + (1 if n < total % concurrency else 0) for n in range(concurrency)]

    def run(count: int) -> None:
        client = Client(base)
        mine = [client.get(path) for _ in range(count)]
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(count,)) for count in share]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def cold(base: str, path: str, total: int, prepare) -> list[float]:
    client = Client(base)
    latencies = []
    for _ in range(total):
        prepare()
        latencies.append(client.get(path))
    return latencies


NEW_ENTRY_PREFIX = "bench-new-entry-"
RANKING_SECONDS: list[float] = []  # the worker's side of new-entry: ranking the boards after each scoring


def score_new_entry() -> None:
    """Store a scored submission of a new model on the test board, then bump, as the pipeline does."""
    from evaluator.protocols import get_protocol
    from leaderboard import ranking
    from leaderboard.models import Evaluation, Submission, Task, TaskResult
    from leaderboard.models.submissions import stored_task_finals

    tasks = list(Task.objects.filter(split="test").values_list("pk", flat=True))
    owner_id = Submission.objects.filter(owner__isnull=False).values_list("owner_id", flat=True).first()
    count = Submission.objects.filter(model_name__startswith=NEW_ENTRY_PREFIX).count()
    finals = np.random.default_rng(count).uniform(0, 1, len(tasks))
    mean, half = float(finals.mean()), 1.96 * float(finals.std()) / np.sqrt(len(tasks))
    submission = Submission.objects.create(owner_id=owner_id, split="test", model_name=f"{NEW_ENTRY_PREFIX}{count}")
    evaluation = Evaluation.objects.create(
        submission=submission, protocol=get_protocol("iwr-det").full_name, status=Evaluation.Status.SCORED,
        final=mean, ifs=mean, vfs=mean, low_level=mean, high_level=mean, final_ci_low=mean - half,
        final_ci_high=mean + half, n_tasks=len(tasks), finished_at=submission.created_at)
    TaskResult.objects.bulk_create(
        TaskResult(evaluation=evaluation, task_id=task, ifs=value, vfs=value, final=value, low_level=value,
                   high_level=value, steps_passed=1, steps_total=9) for task, value in zip(tasks, finals, strict=True))
    Evaluation.objects.filter(pk=evaluation.pk).update(task_finals=stored_task_finals(evaluation.pk))
    started = time.perf_counter()
    ranking.evaluation_finished(evaluation.pk)  # what the worker's ``finished`` does first (not its page warm-up)
    RANKING_SECONDS.append(time.perf_counter() - started)


def remove_new_entries() -> None:
    from leaderboard import ranking
    from leaderboard.models import Submission

    Submission.objects.filter(model_name__startswith=NEW_ENTRY_PREFIX).delete()
    ranking.boards_changed()


def figures(latencies: list[float]) -> dict:
    ms = np.array(latencies) * 1000
    return {"n": len(ms), "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1), "max_ms": round(float(ms.max()), 1)}


def main(argv=None) -> int:
    args = parse_args(argv)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.core.cache import cache

    from leaderboard.cache import bump_generation

    results = {}
    try:
        for path in args.paths:
            results[path] = {
                "warm": figures(warm(args.url, path, args.warm, args.concurrency)),
                "bumped": figures(cold(args.url, path, args.cold, bump_generation)),
                "new-entry": figures(cold(args.url, path, args.cold, score_new_entry)),
                "empty": figures(cold(args.url, path, args.empty, cache.clear)),
            }
    finally:
        remove_new_entries()
    print(f"{'path':24} {'condition':10} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for path, conditions in results.items():
        for condition, row in conditions.items():
            print(f"{path:24} {condition:10} {row['n']:>5} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['max_ms']:>8}")
    if RANKING_SECONDS:
        row = figures(RANKING_SECONDS)
        results["ranking-after-scoring"] = row
        print(f"worker side of new-entry (ranking the board's selections and storing them): n {row['n']}, "
              f"p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Per-request cost of the leaderboard page and API, measured inside one Django process:
CPU time of the request and time spent in database queries, for the same conditions as
loadgen.py. Unlike wall-clock latency these figures hardly depend on what else the machine
is running, so they say what a request costs on a quiet server.

    DATABASE_URL=... IWR_CACHE_URL=... IWR_ENV=test .venv/bin/python bench/leaderboard/cost.py
(bench/leaderboard/run.sh prints them too.)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(client, path: str, prepare, repeat: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    cpu, database, wall = [], [], []
    for _ in range(repeat):
        prepare()
        started, cpu_started = time.perf_counter(), time.process_time()
        with CaptureQueriesContext(connection) as queries:
            response = client.get(path)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        database.append(sum(float(query["time"]) for query in queries.captured_queries))
        if response.status_code != 200:
            raise SystemExit(f"GET {path} answered {response.status_code}")
    return {name: round(float(np.median(values)) * 1000, 1) for name, values in
            (("cpu_ms", cpu), ("db_ms", database), ("wall_ms", wall))}


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    import loadgen
    from django.core.cache import cache
    from django.test import Client

    from leaderboard.cache import bump_generation

    client = Client()
    print(f"{'path':24} {'condition':10} {'cpu ms':>8} {'db ms':>8} {'wall ms':>8}   (medians)")
    try:
        for path in ("/", "/api/v1/leaderboard/"):
            client.get(path)
            for name, prepare, repeat in (("warm", lambda: None, 50), ("bumped", bump_generation, 15),
                                          ("new-entry", loadgen.score_new_entry, 15), ("empty", cache.clear, 5)):
                row = measure(client, path, prepare, repeat)
                print(f"{path:24} {name:10} {row['cpu_ms']:>8} {row['db_ms']:>8} {row['wall_ms']:>8}")
    finally:
        loadgen.remove_new_entries()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

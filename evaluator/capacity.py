"""How many task workers a scoring job runs when it is not told: two per usable core, as memory allows.

A worker spends much of each action waiting, not computing: for the page's animation frames, the
settle's quiet period and the screenshot's repaint. A second worker per core runs its page in that
time. Measured on the 2-core machine with the sample benchmark's 31 reference pages (whole
process, ``score --no-video``; bench/README.md): 2 workers 46.9 s, 3 workers 41.6 s, 4 workers
38.7 s, 6 workers 40.7 s, with scores identical in every case. The floor harness (which does not
wait) took the same time at 2 and 4 workers, so the gain is the evaluator's waiting put to use.

"Usable cores" are those the process may run on (its CPU affinity) and, inside a container, its
CPU quota (cgroup v2 ``cpu.max``: ``docker run --cpus 2`` on a 64-core host means 2, not 64). A
container's memory limit (cgroup ``memory.max``) caps the count too, so a job in a 2 GB container
does not start more Chromiums than fit.

Protocol iwr-official is the exception: each of its workers runs EasyOCR and DINOv2 on the CPU (about
2 GB with torch) and spends its time computing, so it gets one worker per core.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

WORKERS_PER_CORE = 2
# One worker (its process and its Chromium: browser, GPU and renderer processes, one sample page) and
# the job's own processes. Measured peak PSS of a whole scoring job, dev split's reference pages
# (`bench/memory/run.py --skip-upload --workers 2,4`, 2026-12-06): 1,064 MB with 2 workers, 1,779 MB
# with 4, so about 357 MB per worker and 350 MB besides; a worker is counted at 450 MB for pages
# heavier than the sample's. A 2 GB container runs 3 workers.
WORKER_MEMORY_MB = 450
JOB_BASE_MEMORY_MB = 350
OFFICIAL_WORKERS_PER_CORE = 1
OFFICIAL_WORKER_MEMORY_MB = 2500  # protocols.py: iwr-official's job_memory_mb_per_worker says about 2 GB with torch
CGROUP = Path("/sys/fs/cgroup")


def usable_cpus(cgroup: Path = CGROUP) -> float:
    """Cores this process may use: its affinity, lowered to its cgroup's CPU quota when it has one."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        cores = float(os.cpu_count() or 1)
    quota = cpu_quota(cgroup)
    return max(1.0, min(cores, quota) if quota else cores)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """The cgroup v2 CPU quota in cores (``cpu.max`` "200000 100000" is 2.0), or None when unlimited or unknown."""
    try:
        words = (cgroup / "cpu.max").read_text().split()
    except OSError:
        return None
    if len(words) != 2 or words[0] == "max":
        return None
    try:
        quota, period = int(words[0]), int(words[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def memory_limit_mb(cgroup: Path = CGROUP) -> float | None:
    """The cgroup v2 memory limit in MB, or None when unlimited or unknown."""
    try:
        text = (cgroup / "memory.max").read_text().strip()
    except OSError:
        return None
    if not text.isdigit():  # "max"
        return None
    return int(text) / 2**20


def default_workers(cgroup: Path = CGROUP, official: bool = False) -> int:
    """Two workers per usable core (one for iwr-official), no more than the memory limit holds; at least one."""
    per_core, worker_mb = ((OFFICIAL_WORKERS_PER_CORE, OFFICIAL_WORKER_MEMORY_MB) if official
                           else (WORKERS_PER_CORE, WORKER_MEMORY_MB))
    wanted = max(1, math.floor(usable_cpus(cgroup) * per_core))
    memory = memory_limit_mb(cgroup)
    if memory is not None:
        wanted = min(wanted, math.floor((memory - JOB_BASE_MEMORY_MB) / worker_mb))
    return max(1, wanted)

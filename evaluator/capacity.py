"""How many task workers a scoring job runs when it is not told: two per usable core, as memory allows.

A worker spends much of each action waiting, not computing: for the page's animation frames, the
settle's quiet period and the screenshot's repaint. A second worker per core runs its page in that
time. Measured on the 2-core machine with the sample benchmark's 31 reference pages (whole
process, ``score --no-video``; bench/README.md): 2 workers 46.9 s, 3 workers 41.6 s, 4 workers
38.7 s, 6 workers 40.7 s, with scores identical in every case. The floor harness, which does not
wait, gained less (26.1 s at 2 workers, 21.8-25.9 s at 4).

"Usable cores" are those the process may run on (its CPU affinity) and, inside a container, its
CPU quota (cgroup ``cpu.max``, or ``cpu.cfs_quota_us`` on cgroup v1: ``docker run --cpus 2`` on a
64-core host means 2, not 64). A container's memory limit (cgroup ``memory.max`` or v1
``memory.limit_in_bytes``) caps the count too, so a job in a 2 GB container
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
UNLIMITED_BYTES = 2**60  # cgroup v1 writes "no limit" as the largest page multiple below 2**63


def usable_cpus(cgroup: Path = CGROUP) -> float:
    """Cores this process may use: its affinity, lowered to its cgroup's CPU quota when it has one."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        cores = float(os.cpu_count() or 1)
    quota = cpu_quota(cgroup)
    return max(1.0, min(cores, quota) if quota else cores)


def cpu_quota(cgroup: Path = CGROUP) -> float | None:
    """The cgroup CPU quota in cores, or None when unlimited or unknown.

    cgroup v2: ``cpu.max`` "200000 100000" is 2.0. cgroup v1 (hosts that mount one folder per
    controller, as Docker hosts on older systemd do): ``cpu/cpu.cfs_quota_us`` over
    ``cpu/cpu.cfs_period_us``, where a quota of -1 means unlimited.
    """
    words = _read(cgroup / "cpu.max").split()
    if not words:
        words = [_read(cgroup / "cpu" / "cpu.cfs_quota_us"), _read(cgroup / "cpu" / "cpu.cfs_period_us")]
    if len(words) != 2:
        return None
    try:
        quota, period = int(words[0]), int(words[1])
    except ValueError:  # "max", or a file that is not there
        return None
    return quota / period if quota > 0 and period > 0 else None


def memory_limit_mb(cgroup: Path = CGROUP) -> float | None:
    """The cgroup memory limit in MB, or None when unlimited or unknown (v2 ``memory.max``, else v1
    ``memory/memory.limit_in_bytes``, whose "unlimited" is a number near 2**63)."""
    text = _read(cgroup / "memory.max") or _read(cgroup / "memory" / "memory.limit_in_bytes")
    if not text.isdigit():  # "max", or no file
        return None
    limit = int(text)
    return None if limit >= UNLIMITED_BYTES else limit / 2**20


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def default_workers(cgroup: Path = CGROUP, official: bool = False) -> int:
    """Two workers per usable core (one for iwr-official), no more than the memory limit holds; at least one."""
    per_core, worker_mb = ((OFFICIAL_WORKERS_PER_CORE, OFFICIAL_WORKER_MEMORY_MB) if official
                           else (WORKERS_PER_CORE, WORKER_MEMORY_MB))
    wanted = max(1, math.floor(usable_cpus(cgroup) * per_core))
    memory = memory_limit_mb(cgroup)
    if memory is not None:
        wanted = min(wanted, math.floor((memory - JOB_BASE_MEMORY_MB) / worker_mb))
    return max(1, wanted)

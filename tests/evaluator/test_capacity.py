"""The default worker count: two per usable core, lowered to a container's CPU quota and memory limit."""

from __future__ import annotations

import os

import pytest

from evaluator import capacity
from evaluator.runner import _worker_count


def _cgroup(tmp_path, cpu: str | None = None, memory: str | None = None):
    if cpu is not None:
        (tmp_path / "cpu.max").write_text(cpu + "\n")
    if memory is not None:
        (tmp_path / "memory.max").write_text(memory + "\n")
    return tmp_path


def _affinity() -> int:
    return len(os.sched_getaffinity(0))


def test_without_a_cgroup_limit_it_is_two_workers_per_core_the_process_may_run_on(tmp_path):
    assert capacity.usable_cpus(tmp_path) == _affinity()
    assert capacity.default_workers(tmp_path) == 2 * _affinity()


def test_unlimited_cgroup_files_change_nothing(tmp_path):
    cgroup = _cgroup(tmp_path, cpu="max 100000", memory="max")
    assert capacity.cpu_quota(cgroup) is None
    assert capacity.memory_limit_mb(cgroup) is None
    assert capacity.default_workers(cgroup) == 2 * _affinity()


def test_a_container_cpu_quota_lowers_the_cores(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))  # a 64-core host
    cgroup = _cgroup(tmp_path, cpu="200000 100000")  # docker run --cpus 2
    assert capacity.cpu_quota(cgroup) == 2.0
    assert capacity.usable_cpus(cgroup) == 2.0
    assert capacity.default_workers(cgroup) == 4


def test_a_fractional_quota_still_gets_a_worker(tmp_path):
    cgroup = _cgroup(tmp_path, cpu="50000 100000")  # half a core
    assert capacity.usable_cpus(cgroup) == 1.0
    assert capacity.default_workers(cgroup) == 2


def test_a_container_memory_limit_caps_the_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    two_gb = str(2 * 2**30)
    cgroup = _cgroup(tmp_path, cpu="max 100000", memory=two_gb)
    assert capacity.memory_limit_mb(cgroup) == 2048
    expected = (2048 - capacity.JOB_BASE_MEMORY_MB) // capacity.WORKER_MEMORY_MB
    assert 1 <= expected < 16
    assert capacity.default_workers(cgroup) == expected


def test_a_memory_limit_below_one_worker_still_runs_one(tmp_path):
    cgroup = _cgroup(tmp_path, memory=str(256 * 2**20))
    assert capacity.default_workers(cgroup) == 1


@pytest.mark.parametrize("cpu", ["", "garbage", "0 100000", "100000 0", "1 2 3"])
def test_unreadable_cpu_quotas_are_ignored(tmp_path, cpu):
    cgroup = _cgroup(tmp_path, cpu=cpu, memory="not a number")
    assert capacity.cpu_quota(cgroup) is None
    assert capacity.memory_limit_mb(cgroup) is None
    assert capacity.default_workers(cgroup) == 2 * _affinity()


def test_the_official_protocol_computes_so_it_gets_one_worker_per_core_and_more_memory_each(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)))
    assert capacity.default_workers(tmp_path, official=True) == 4
    assert capacity.default_workers(tmp_path) == 8
    cgroup = _cgroup(tmp_path, memory=str(6 * 2**30))  # 6 GB: two official workers, all eight others
    assert capacity.default_workers(cgroup, official=True) == 2
    assert capacity.default_workers(cgroup) == 8


def test_the_runner_takes_the_default_and_never_more_workers_than_tasks(monkeypatch):
    asked = []
    monkeypatch.setattr(capacity, "default_workers",
                        lambda cgroup=capacity.CGROUP, official=False: asked.append(official) or (2 if official else 4))
    assert _worker_count(None, 31) == 4
    assert _worker_count(None, 31, official=True) == 2
    assert asked == [False, True]
    assert _worker_count(0, 31) == 4
    assert _worker_count(None, 3) == 3
    assert _worker_count(1, 31) == 1  # asked for: taken as given
    assert _worker_count(6, 31) == 6


def _cgroup_v1(tmp_path, quota: str, period: str = "100000", memory: str | None = None):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(quota + "\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(period + "\n")
    if memory is not None:
        (tmp_path / "memory").mkdir()
        (tmp_path / "memory" / "memory.limit_in_bytes").write_text(memory + "\n")
    return tmp_path


def test_cgroup_v1_limits_count_too(tmp_path, monkeypatch):
    """Hosts with one folder per controller (this machine kind's Docker): docker run --cpus 2 --memory 2g."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    cgroup = _cgroup_v1(tmp_path, "200000", memory=str(2 * 2**30))
    assert capacity.cpu_quota(cgroup) == 2.0
    assert capacity.memory_limit_mb(cgroup) == 2048
    assert capacity.default_workers(cgroup) == (2048 - capacity.JOB_BASE_MEMORY_MB) // capacity.WORKER_MEMORY_MB


def test_cgroup_v1_without_limits_is_unlimited(tmp_path):
    cgroup = _cgroup_v1(tmp_path, "-1", memory="9223372036854771712")  # what v1 says for "no limit"
    assert capacity.cpu_quota(cgroup) is None
    assert capacity.memory_limit_mb(cgroup) is None
    assert capacity.default_workers(cgroup) == 2 * _affinity()

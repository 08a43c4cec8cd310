"""CPU time of a whole process tree, by kind of process: the harnesses' time is CPU on a busy machine.

With two workers per core a scoring run keeps both cores busy, so its wall time follows the CPU its
processes use together, not the phases one worker waits for. This counts that CPU: every process below
the harness (Python, Chromium's renderers, its main and helper processes, Playwright's Node.js driver)
is read from ``/proc`` every ``interval`` seconds while the run lasts, and keeps the last CPU time read.
A process's last fraction of an interval before it exits escapes the readings, so the figures are a
little low, alike for every harness. (The kernel's own totals for reaped children,
``getrusage(RUSAGE_CHILDREN)``, miss most of it: Chromium's processes are killed and reaped by
whichever process adopts them, not by the harness.)
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from evaluator.browser import _cmdline, process_descendants

KINDS = ("python", "browser renderers", "browser main", "browser helpers", "playwright driver", "other")
TICK = os.sysconf("SC_CLK_TCK")


def run_measured(command: list[str], *, cwd: Path, env: dict,
                 interval: float = 0.2) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``command`` to its end; its result and its CPU seconds (``total``, and ``by_kind``)."""
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = _Sampler(proc.pid, interval)
    sampler.start()
    try:
        stdout, stderr = proc.communicate()
    finally:
        sampler.stop()
    by_kind = sampler.by_kind()
    cpu = {"total": round(sum(by_kind.values()), 2), "by_kind": by_kind}
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr), cpu


def kind_of(cmdline: str) -> str:
    """Which kind of process a command line is (see KINDS)."""
    program = cmdline.split(" ", 1)[0]
    if "chrom" in program or "headless_shell" in program:
        if "--type=renderer" in cmdline:
            return "browser renderers"
        return "browser helpers" if "--type=" in cmdline else "browser main"
    if os.path.basename(program) == "node":
        return "playwright driver"
    if "python" in os.path.basename(program):
        return "python"
    return "other"


class _Sampler(threading.Thread):
    """Reads the CPU time of every process below ``root`` (and of ``root``) until stopped."""

    def __init__(self, root: int, interval: float):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self._seen: dict[tuple[int, str], list] = {}  # (pid, start time) -> [kind, cpu seconds]
        self._stop_event = threading.Event()

    def run(self) -> None:
        while True:
            self._read()
            if self._stop_event.wait(self.interval):
                return

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def by_kind(self) -> dict[str, float]:
        totals = dict.fromkeys(KINDS, 0.0)
        for kind, seconds in self._seen.values():
            totals[kind] += seconds
        return {kind: round(seconds, 2) for kind, seconds in totals.items() if seconds > 0}

    def _read(self) -> None:
        for pid in [self.root, *process_descendants(self.root)]:
            stat = _stat(pid)
            if stat is None:
                continue
            start, seconds = stat
            entry = self._seen.get((pid, start))
            if entry is None:
                cmdline = _cmdline(pid)
                if not cmdline:
                    continue
                entry = self._seen[(pid, start)] = [kind_of(cmdline), 0.0]
            entry[1] = max(entry[1], seconds)


def _stat(pid: int) -> tuple[str, float] | None:
    """(start time, user + system CPU seconds) of a live process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19].decode(), (int(fields[11]) + int(fields[12])) / TICK

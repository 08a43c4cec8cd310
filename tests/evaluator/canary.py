"""Canary secrets and files, and an inspector that looks for them in every process of a running job.

Shared by the bubblewrap test (tests/evaluator/test_canary.py) and the container test
(tests/docker/test_evaluator_container.py): a job is scored with canary values in the caller's
environment and canary files where the site keeps its secrets; while it runs, every process of
the job is read from outside (``/proc/PID/environ``, and the canary files through
``/proc/PID/root``). Nothing may be found, and the inspector must have seen both sandboxed
processes and Chromium processes, so it cannot pass by seeing nothing.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

CANARY = "canary-7f3b9c1e"
# As a deployment holds them: the names the site reads, each value carrying the canary.
SECRET_ENV = {
    "DJANGO_SECRET_KEY": f"{CANARY}-django-key",
    "IWR_ENCRYPTION_KEY": f"{CANARY}-fernet",
    "DATABASE_URL": f"postgres://iwr:{CANARY}@db:5432/iwr",
    "CELERY_BROKER_URL": f"redis://:{CANARY}@broker:6379/0",
    "EMAIL_HOST_PASSWORD": f"{CANARY}-smtp",
    "AWS_SECRET_ACCESS_KEY": f"{CANARY}-aws",
    "OPENAI_API_KEY": f"sk-{CANARY}",
    # Allowed names with a secret value are dropped too.
    "TESSDATA_PREFIX": f"https://user:{CANARY}@example.com/",
}


def plant_files(checkout: Path, home: Path) -> list[Path]:
    """Canary files in a checkout's var/ (secret key, database, media, another job) and in a home folder."""
    files = [checkout / "var" / "secret_key", checkout / "var" / "db.sqlite3", checkout / "var" / "media" / "x.zip",
             checkout / "var" / "jobs" / "other" / "data.jsonl", home / ".canary", home / ".aws" / "credentials"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{CANARY} {path.name}\n")
    return files


@dataclass
class Inspection:
    """What was seen in the processes of a job."""

    leaks: list[str] = field(default_factory=list)
    environs: int = 0            # processes whose environment was read
    sandboxed: set[int] = field(default_factory=set)  # in a mount namespace other than ours
    browsers: set[int] = field(default_factory=set)   # Chromium processes
    roots_checked: int = 0
    browser_userns: set[str] = field(default_factory=set)  # user namespaces Chromium's processes are in
    seccomp_browsers: set[int] = field(default_factory=set)  # Chromium processes under a seccomp filter

    def summary(self) -> str:
        return (f"{self.environs} environments read, {len(self.sandboxed)} sandboxed and {len(self.browsers)} "
                f"browser processes ({len(self.browser_userns)} user namespaces, {len(self.seccomp_browsers)} "
                f"filtered), {self.roots_checked} roots checked; leaks: {self.leaks[:10]}")

    def chromium_sandboxed(self) -> bool:
        """Chromium's own sandbox is on: some of its processes in user namespaces of their own, seccomp-filtered."""
        return len(self.browser_userns) >= 2 and bool(self.seccomp_browsers)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def inspect_process(pid: int, seen: Inspection, hidden: list[Path], done: set[int]) -> None:
    """Look for the canary in one process's environment and for ``hidden`` paths in its root."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        mnt = os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return  # gone already
    name = cmdline[:80]
    seen.environs += 1
    if CANARY.encode() in environ:
        seen.leaks.append(f"environment of {pid} ({name})")
    if mnt != os.readlink("/proc/self/ns/mnt"):
        seen.sandboxed.add(pid)
    if "chromium" in cmdline or "chrome" in cmdline:
        seen.browsers.add(pid)
        _note_browser_sandbox(pid, seen)
    if pid in done:
        return
    done.add(pid)
    if pid in seen.sandboxed:
        _check_root(pid, name, seen, hidden)


def _note_browser_sandbox(pid: int, seen: Inspection) -> None:
    try:
        seen.browser_userns.add(os.readlink(f"/proc/{pid}/ns/user"))
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return
    if "Seccomp:\t2" in status:
        seen.seccomp_browsers.add(pid)


def _check_root(pid: int, name: str, seen: Inspection, hidden: list[Path]) -> None:
    root = f"/proc/{pid}/root"
    try:
        os.listdir(root)
    except OSError:
        return  # a root that cannot even be listed (Chromium's chrooted renderers) hides everything
    seen.roots_checked += 1
    for path in hidden:
        target = root + str(path)
        try:
            with open(target, "rb") as handle:
                if CANARY.encode() in handle.read(4096):
                    seen.leaks.append(f"{path} readable in {pid} ({name})")
                    continue
        except OSError:
            pass
        if os.path.lexists(target):
            seen.leaks.append(f"{path} exists in {pid} ({name})")


def watch(proc: subprocess.Popen, hidden: list[Path], timeout: float, root_pid=None) -> Inspection:
    """Inspect the job's processes until ``proc`` ends: the descendants of ``proc``, or with ``root_pid``
    (a function returning the job's first process, or None while it has not started) that process and
    its descendants (a container's processes are not the engine client's children)."""
    seen, done = Inspection(), set()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        first = root_pid() if root_pid else proc.pid
        pids = ([first] if root_pid else []) + descendants(first) if first else []
        for pid in pids:
            inspect_process(pid, seen, hidden, done)
        time.sleep(0.05)
    return seen

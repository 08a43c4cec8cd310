"""The hashed locks match the pinned requirements files they are compiled from (scripts/lock.sh)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {
    "requirements-evaluator.lock": ["requirements-evaluator.txt"],
    "requirements.lock": ["requirements.txt"],
    "requirements-dev.lock": ["requirements.txt", "requirements-dev.txt"],
    "requirements-official.lock": ["requirements-official.txt"],
}
PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+)")


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.split("[")[0]).lower()


def pins(path: Path) -> dict[str, str]:
    """name -> version of every pin in a requirements file, following -r includes."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("-r "):
            found |= pins(path.parent / line[3:].strip())
        elif match := PIN.match(line):
            found[normal(match[1])] = match[2]
    return found


def locked(path: Path) -> dict[str, list[str]]:
    """name==version -> its hashes, from a lock file."""
    entries, current = {}, None
    for line in path.read_text().splitlines():
        if match := PIN.match(line):
            version = match[2].rstrip(" \\")
            current = f"{normal(match[1])}=={version}"
            entries[current] = []
        elif current and "--hash=sha256:" in line:
            entries[current].append(line.split("--hash=sha256:")[1].split()[0])
        elif not line.startswith(" "):
            current = None
    return entries


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_every_pin_is_locked_at_its_version_with_hashes(lock):
    entries = locked(ROOT / lock)
    wanted = {}
    for source in LOCKS[lock]:
        wanted |= pins(ROOT / source)
    missing = [f"{name}=={version}" for name, version in wanted.items() if f"{name}=={version}" not in entries]
    assert not missing, f"{lock} is out of date (run scripts/lock.sh): {missing}"
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for hashes in entries.values() for digest in hashes)
    assert all(entries.values()), [name for name, hashes in entries.items() if not hashes]


def test_the_set_up_and_the_images_install_the_locks_with_hashes_required():
    assert "--require-hashes -r requirements-dev.lock" in (ROOT / "scripts/setup.sh").read_text()
    for image, lock in (("evaluator", "requirements-evaluator.lock"), ("web", "requirements.lock")):
        dockerfile = (ROOT / f"docker/Dockerfile.{image}").read_text()
        assert f"--require-hashes -r /opt/iwr/build/{lock}" in dockerfile

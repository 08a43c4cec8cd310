"""A private Docker engine and the project's images, built offline, for the container tests.

The engine is started the documented way (docker/engine.sh); images are built by
docker/build-images.sh from a debootstrapped base. Both are reused across runs when
present, so only the first run on a machine pays for the builds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _have_engine_tools() -> str | None:
    for tool in ("dockerd", "docker", "debootstrap"):
        if not shutil.which(tool):
            return f"{tool} is not installed (scripts/setup.sh installs it)"
    if os.geteuid() != 0:
        return "starting a private Docker engine needs root"
    return None


@pytest.fixture(scope="session")
def docker_engine():
    problem = _have_engine_tools()
    if problem:
        pytest.skip(problem)
    result = subprocess.run(["bash", "docker/engine.sh", "start"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    os.environ["DOCKER_HOST"] = result.stdout.strip()
    return result.stdout.strip()


def build_image(which: str) -> None:
    result = subprocess.run(["bash", "docker/build-images.sh", which], cwd=ROOT, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="session")
def evaluator_image(docker_engine) -> str:
    build_image("evaluator")
    return "iwr/evaluator:latest"


@pytest.fixture(scope="session")
def web_image(docker_engine) -> str:
    build_image("web")
    return "iwr/web:latest"

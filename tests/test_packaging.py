"""The evaluator and the client install with pip: metadata, console scripts, a wheel that runs."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import evaluator

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_console_scripts_name_real_entry_points():
    scripts = PROJECT["project"]["scripts"]
    assert set(scripts) == {"iwr-eval", "iwr-submit"}
    for target in scripts.values():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_version_and_dependencies_come_from_the_evaluator_and_its_requirements():
    dynamic = PROJECT["tool"]["setuptools"]["dynamic"]
    assert dynamic["version"] == {"attr": "evaluator.__version__"}
    assert dynamic["dependencies"] == {"file": ["requirements-evaluator.txt"]}
    assert not any(line.startswith("-") for line in (ROOT / "requirements-evaluator.txt").read_text().splitlines())
    cff = (ROOT / "CITATION.cff").read_text()
    assert re.search(rf"^version: {re.escape(evaluator.__version__)}$", cff, re.M)
    assert f"Evaluator ({evaluator.__version__}" in (ROOT / "CHANGELOG.md").read_text()


@pytest.mark.slow
def test_a_wheel_builds_installs_and_runs_both_commands(tmp_path):
    """pip builds a wheel (fetching its build backend), a fresh venv installs it, both scripts run."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("iwr_bench-*.whl"))
    assert wheel.name.startswith(f"iwr_bench-{evaluator.__version__}-")
    names = zipfile.ZipFile(wheel).namelist()
    assert "evaluator/submit_client.py" in names and "evaluator/authoring/visible_text.js" in names
    assert not any(name.startswith(("leaderboard/", "tests/")) for name in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run([str(venv / "bin/pip"), "install", "-q", "--no-deps", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    expected_lines = {"iwr-eval": f"iwr-bench evaluator {evaluator.__version__}", "iwr-submit": "iwr-submit "}
    for script, expected in expected_lines.items():
        done = subprocess.run([str(venv / "bin" / script), "--version"], capture_output=True, text=True,
                              cwd=tmp_path, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith(expected), done.stderr


def test_an_installed_evaluator_links_debians_ffmpeg_for_replay_videos(tmp_path, monkeypatch):
    """Outside a checkout (no .cache/playwright) the evaluator makes Playwright's ffmpeg folder itself."""
    import shutil

    from evaluator import video_tool

    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(video_tool, "REPO_FOLDER", tmp_path / "no-checkout")
    folder = video_tool.browsers_path()
    assert folder == tmp_path / "cache" / "iwr-bench" / "playwright"
    (link,) = folder.glob("ffmpeg-*/ffmpeg-linux")
    assert link.resolve() == Path(shutil.which("ffmpeg")).resolve()
    assert (link.parent / "INSTALLATION_COMPLETE").is_file()
    assert video_tool.browsers_path() == folder  # a second call keeps the link

"""The README's two commands are the ones the project really uses."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_readme_gives_exactly_two_commands():
    """The quick start holds exactly two one-line commands: run, then test."""
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)


def test_ci_runs_the_readme_test_command():
    """.ci/run's last command is the README's test command, verbatim."""
    test_command = quick_start_commands()[1]
    ci_lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()]
    commands = [line for line in ci_lines if line and not line.startswith(("#", "set ", "cd "))]
    assert commands[-1] == test_command


def test_readme_commands_exist_and_are_executable():
    """Both commands name scripts that exist in the checkout and can be executed."""
    for command in quick_start_commands():
        script = ROOT / command.split()[0]
        assert script.is_file() and script.stat().st_mode & 0o111

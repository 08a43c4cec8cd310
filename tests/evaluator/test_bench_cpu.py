"""The speed benchmark's CPU accounting (bench/evaluator/cpu.py): a process tree's CPU, by kind of process."""

from __future__ import annotations

import sys
from pathlib import Path

from bench.evaluator.cpu import kind_of, run_measured

REPO = Path(__file__).resolve().parents[2]

# A parent that starts a child; both burn CPU for about the given seconds of their own.
BURN = """
import subprocess, sys, time
def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
child = subprocess.Popen([sys.executable, "-c", "import time\\nend = time.process_time() + 0.6\\n"
                          "while time.process_time() < end: pass"])
burn(0.4)
child.wait()
"""


def test_a_process_tree_cpu_is_counted_whole_and_by_kind():
    proc, cpu = run_measured([sys.executable, "-c", BURN], cwd=REPO, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert set(cpu["by_kind"]) == {"python"}
    # the parent's 0.4 s and the child's 0.6 s, less what each did in its last reading interval at most
    assert 1.0 - 2 * 0.2 - 0.05 <= cpu["total"] <= 1.0 + 0.2
    assert cpu["total"] == cpu["by_kind"]["python"]


def test_a_failing_command_keeps_its_exit_code_and_output():
    proc, cpu = run_measured([sys.executable, "-c", "import sys; print('no'); sys.exit(3)"], cwd=REPO, env={})
    assert (proc.returncode, proc.stdout.strip()) == (3, "no")
    assert cpu["total"] >= 0.0


def test_processes_are_sorted_into_kinds():
    assert kind_of("/usr/lib/chromium/chromium --type=renderer --lang=en") == "browser renderers"
    assert kind_of("/usr/lib/chromium/chromium --type=gpu-process") == "browser helpers"
    assert kind_of("/usr/lib/chromium/chromium --headless --remote-debugging-pipe") == "browser main"
    assert kind_of("/usr/lib/chromium/headless_shell --type=utility") == "browser helpers"
    assert kind_of("/work/.venv/lib/python3.11/site-packages/playwright/driver/node cli.js run-driver") \
        == "playwright driver"
    assert kind_of("/work/main/.venv/bin/python -m evaluator score") == "python"
    assert kind_of("bwrap --unshare-net") == "other"

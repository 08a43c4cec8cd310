"""The evaluator package never imports Django: it runs in its own container without it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "evaluator"

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import evaluator
names = ["evaluator"] + [m.name for m in pkgutil.walk_packages(evaluator.__path__, "evaluator.")
                         if not m.name.endswith("__main__")]
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = repr(exc)
print(json.dumps({"modules": names, "failed": failed,
                  "django": sorted(m for m in sys.modules if m == "django" or m.startswith("django."))}))
"""


def test_importing_every_evaluator_module_loads_no_django():
    """Each evaluator module imports cleanly in a fresh interpreter and none pulls in Django."""
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert "evaluator.browser" in report["modules"] and "evaluator.runner" in report["modules"]
    assert report["failed"] == {}
    assert report["django"] == []


def test_no_evaluator_source_file_mentions_a_django_import():
    """An AST scan finds no `import django...` or `from django... import` anywhere under evaluator/."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name == "django" or name.startswith("django.") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []

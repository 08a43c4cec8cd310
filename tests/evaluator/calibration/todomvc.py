"""Independent TodoMVC implementations from the npm package ``todomvc@0.1.1``.

The package holds the same app written with ~70 frameworks under ``examples/<name>/``.
Each one is packaged as a submission the way a generated page with sibling files is: the
example's folder copied to ``<task key>/`` with its ``index.html`` at the root. Only
examples that load every script and stylesheet from their own folder can work offline.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.evaluator.calibration.taskset import REPO

EXAMPLES = REPO / ".cache" / "npm" / "todomvc" / "examples"

# The framework each sample TodoMVC task was recorded from (evaluator/sample/manifest.json):
# an "independent" implementation must use another one.
REFERENCE_FRAMEWORK = {"todomvc-vanillajs-list": "vanillajs", "todomvc-backbone-bulk": "backbone"}

# Implementations scored against each TodoMVC task: frameworks unrelated to the reference's
# (no Backbone-based example for the Backbone task), each loading its code from its own folder.
# Measured on all 55 offline examples: 33 other frameworks reach IFS >= 0.8 on the vanillajs
# task and 28 on the Backbone task. Two of those chosen once failed for the judge, not the page:
# angularjs_require loads its modules with require.js after the page's load event (the fake clock
# must keep running while it does), and React's "Mark all as complete" checkbox has no label (found
# by its position "to the left of the input").
IMPLEMENTATIONS = {
    "todomvc-vanillajs-list": ("react", "vue", "angularjs", "angularjs_require"),
    "todomvc-backbone-bulk": ("react", "angularjs", "knockoutjs", "canjs"),
}
# Correct implementations the judge fails today (expectations.KNOWN_GAPS says why). They are
# scored too, so a fix shows up, but they do not count as equivalents in the ordering.
MISJUDGED: dict[str, tuple[str, ...]] = {key: () for key in IMPLEMENTATIONS}

_REFERENCE = re.compile(r"<(?:script|link)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)


def offline_problems(example: Path) -> list[str]:
    """Why an example cannot run offline from its own folder (an empty list when it can)."""
    index = example / "index.html"
    if not index.is_file():
        return ["no index.html"]
    problems = []
    for ref in _REFERENCE.findall(index.read_text(encoding="utf-8", errors="replace")):
        path = ref.split("?", 1)[0].split("#", 1)[0]
        if re.match(r"^(?:[a-z]+:)?//", ref, re.IGNORECASE):
            problems.append(f"external: {ref}")
        elif path.startswith("/") or ".." in Path(path).parts:
            problems.append(f"outside its folder: {ref}")
        elif not (example / path).is_file():
            problems.append(f"missing: {ref}")
    return problems


def offline_examples(examples: Path = EXAMPLES) -> list[str]:
    """Names of the examples whose index.html references only files inside their own folder."""
    return sorted(d.name for d in examples.iterdir() if d.is_dir() and not offline_problems(d))


def package(example: str, task_key: str, bundle: Path, examples: Path = EXAMPLES) -> Path:
    """Copy ``examples/<example>`` to ``bundle/<task_key>/`` (index.html at its root); returns the folder."""
    source = examples / example
    problems = offline_problems(source)
    if problems:
        raise ValueError(f"todomvc example {example} cannot run offline: {'; '.join(problems[:3])}")
    target = Path(bundle) / task_key
    shutil.copytree(source, target, symlinks=False)
    return target

"""Build the calibration bundles beside a task set and score them with the evaluator.

Two kinds of runs, each ONE evaluator process for all tasks of both splits:

- the baselines (``evaluator baselines``: reference, snapshot, empty), one run per kind on
  the merged task set, exactly as a user scores a bundle;
- the calibration variants (unstyled, broken, text list, TodoMVC implementations), all in
  one run on a task set that holds each task once per variant (``<task>@<variant>``).

:class:`Workspace` builds and scores each of them at most once per test session, so the
self-test and the calibration test share the baseline runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from tests.evaluator.calibration import runs, todomvc, variants
from tests.evaluator.calibration.taskset import (
    benchmark_splits,
    merge_task_sets,
    split_key,
    variant_key,
    variant_task_set,
)

BASELINES = ("reference", "snapshot", "empty")
DERIVED = ("unstyled", "broken", "text_list")
IMPLEMENTATION_PREFIX = "todomvc-"  # variant name of an implementation: todomvc-<example>


@dataclass
class VariantSet:
    """The variant task set, its bundle and what was built for each task."""

    data: Path
    bundle: Path
    breaks: dict[str, variants.Break] = field(default_factory=dict)  # task key -> the broken action
    implementations: dict[str, tuple[str, ...]] = field(default_factory=dict)  # task key -> equivalent examples


def implementation_variant(example: str) -> str:
    return IMPLEMENTATION_PREFIX + example


def build_variants(dataset, sources: list[Path], root: Path) -> VariantSet:
    """Write every derived variant and TodoMVC implementation of every task of ``dataset`` under ``root``."""
    bundle = root / "bundle"
    wanted: dict[str, list[str]] = {}
    result = VariantSet(root / "set" / "data.jsonl", bundle)
    for task in dataset.tasks:
        page = variants.reference_html(task)
        actions = variants.script_actions(task.key)
        plan = variants.plan_break(actions, variants.break_step(actions))
        result.breaks[task.key] = plan
        pages = {"unstyled": variants.unstyled(page), "broken": variants.broken(page, plan, task.height),
                 "text_list": variants.text_list(task)}
        for name, html in pages.items():
            _write_page(bundle / variant_key(task.key, name), html)
        examples = todomvc.IMPLEMENTATIONS.get(task.key, ())
        scored = (*examples, *todomvc.MISJUDGED.get(task.key, ()))
        for example in scored:
            todomvc.package(example, variant_key(task.key, implementation_variant(example)), bundle)
        result.implementations[task.key] = tuple(examples)
        wanted[task.key] = [*pages, *(implementation_variant(e) for e in scored)]
    variant_task_set(sources, root / "set", wanted)
    return result


def _write_page(folder: Path, html: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(html, encoding="utf-8")


class Workspace:
    """Everything the self-test and the calibration test score, built lazily, each at most once."""

    def __init__(self, root: Path, sources: list[Path] | None = None, keys: list[str] | None = None,
                 protocol: str | None = None):
        self.root = Path(root)
        self.protocol = protocol  # the scoring protocol (None: the evaluator's default)
        self.sources = sources or benchmark_splits()
        self.keys = keys  # the tasks to score (None: every task of the benchmark)
        self.ocr_cache = self.root / "ocr-cache"
        self._baseline_results: dict[str, dict] = {}

    @cached_property
    def data(self) -> Path:
        """Every task of every split (or the chosen ones) in one task set."""
        return merge_task_sets(self.sources, self.root / "all", self.keys)

    @cached_property
    def dataset(self):
        from evaluator.dataset import load_dataset

        return load_dataset(self.data)

    @cached_property
    def baseline_bundles(self) -> Path:
        return runs.build_baselines(self.data, self.root / "baselines", ",".join(BASELINES))

    def baseline(self, kind: str) -> dict:
        """results.json of the ``kind`` baseline bundle scored on every task (one run)."""
        if kind not in self._baseline_results:
            out = self.root / "scored" / kind
            shutil.rmtree(out, ignore_errors=True)
            self._baseline_results[kind] = runs.score(self.data, self.baseline_bundles / kind, out, self.ocr_cache,
                                                        protocol=self.protocol)
        return self._baseline_results[kind]

    @cached_property
    def variant_set(self) -> VariantSet:
        return build_variants(self.dataset, self.sources, self.root / "variants")

    @cached_property
    def variant_results(self) -> dict:
        """results.json of every calibration variant of every task (one run)."""
        out = self.root / "scored" / "variants"
        return runs.score(self.variant_set.data, self.variant_set.bundle, out, self.ocr_cache,
                          protocol=self.protocol)

    def scores(self) -> dict[str, dict[str, dict]]:
        """task key -> variant -> that page's task result, baselines and variants together."""
        table: dict[str, dict[str, dict]] = {task.key: {} for task in self.dataset.tasks}
        for kind in BASELINES:
            for key, result in self.baseline(kind)["tasks"].items():
                table[key][kind] = result
        for key, result in self.variant_results["tasks"].items():
            task_key, variant = split_key(key)
            table[task_key][variant] = result
        return table


_SHARED: dict[str, Workspace] = {}


def shared_workspace(tmp_path_factory) -> Workspace:
    """The session's one workspace (test modules share its runs), holding the tasks the suite scores."""
    from tests.evaluator.calibration.expectations import calibration_task_keys

    if "ws" not in _SHARED:
        _SHARED["ws"] = Workspace(tmp_path_factory.mktemp("calibration"), keys=calibration_task_keys())
    return _SHARED["ws"]

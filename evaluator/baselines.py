"""Baseline bundles every leaderboard split shows beside real entries, and the judge's self-test.

- ``reference``: each task's own reference page (``data/<id>/reference/site/``, written by
  authoring). A sound judge scores it at or near the top: the upper bound.
- ``snapshot``: the reference page's initial DOM with every script and inline handler
  removed. It looks right and does nothing: a high VFS with a low IFS.
- ``empty``: an empty page. The lower bound.

Tasks without reference data (for example imported official tasks) get no reference or
snapshot page; their absence is reported, and the evaluator scores them 0 as "missing".
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from evaluator.bundle import ASSET_PLACEHOLDER, ASSETS_URL_PREFIX

KINDS = {
    "reference": "Reference pages (upper bound)",
    "snapshot": "Scripts-stripped snapshot (looks right, does nothing)",
    "empty": "Empty page (lower bound)",
}

EMPTY_PAGE = (
    "<!doctype html>\n"
    '<html lang="en"><head><meta charset="utf-8"><title></title></head><body></body></html>\n'
)

# Serialise the settled DOM without anything that could run: scripts, inline handlers,
# javascript: URLs. Form state typed by scripts is kept as attributes so it still shows.
SNAPSHOT_SCRIPT = """() => {
  const root = document.documentElement.cloneNode(true);
  root.querySelectorAll('script, noscript, iframe, object, embed').forEach(e => e.remove());
  for (const el of root.querySelectorAll('*')) {
    for (const attr of Array.from(el.attributes)) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on')) el.removeAttribute(attr.name);
      else if (/^\\s*javascript:/i.test(attr.value)) el.setAttribute(attr.name, '#');
    }
  }
  const live = document.querySelectorAll('input, textarea');
  const copies = root.querySelectorAll('input, textarea');
  live.forEach((el, i) => { if (copies[i] && el.value) copies[i].setAttribute('value', el.value); });
  return '<!doctype html>\\n' + root.outerHTML;
}"""


def reference_page(task) -> Path | None:
    index = task.root / "reference" / "site" / "index.html"
    return index if index.is_file() else None


def build_baselines(data_path: Path, out_dir: Path, kinds: Iterable[str] = tuple(KINDS)) -> dict[str, dict]:
    """Write ``out_dir/<kind>/<task key>/index.html`` for each kind; return what was written and skipped."""
    from evaluator.dataset import load_dataset

    dataset = load_dataset(Path(data_path))
    report = {}
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown baseline {kind!r}; known: {', '.join(KINDS)}")
        target = Path(out_dir) / kind
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        report[kind] = _BUILDERS[kind](dataset.tasks, target)
    return report


def _write(target: Path, key: str, html: str) -> None:
    folder = target / key
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(html, encoding="utf-8")


def _empty(tasks, target: Path) -> dict:
    for task in tasks:
        _write(target, task.key, EMPTY_PAGE)
    return {"written": [t.key for t in tasks], "skipped": []}


def _reference(tasks, target: Path) -> dict:
    written, skipped = [], []
    for task in tasks:
        index = reference_page(task)
        if index is None:
            skipped.append(task.key)
            continue
        shutil.copytree(index.parent, target / task.key)
        written.append(task.key)
    return {"written": written, "skipped": skipped}


def _snapshot(tasks, target: Path) -> dict:
    from evaluator.browser import launch
    from evaluator.page_session import SiteMap, page_session

    written, skipped = [], []
    with launch() as browser:
        for task in tasks:
            index = reference_page(task)
            if index is None:
                skipped.append(task.key)
                continue
            site = SiteMap.for_page(index, task.assets_dir)
            with page_session(browser, site, task.width, task.height) as session:
                html = session.page.evaluate(SNAPSHOT_SCRIPT)
            _write(target, task.key, to_submission_urls(html))
            written.append(task.key)
    return {"written": written, "skipped": skipped}


def to_submission_urls(html: str) -> str:
    """Served asset URLs back to the placeholder a submission uses."""
    prefix = ASSETS_URL_PREFIX.rstrip("/") + "/"
    for origin in ("http://iwr.test", ""):
        html = html.replace(origin + prefix, ASSET_PLACEHOLDER + "/")
    return html


_BUILDERS = {"reference": _reference, "snapshot": _snapshot, "empty": _empty}

"""Authoring: record a benchmark task from a real page (see docs/tasks.md).

``author_task(site, script, out_dir)`` builds the reference page, records the scripted
interaction in Chromium exactly as the evaluator renders pages, and writes the task in
the IWR-Bench layout plus the private reference data.
"""

from evaluator.authoring.script import AuthoringError, Script, load_script, parse_script
from evaluator.authoring.task import AuthoredTask, author_task, upsert_record

__all__ = ["AuthoredTask", "AuthoringError", "Script", "author_task", "load_script", "parse_script", "upsert_record"]

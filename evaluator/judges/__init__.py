"""Judging an action's effect without a language model.

- ``state.capture_state(page) -> PageState`` before and after every action;
- ``assertion.judge(action, before, after, reference, params) -> Verdict``
  (key phrases and their polarity in ``phrases``);
- ``reference.reference_delta(task, k, cache) -> RefDelta`` from the task's reference data
  (also importable from ``assertion``).
"""

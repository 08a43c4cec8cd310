"""Calibration set of the deterministic judge (judge-design.md, "Knowing it works").

For each task of the sample benchmark it builds pages whose right order is known in
advance: the original, independent TodoMVC implementations, a scripts-stripped snapshot,
an unstyled copy, a copy broken at a known step, an empty page and a page that merely
lists every text the task shows. The tests score them with the real evaluator command
and check that the judge orders them as a careful person would.
"""

"""The calibration figures from scored results and step-level truth (pure functions, no browser).

- ``relations``: what a sound judge must satisfy on one task: original >= equivalents > broken >
  snapshot > empty on Final (every pair of that chain; a task that needs no script counts its
  snapshot as an equivalent), the text list gains no functionality (IFS no higher than the empty
  page's plus the leading unchecked scrolls it may pass), and the unstyled copy loses the look
  (VFS below the snapshot's, Final below the original's and above the empty page's).
- ``step_verdicts``: the judge's per-step verdicts against the truth: the steps before the
  truth's first divergence must pass (positives), the divergent step must fail (a negative);
  later steps are not judged (the task ends at its first failure).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EPS = 1e-6
STOPPING = ("broken", "snapshot", "text_list")  # pages that must stop exactly where the truth says


def relations(row: dict[str, dict], equivalents: list[str], needs_scripts: bool, scroll_allowance: float) -> list:
    """[(relation, held)] for one task; ``row`` maps variant name -> that page's task result."""
    final = {variant: result["final"] for variant, result in row.items()}
    equivalents = [v for v in equivalents if v in row]
    chain = ["broken", "snapshot", "empty"]
    if not needs_scripts:
        equivalents, chain = [*equivalents, "snapshot"], ["broken", "empty"]
    out = [(f"reference >= {v}", final["reference"] >= final[v] - EPS) for v in equivalents]
    upper = ["reference", *equivalents]
    for i, high in enumerate([*upper, *chain]):
        for low in chain[max(0, i - len(upper) + 1):]:
            if high != low:
                out.append((f"{high} > {low}", final[high] > final[low]))
    text_list, empty = row["text_list"], row["empty"]
    out.append(("text_list gains nothing", text_list["ifs"] <= empty["ifs"] + scroll_allowance + EPS))
    unstyled = row["unstyled"]
    out.append(("unstyled VFS < snapshot VFS", unstyled["vfs"] < row["snapshot"]["vfs"]))
    out.append(("unstyled < reference", unstyled["final"] < final["reference"]))
    out.append(("unstyled > empty", unstyled["final"] > final["empty"]))
    return out


@dataclass
class Verdicts:
    """Counts of the judge's step verdicts against the truth ("passed" is the positive class)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    misses: list = field(default_factory=list)  # (task, variant, step, truth, judge)

    def add(self, other: Verdicts) -> None:
        self.tp, self.fp = self.tp + other.tp, self.fp + other.fp
        self.fn, self.tn = self.fn + other.fn, self.tn + other.tn
        self.misses.extend(other.misses)

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def step_verdicts(task: str, variant: str, result: dict, divergence: int | None, n_steps: int) -> Verdicts:
    """The judge's verdicts on steps 1..divergence (all steps when the page never diverges)."""
    passed = {step["index"]: bool(step.get("passed")) for step in result.get("steps", []) if step["index"] > 0}
    last = n_steps if divergence is None else divergence
    counts = Verdicts()
    for k in range(1, last + 1):
        truth, judge = k != divergence, passed.get(k, False)
        if truth and judge:
            counts.tp += 1
        elif truth:
            counts.fn += 1
            counts.misses.append((task, variant, k, "pass", "fail"))
        elif judge:
            counts.fp += 1
            counts.misses.append((task, variant, k, "fail", "pass"))
        else:
            counts.tn += 1
    return counts


def stops_where_truth_says(result: dict, divergence: int | None, n_steps: int) -> bool:
    """The judge's run ends exactly at the truth's first divergence (or passes all when there is none)."""
    expected = n_steps if divergence is None else divergence - 1
    return result["steps_passed"] == expected

"""What a leaderboard is made of: its entries, the flagged rows, the board itself, and the one
way the site prints a score (:func:`percent`). Plain data: no query runs here."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime

from leaderboard.models import Submission
from leaderboard.models.submissions import SCORE_FIELDS
from leaderboard.ranking.query import CI_RESAMPLES, RANK_RESAMPLES, Query

Kind = Submission.Kind


def percent(value: float | None, missing: str = "\u2014") -> str:
    """A fraction as the site prints it: percentage points with two decimals (``missing`` when
    there is none: a dash in tables, empty in exports and forms)."""
    return missing if value is None else f"{100 * value:.2f}"


@dataclass
class Entry:
    """One row of a leaderboard: a model's chosen evaluation and its standing."""

    evaluation_id: int
    submission_id: int
    model_name: str
    organisation: str
    model_size: str
    kind: str
    open_weights: bool
    verified: bool
    paper_url: str
    code_url: str
    protocol: str
    evaluator_version: str
    final: float
    ifs: float
    vfs: float
    low_level: float | None
    high_level: float | None
    final_ci: tuple[float, float] | None
    ifs_ci: tuple[float, float] | None
    vfs_ci: tuple[float, float] | None
    n_tasks: int
    date: datetime | None
    low_level_ci: tuple[float, float] | None = None
    high_level_ci: tuple[float, float] | None = None
    rank: int | None = None
    rank_range: tuple[int, int] | None = None
    tie_group: int = 0
    tied_with_previous: bool = False

    @property
    def is_baseline(self) -> bool:
        return self.kind == Kind.BASELINE

    @property
    def is_paper(self) -> bool:
        return self.kind == Kind.PAPER

    @property
    def show(self) -> dict[str, str]:
        """Scores as the tables print them: percent with two decimals, intervals as "lo–hi"."""
        shown = {name: percent(getattr(self, name)) for name in SCORE_FIELDS}
        for name in SCORE_FIELDS:
            ci = getattr(self, f"{name}_ci")
            shown[f"{name}_ci"] = f"{percent(ci[0])}\u2013{percent(ci[1])}" if ci else ""
        return shown

    @property
    def rank_range_text(self) -> str:
        if not self.rank_range:
            return ""
        best, worst = self.rank_range
        return str(best) if best == worst else f"{best}\u2013{worst}"

    def as_dict(self) -> dict:
        """Plain data for the API and the JSON export (scores are fractions in [0, 1])."""
        data = {name: getattr(self, name) for name in ENTRY_FIELDS}  # flat: faster than asdict's deep copy
        data["date"] = self.date.isoformat() if self.date else None
        for name in (*INTERVAL_FIELDS, "rank_range"):
            data[name] = list(data[name]) if data[name] else None
        data["baseline"] = self.is_baseline
        data["reported_in_paper"] = self.is_paper
        return data


ENTRY_FIELDS = tuple(item.name for item in fields(Entry))
INTERVAL_FIELDS = tuple(f"{name}_ci" for name in SCORE_FIELDS)  # an Entry's (low, high) pairs


@dataclass
class Flagged:
    """A public entry maintainers took out of the ranking, with their public reason."""

    evaluation_id: int
    model_name: str
    organisation: str
    reason: str


@dataclass
class Leaderboard:
    query: Query
    entries: list[Entry]
    flagged: list[Flagged] = field(default_factory=list)
    generation: int = 0
    rank_resamples: int = RANK_RESAMPLES
    ci_resamples: int = CI_RESAMPLES

    @property
    def ranked(self) -> list[Entry]:
        return [entry for entry in self.entries if entry.rank is not None]

    @property
    def has_intervals(self) -> bool:
        return any(entry.final_ci for entry in self.entries)

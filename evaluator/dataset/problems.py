"""Problems found in a task set, each saying where (file, line, task, field) and what.

Validation collects every problem instead of stopping at the first, so one run tells a
dataset's author everything to fix. The same records serve the command line (text and
JSON) and the leaderboard's importer, which reads them as data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Where:
    """The place a check looks at: a file (relative to the dataset root), a line, a task."""

    file: str | None = None
    line: int | None = None
    task: str | None = None


@dataclass(frozen=True)
class Problem:
    """One defect (severity "error") or remark (severity "warning")."""

    message: str
    code: str = "invalid"
    file: str | None = None
    line: int | None = None
    task: str | None = None
    field: str | None = None
    severity: str = ERROR

    def location(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.task is not None:
            parts.append(f"task {self.task}")
        if self.field:
            parts.append(self.field)
        return ": ".join(parts)

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict:
        return asdict(self)


def printable(text: str | None) -> str | None:
    """Text safe to print and store: undecodable file-name bytes become backslash escapes."""
    if text is None or text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class Problems:
    """Collects problems in the order they are found, up to a cap.

    The cap keeps a garbage input (say, a 100 000-line text file) from producing an
    unbounded report; the last entry then says how many more were found.
    """

    def __init__(self, cap: int = 1000):
        self.items: list[Problem] = []
        self.cap = cap
        self.dropped = 0

    def error(self, where: Where, field: str | None, message: str, code: str = "invalid") -> None:
        self._add(where, field, message, code, ERROR)

    def warn(self, where: Where, field: str | None, message: str, code: str = "remark") -> None:
        self._add(where, field, message, code, WARNING)

    def _add(self, where: Where, field: str | None, message: str, code: str, severity: str) -> None:
        if len(self.items) >= self.cap:
            self.dropped += 1
            return
        file, task, field = (printable(text) for text in (where.file, where.task, field))
        self.items.append(Problem(printable(message), code, file, where.line, task, field, severity))

    @property
    def errors(self) -> list[Problem]:
        found = [p for p in self.items if p.severity == ERROR]
        if self.dropped:
            found.append(Problem(f"{self.dropped} more problems not listed", "truncated"))
        return found

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.severity == WARNING]

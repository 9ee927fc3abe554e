"""The account a corpus reader keeps of one input: what it read, what it skipped and why.

Bad input never stops a run: a reader records the problem with the file and a position a person
can find (line/column, compressed byte, CSV record, tar member) and goes on with the next record,
or the next input when the file cannot be read further. The counts and problems end up in the
output directory's manifest.json, so nothing is lost silently, and the parse commands list the
problems on stderr and exit 1 (0 with --allow-partial).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class InputLog:
    """Counts and problems of one input file, filled in by a corpus reader while it streams."""

    path: str
    skipped: Counter = field(default_factory=Counter)  # documents skipped, by reason
    other: Counter = field(
        default_factory=Counter
    )  # non-document counts (deletions, tar members...)
    problems: list[dict[str, Any]] = field(default_factory=list)
    failed: bool = False  # the file could not be read to its end

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] += count

    def problem(self, position: str, reason: str, *, fatal: bool = False) -> None:
        """Record bad input at `position`; `fatal` when the rest of the file is unreadable."""
        self.problems.append(
            {"file": self.path, "position": position, "reason": reason, "fatal": fatal}
        )
        self.failed = self.failed or fatal


def printable_name(name: str) -> str:
    """A file or member name as JSON and a terminal can show it: the bytes of a name that is not
    valid UTF-8 (which Python holds as surrogate escapes, unencodable as UTF-8) written as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

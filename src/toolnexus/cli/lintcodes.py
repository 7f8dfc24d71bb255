"""Findings and their stable codes for ``check-criteria``, importable without loading YAML or the
core (the command's ``--help`` lists the codes, and help must stay as fast as ``--version``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CODES", "WARNING_CODES", "Finding"]

#: The stable finding codes of ``check-criteria``. Never renumber: configs and CI greps hold them.
CODES: dict[str, str] = {
    "TN001": "degenerate choice: every option description is empty",
    "TN002": "degenerate choice: every option description equals its own option id",
    "TN003": "degenerate choice: every option description is identical",
    "TN010": "a choice takes 1..255 named options",
    "TN011": "a score takes 2..10 ordered levels",
    "TN012": "no questions, or an empty question key",
    "TN020": "schema or shape error (wrong kind of value, unknown field, not a question set)",
    "TN021": "duplicate mapping key (YAML would silently keep the last)",
    "TN022": "duplicate score level",
    "TN023": "empty option description or score level (when not all are empty)",
    "TN024": "missing or unknown question type",
    "TN025": "missing or empty instructions",
    "TN026": (
        "question key, option id or score level label holds a control or bidirectional character"
    ),
    "TN027": "question key, option id or score level label is whitespace only",
    "TN028": "question key, option id or score level label contains a newline",
    "TN900": "not YAML: syntax error, or not UTF-8 text",
}

#: Advisory findings: ``check-criteria`` reports them, but a file with only these still loads
#: (the classifier itself warns about degenerate criteria at run time, and sends the request).
WARNING_CODES = frozenset({"TN001", "TN002", "TN003", "TN022", "TN023", "TN026", "TN027", "TN028"})


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in one file, at a 1-based line and column."""

    path: str
    line: int
    col: int
    code: str
    message: str

    @property
    def is_error(self) -> bool:
        """False for advisory codes (``WARNING_CODES``): the file still loads."""
        return self.code not in WARNING_CODES

    def located(self) -> str:
        """``path:line:col: message``, the shape editors and terminals jump to."""
        return f"{self.path}:{self.line}:{self.col}: {self.message}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
        }

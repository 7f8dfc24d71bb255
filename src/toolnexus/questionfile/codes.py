"""Findings and their stable codes for ``check-criteria``, importable without loading YAML or the
core (the command's ``--help`` lists the codes, and help must stay as fast as ``--version``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .rules import RULES, Severity, rule_for

__all__ = ["CODES", "WARNING_CODES", "Finding"]

#: The stable finding codes of ``check-criteria``. Never renumber: configs and CI greps hold them.
CODES: dict[str, str] = {rule.code: rule.summary for rule in RULES}

#: Findings that do not stop ``eval``/``batch`` loading the file (the classifier itself warns
#: about degenerate criteria at run time, and sends the request); ``check-criteria`` reports them.
WARNING_CODES = frozenset(rule.code for rule in RULES if not rule.blocks)


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
        """True when the file cannot be loaded (the rule ``blocks``): eval refuses it."""
        return self.code not in WARNING_CODES

    @property
    def severity(self) -> Severity:
        return rule_for(self.code).severity

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
            "severity": self.severity,
            "message": self.message,
        }

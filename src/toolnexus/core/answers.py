"""The answers of a decision, as values (seeds 000, 003): noul, choice, score and raw answers
(each defined by its type's module in ``qtypes/``), the usage, ``near_uniform``, and the one
reading of a score's structure. Pure. Decoding a body into them is ``decision.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from .qtypes.choice import (
    ChoiceAnswer,
)
from .qtypes.noul import NoulAnswer
from .qtypes.raw import RawAnswer
from .qtypes.score import ScoreAnswer

__all__ = [
    "Answer",
    "ClassifierUsage",
]

Answer: TypeAlias = NoulAnswer | ChoiceAnswer | ScoreAnswer | RawAnswer


@dataclass(frozen=True)
class ClassifierUsage:
    """Tokens the backend billed. ``cost`` is ``None`` when not reported, NOT zero: printing
    $0.00 for an unreported cost would be a lie about money.

    ``reported`` is False when the response had no ``usage`` or a ``null`` token count (issue
    33): the counts then read 0 but are unknown, so records flag ``usage-missing`` and spend
    caps charge the request at its estimate. Not a wire field."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    reported: bool = True

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.cost is not None:
            out["cost"] = self.cost
        return out

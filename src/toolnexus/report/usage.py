"""What a run spent: tokens and cost summed over its records (a batch record's ``usage``),
spent and cached apart (:class:`~.aggregation.RunStats` keeps one of each), each record's
figures bounded as the decoder bounds them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..core import MAX_USAGE
from .fieldchecks import RecordError, _shown
from .model import Usage as UsageSummary

__all__ = ["MAX_TOKENS", "Usage"]


#: A record's token count or cost at most (decision.MAX_USAGE, the decoder's own bound). A
#: count of thousands of digits would sum past what Python turns into text (4300 digits), and
#: the report could not be printed (issue 17 item 3).
MAX_TOKENS = MAX_USAGE


class Usage:
    """Tokens and cost summed over records (``usage`` of a batch record)."""

    __slots__ = ("cost", "cost_reported", "input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        #: Decimal of each record's cost as written: money is never a float sum
        self.cost = Decimal(0)
        self.cost_reported = 0

    def add(self, usage: Any) -> None:
        """The slow path: a record's ``usage`` checked field by field."""
        if type(usage) is not dict:
            raise RecordError(f"usage is {_shown(usage)}, not an object")
        for name in ("input_tokens", "output_tokens"):
            n = usage.get(name)
            if n is None:
                continue
            if type(n) is not int or not 0 <= n <= MAX_TOKENS:
                raise RecordError(f"usage.{name} is {_shown(n)}, not a token count")
            if name == "input_tokens":
                self.input_tokens += n
            else:
                self.output_tokens += n
        cost = usage.get("cost")
        if cost is not None:
            if type(cost) not in (float, int) or not 0 <= cost <= MAX_USAGE:
                raise RecordError(f"usage.cost is {_shown(cost)}, not a cost")
            self.cost += Decimal(repr(cost)) if type(cost) is float else Decimal(cost)
            self.cost_reported += 1

    def merge(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost += other.cost
        self.cost_reported += other.cost_reported

    def summary(self) -> UsageSummary:
        return UsageSummary(
            self.input_tokens,
            self.output_tokens,
            float(self.cost) if self.cost_reported else None,
            self.cost_reported,
        )

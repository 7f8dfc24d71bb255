"""A record field's checks on a report's hot path and the errors they raise: every accumulator
(:mod:`.accumulators`, :mod:`.ranked`, :mod:`.levels`) and the run's own counts
(:mod:`.aggregation`, :mod:`.usage`) refuse what ``toolnexus batch`` never writes with the same
cheap type and range tests and the same words. Below all of them, so none imports another for
them.
"""

from __future__ import annotations

import math
from typing import Any

from ..core import SUM_TOLERANCE, ReportError, registry

__all__ = ["LabelError", "RecordError"]


class LabelError(ReportError):
    """A label that does not fit its question (the caller adds the labels file and line)."""


class RecordError(ReportError, ValueError):
    """A record field holding what ``toolnexus batch`` never writes (the caller adds the file,
    line and question key). Checked on the hot path with cheap type and range tests, so a
    hostile run is refused in words instead of being counted as garbage."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _probability(value: Any, name: str) -> float:
    """The slow path of the inline ``type(v) is float and 0 <= v <= 1`` test: an integer 0 or 1
    is a probability too; anything else (a string, a bool, NaN, 7) is refused."""
    if type(value) is int and 0 <= value <= 1:
        return float(value)
    raise RecordError(f"{name} is {_shown(value)}, not a probability in [0, 1]")


def _probabilities(probs: Any) -> None:
    """``probabilities`` is an object of option name -> probability."""
    if type(probs) is not dict:
        raise RecordError(f"probabilities is {_shown(probs)}, not an object of probabilities")
    for k, v in probs.items():
        if type(v) is not float or not 0.0 <= v <= 1.0:
            _probability(v, f"probabilities[{k!r}]")


def _confidence(conf: Any) -> float | None:
    return None if conf is None else _probability(conf, "confidence")


#: ``validate_decision``'s bound on a distribution's sum, with its slack for two-decimal wire
#: values summed in binary floating point (``qtypes.values.distribution_problem``).
_SUM_BOUND = SUM_TOLERANCE + 1e-9


def _valid_distribution(answer: dict[str, Any]) -> None:
    """Issue 42 item 5: in a record whose ``invalid`` is null, a choice or score distribution
    sums to 1 within ``validate_decision``'s tolerance and a ``choice`` is one of its
    probability keys, as every record ``batch`` writes does (it validated the decision)."""
    # the accumulator has checked each value a probability (a float or an integer 0 or 1)
    probs = answer["probabilities"]
    if not probs:
        return  # validate_decision lets an empty map through (seed 004)
    total = sum(probs.values())
    if abs(total - 1.0) > _SUM_BOUND:
        total = math.fsum(probs.values())
        if abs(total - 1.0) > _SUM_BOUND:
            raise RecordError(
                f"probabilities sum to {total:.4g}, not 1 ± {SUM_TOLERANCE}, in a record whose "
                "invalid is null (batch never writes one)"
            )
    named = registry.option_field(answer.get("type"))
    if named is not None:  # an answer that names its option names one of its keys
        choice = answer.get(named)
        if type(choice) is str and choice not in probs:
            raise RecordError(
                f"choice {_shown(choice)} is not one of its probabilities' keys "
                f"({', '.join(map(str, probs))}), in a record whose invalid is null"
            )

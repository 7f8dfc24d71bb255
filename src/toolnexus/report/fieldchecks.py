"""A record field's checks on a report's hot path and the errors they raise: every accumulator
(:mod:`.accumulators`, :mod:`.ranked`, :mod:`.levels`) and the run's own counts
(:mod:`.aggregation`, :mod:`.usage`) refuse what ``toolnexus batch`` never writes with the same
cheap type and range tests and the same words. Below all of them, so none imports another for
them; ``report.accumulators`` re-exports every name here.
"""

from __future__ import annotations

from typing import Any

from ..errors import ReportError

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

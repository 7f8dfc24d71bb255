"""How an answer reads for SPEC §8B's judge layer: against the exclusive ``Bands`` (the default
of ask / gate, 0.30 / 0.70) or seed 004's inclusive thresholds (``threshold_band``'s rule, with
the thresholds merged once). Pure. The rules and the Policy over these readings are
``policy.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .answers import Answer
from .errors import ConfigError
from .qtypes import registry
from .validation import Band, band_of, merged_thresholds

__all__ = [
    "DEFAULT_BANDS",
    "Bands",
    "JudgedAnswer",
    "as_bands",
    "as_thresholds",
    "is_certain",
    "noul_band",
    "read_answer",
    "read_exclusive",
    "read_inclusive",
    "sure",
]


def _unit(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"classifier: {name} must be a number in 0..1, got {value!r}")
    if not 0 <= value <= 1:
        raise ConfigError(f"classifier: {name} must be a number in 0..1, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Bands:
    """§8B's cut-points, EXCLUSIVE on the confident side: noul ``p < low`` is no, ``p > high``
    is yes, else uncertain; a choice is sure iff ``confidence > high`` and not near-uniform, a
    score iff ``confidence > high``. A threshold tuned against one backend does not transfer
    to another."""

    low: float = 0.30
    high: float = 0.70

    def __post_init__(self) -> None:
        object.__setattr__(self, "low", _unit("bands.low", self.low))
        object.__setattr__(self, "high", _unit("bands.high", self.high))
        if self.low > self.high:
            raise ConfigError(
                f"classifier: bands.low ({self.low}) must not be above bands.high ({self.high})"
            )


#: §8B's default bands, the default of ask / gate (seed 004: they stay the default, beside
#: the inclusive ``DEFAULT_THRESHOLDS``).
DEFAULT_BANDS = Bands()


def as_bands(value: Bands | Mapping[str, Any] | None) -> Bands | None:
    if value is None or isinstance(value, Bands):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"low", "high"})
        if unknown:
            raise ConfigError(f"classifier: unknown band {unknown[0]!r} (low, high)")
        return Bands(**value)
    raise ConfigError(f"classifier: bands must be Bands or a mapping, got {type(value).__name__}")


def as_thresholds(value: Mapping[str, Any] | None) -> Mapping[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"classifier: thresholds must be a mapping, got {type(value).__name__}")
    merged_thresholds(value)  # the one check of names and ranges
    # A plain copy, not a MappingProxyType: every public value copies, pickles and asdicts
    # (tests/core/test_value_objects.py); the policy reads its own copy made at construction.
    return dict(value)


@dataclass(frozen=True)
class JudgedAnswer:
    """One answer as ``ask`` reads it: a noul carries ``band`` (yes | no | uncertain), a
    choice or score carries ``sure``; a raw answer is uncertain (``sure`` False)."""

    answer: Answer
    band: Band | None = None
    sure: bool | None = None

    def value(self) -> float | None:
        """The one number: noul probability, score value, choice confidence (None: raw)."""
        qtype = registry.of_answer(self.answer)
        return qtype.value(self.answer) if qtype is not None else None

    def choice(self) -> str | None:
        """The picked option of a choice answer (None for every other type)."""
        qtype = registry.of_answer(self.answer)
        return qtype.option(self.answer) if qtype is not None else None

    @property
    def certain(self) -> bool:
        """A noul on a confident side, or a sure choice/score."""
        return self.band in ("yes", "no") or self.sure is True


def read_answer(
    answer: Answer, bands: Bands | None = None, thresholds: Mapping[str, float] | None = None
) -> JudgedAnswer:
    """``answer`` against the exclusive ``bands`` (default ``DEFAULT_BANDS``) or, given,
    seed 004's inclusive ``thresholds`` (``threshold_band``: no near-uniform demotion)."""
    if thresholds is not None:
        return read_inclusive(answer, merged_thresholds(thresholds))
    return read_exclusive(answer, bands or DEFAULT_BANDS)


def read_inclusive(answer: Answer, cuts: Mapping[str, float]) -> JudgedAnswer:
    band = band_of(answer, cuts)
    if _probability(answer) is not None:
        return JudgedAnswer(answer, band=band)
    return JudgedAnswer(answer, sure=band == "yes")


def _probability(answer: Answer) -> float | None:
    """The answer's probability when its type reads as a §8B band (a noul), else None."""
    qtype = registry.of_answer(answer)
    return qtype.probability(answer) if qtype is not None else None


def noul_band(p: float, b: Bands) -> Band:
    """§8B: ``p < low`` is no, ``p > high`` is yes, else uncertain (exclusive)."""
    return "no" if p < b.low else "yes" if p > b.high else "uncertain"


def sure(answer: Answer, b: Bands) -> bool:
    """§8B: a choice is sure iff ``confidence > high`` and not near-uniform; a score iff
    ``confidence > high``; a raw answer never."""
    qtype = registry.of_answer(answer)
    return qtype.sure(answer, b.high) if qtype is not None else False


def read_exclusive(answer: Answer, b: Bands) -> JudgedAnswer:
    p = _probability(answer)
    if p is not None:
        return JudgedAnswer(answer, band=noul_band(p, b))
    return JudgedAnswer(answer, sure=sure(answer, b))


def is_certain(answer: Answer, cuts: Mapping[str, float] | None, b: Bands) -> bool:
    """``read_*(answer).certain`` without building the reading: a gate's hot path."""
    if cuts is not None:
        return band_of(answer, cuts) != "uncertain"
    p = _probability(answer)
    if p is not None:
        return noul_band(p, b) != "uncertain"
    return sure(answer, b)

"""Calibration bins and the expected calibration error, exactly as issue 12 defines them (the
definition is ``measures``' docstring; ``measures`` re-exports every name here): 10 equal-width
bins of ``p``, ``b/10 <= p < (b+1)/10`` and ``p = 1.0`` in the last, each with its count and its
sums of ``p`` and ``y`` added in record order. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .arrays import floats, same_length

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

__all__ = [
    "N_BINS",
    "Reliability",
    "ReliabilityBin",
    "bin_index",
    "expected_calibration_error",
    "reliability",
]


@dataclass(frozen=True)
class ReliabilityBin:
    """One calibration bin: ``confidence`` is the mean probability in it, ``accuracy`` the mean
    label (noul) or correctness (top-1); both ``None`` for an empty bin."""

    lo: float
    hi: float
    n: int
    confidence: float | None
    accuracy: float | None


#: Equal-width calibration bins.
N_BINS = 10


def bin_index(p: float) -> int:
    """The calibration bin of ``p``: ``b/10 <= p < (b+1)/10``, and 1.0 in the last bin."""
    b = int(p * N_BINS)
    return N_BINS - 1 if b >= N_BINS else max(b, 0)


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def _bins(p: Floats) -> npt.NDArray[np.intp]:
    """:func:`bin_index` of every ``p`` (``int`` truncates as ``astype`` does)."""
    import numpy as np

    return np.clip((p * N_BINS).astype(np.intp), 0, N_BINS - 1)


@dataclass
class Reliability:
    """Calibration bins: per bin the count, the sum of ``p`` and the sum of ``y``."""

    n: list[int] = field(default_factory=lambda: [0] * N_BINS)
    sum_p: list[float] = field(default_factory=lambda: [0.0] * N_BINS)
    sum_y: list[float] = field(default_factory=lambda: [0.0] * N_BINS)

    def ece(self) -> float | None:
        """``sum_b (n_b / N) * |mean(y)_b - mean(p)_b|``, ``None`` with no data."""
        total = sum(self.n)
        if not total:
            return None
        # (n_b / N) * |sum_y/n_b - sum_p/n_b| == |sum_y - sum_p| / N
        return sum(abs(self.sum_y[b] - self.sum_p[b]) for b in range(N_BINS)) / total

    def bins(self) -> tuple[ReliabilityBin, ...]:
        """Per bin: its range, ``n``, the mean confidence and the accuracy (mean ``y``)."""
        return tuple(
            ReliabilityBin(
                b / N_BINS,
                (b + 1) / N_BINS,
                self.n[b],
                _mean(self.sum_p[b], self.n[b]),
                _mean(self.sum_y[b], self.n[b]),
            )
            for b in range(N_BINS)
        )


def reliability(y_true: Sequence[int | float], y_prob: Sequence[float]) -> Reliability:
    """The 10 equal-width bins of ``y_prob`` with the ``y_true`` falling in each: per bin the
    count, and ``p`` and ``y`` each added in record order (``bincount``'s order)."""
    import numpy as np

    if not same_length(y_true, y_prob):
        return Reliability()
    p = floats(y_prob)
    b = _bins(p)
    return Reliability(
        np.bincount(b, minlength=N_BINS).tolist(),
        np.bincount(b, weights=p, minlength=N_BINS).tolist(),
        np.bincount(b, weights=floats(y_true), minlength=N_BINS).tolist(),
    )


def expected_calibration_error(
    y_true: Sequence[int | float], y_prob: Sequence[float]
) -> float | None:
    """Expected calibration error over 10 equal-width bins."""
    return reliability(y_true, y_prob).ece()

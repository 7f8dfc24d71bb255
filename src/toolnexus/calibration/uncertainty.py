"""How much an ECE means at this sample size: a bootstrap interval and the noise floor.

A bare ECE misleads: a perfectly calibrated sample of 100 still reads an ECE well above 0 (issue
24 cites a median of 0.087 at 15 bins). So beside every ``ece``:

- ``ece_interval``: the 95% percentile bootstrap interval, records resampled with replacement.
- ``ece_null``: the median and 95th percentile of the ECE that a perfectly calibrated model
  shows on these same predicted probabilities, drawing each outcome from its own probability.
  An ECE at or under the p95 is indistinguishable from calibrated; above it, miscalibrated.

The ECE is the report's (``toolnexus.metrics.measures``): 10 equal-width bins, bin
``b/10 <= p < (b+1)/10``, ``p = 1.0`` in the last. Both resamplings work on *atoms*, the distinct
``(p, y)`` pairs with their counts: resampling records is a multinomial draw over atoms, and
drawing outcomes is one binomial per distinct ``p``. Wire probabilities have two decimals, so
there are at most 202 atoms whatever the record count, and 100,000 records cost what 100 do;
results do not depend on record order. Continuous probabilities (every record its own atom)
are drawn record by record instead, the same distributions at a quarter of the cost. A fixed
seed and draw count make the output reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..metrics import N_BINS, MetricDefinitions, bin_edges, bin_of, ece

__all__ = [
    "DRAWS",
    "SEED",
    "EceInterval",
    "EceNull",
    "Pairs",
    "ece_binned",
    "ece_by",
    "ece_interval",
    "ece_interval_by",
    "ece_null",
    "ece_null_by",
]

#: Resamples (bootstrap) and outcome draws (floor): a 2.5% percentile then rests on 25 draws.
DRAWS = 1000
#: The fixed seed of every resampling, so the same data gives the same interval and floor.
SEED = 0
#: Rows of atom counts drawn at once: bounds memory when probabilities are continuous.
_CELLS_PER_CHUNK = 4_000_000

Floats = npt.NDArray[np.float64]


def _bins(p: Floats) -> npt.NDArray[np.intp]:
    """The report's bin of each ``p`` (``int(p * 10)``, 1.0 in the last bin)."""
    return np.clip((p * N_BINS).astype(np.intp), 0, N_BINS - 1)


def _arrays(y_true: Sequence[float] | Any, y_prob: Sequence[float] | Any) -> tuple[Floats, Floats]:
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_prob, dtype=np.float64)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"y_true and y_prob must be 1-D of one length, got {y.shape}, {p.shape}")
    return y, p


def ece_binned(y_true: Sequence[float] | Any, y_prob: Sequence[float] | Any) -> float | None:
    """The report's 10-bin ECE, ``sum_b |sum_y_b - sum_p_b| / N``; ``None`` with no data."""
    y, p = _arrays(y_true, y_prob)
    if not len(p):
        return None
    per_bin = np.bincount(_bins(p), weights=y - p, minlength=N_BINS)
    return float(np.abs(per_bin).sum() / len(p))


@dataclass(frozen=True)
class EceInterval:
    """The sample's ECE and its 95% percentile bootstrap interval."""

    ece: float
    low: float
    high: float
    resamples: int
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {"ece": self.ece, "low": self.low, "high": self.high,
                "resamples": self.resamples, "seed": self.seed}  # fmt: skip


@dataclass(frozen=True)
class EceNull:
    """The noise floor: the ECE of a perfectly calibrated model on these probabilities."""

    median: float
    p95: float
    draws: int
    seed: int
    #: the mean over the draws (issue 47: a study's floor is often the mean)
    mean: float = 0.0

    def above(self, ece: float) -> bool:
        """True when ``ece`` is above the floor's 95th percentile (``--fail-on ece>floor``)."""
        return ece > self.p95

    def to_json(self) -> dict[str, Any]:
        return {"median": self.median, "p95": self.p95, "draws": self.draws, "seed": self.seed,
                "mean": self.mean}  # fmt: skip


def _atoms(p: Floats, y: Floats) -> tuple[Floats, npt.NDArray[np.intp]]:
    """The distinct ``(p, y)`` rows in ``(p, y)`` order with their counts: what
    ``np.unique(column_stack([p, y]), axis=0)`` gives, by two 1-D uniques (a row-wise unique
    sorts structured rows: ~10x slower at 100,000 records)."""
    values, inverse = np.unique(p, return_inverse=True)
    codes, counts = np.unique(inverse * 2 + (y != 0), return_counts=True)
    return np.column_stack([values[codes // 2], (codes % 2).astype(np.float64)]), counts


def _per_bin_matrix(values: Floats, bins: npt.NDArray[np.intp]) -> Floats:
    """(atoms, bins): each atom's value in its own bin's column, so counts @ M sums by bin."""
    m = np.zeros((len(values), N_BINS))
    m[np.arange(len(values)), bins] = values
    return m


def _sum_by_bin(weighted: Floats, bins: npt.NDArray[np.intp]) -> Floats:
    """(rows, bins): each row's columns summed within their bin, in column order.

    ``bins`` is non-decreasing (atoms come sorted by probability), so each bin is one run of
    columns. Summed with ``add.accumulate``, which adds each column to the partial sum before
    it: the same bits on every machine. A matrix product (``counts @ per-bin matrix``) is not:
    OpenBLAS picks its kernel, and so its order of additions, by the CPU it finds (issue 29: a
    golden interval differed in its last digit on another 2-core machine)."""
    out = np.zeros((weighted.shape[0], N_BINS))
    edges = np.flatnonzero(np.diff(bins)) + 1
    for start, stop in zip([0, *edges], [*edges, len(bins)], strict=True):
        out[:, bins[start]] = np.add.accumulate(weighted[:, start:stop], axis=1)[:, -1]
    return out


def _chunks(total: int, atoms: int) -> list[int]:
    rows = max(1, _CELLS_PER_CHUNK // max(atoms, 1))
    return [min(rows, total - start) for start in range(0, total, rows)]


def ece_interval(
    y_true: Sequence[float] | Any,
    y_prob: Sequence[float] | Any,
    *,
    resamples: int = DRAWS,
    seed: int = SEED,
) -> EceInterval | None:
    """The ECE with its 95% percentile bootstrap interval over ``resamples`` resamples of the
    records (with replacement); ``None`` with no data. ``y_true`` is 0/1 (the label for noul,
    correctness for a top-1 probability)."""
    y, p = _arrays(y_true, y_prob)
    n = len(p)
    if not n:
        return None
    point = ece_binned(y, p)
    assert point is not None
    atoms, counts = _atoms(p, y)
    rng = np.random.default_rng(seed)
    share = counts / n
    distinct = int(counts.max()) == 1  # continuous probabilities: every record its own atom
    d, bins = atoms[:, 1] - atoms[:, 0], _bins(atoms[:, 0])
    samples = []
    for rows in _chunks(resamples, len(atoms)):
        if distinct:
            # A multinomial over n equal atoms is n uniform picks, and picking is ~4x cheaper
            # than numpy's multinomial (a binomial per atom): 0.9 s, not 7.4, at 100,000.
            picked = rng.integers(0, n, size=(rows, n))
            cells = (np.arange(rows)[:, None] * N_BINS + bins[picked]).ravel()
            sums = np.bincount(cells, weights=d[picked].ravel(), minlength=rows * N_BINS)
            samples.append(np.abs(sums.reshape(rows, N_BINS)).sum(axis=1) / n)
        else:
            drawn = rng.multinomial(n, share, size=rows).astype(np.float64)
            samples.append(np.abs(_sum_by_bin(drawn * d, bins)).sum(axis=1) / n)
    low, high = np.percentile(np.concatenate(samples), [2.5, 97.5])
    return EceInterval(point, float(low), float(high), resamples, seed)


def ece_null(
    y_prob: Sequence[float] | Any, *, draws: int = DRAWS, seed: int = SEED
) -> EceNull | None:
    """The median and 95th percentile of the ECE over ``draws`` outcome samples, each outcome
    drawn from its own predicted probability (a perfectly calibrated model); ``None`` with no
    data."""
    p = np.asarray(y_prob, dtype=np.float64)
    n = len(p)
    if not n:
        return None
    values, counts = np.unique(p, return_counts=True)
    bins = _bins(values)
    ones = _per_bin_matrix(np.ones(len(values)), bins)
    expected = np.bincount(bins, weights=values * counts, minlength=N_BINS)
    rng = np.random.default_rng(seed)
    samples = []
    distinct = int(counts.max()) == 1
    for rows in _chunks(draws, len(values)):
        if distinct:  # one trial is a uniform below p: 0.6 s, not 4.1, at 100,000
            positives = (rng.random((rows, len(values))) < values).astype(np.float64)
        else:
            positives = rng.binomial(counts, values, size=(rows, len(values))).astype(np.float64)
        # A product of 0/1 counts: whole numbers below 2**53, exact in any order of addition.
        samples.append(np.abs(positives @ ones - expected).sum(axis=1) / n)
    drawn = np.concatenate(samples)
    median, p95 = np.percentile(drawn, [50.0, 95.0])
    return EceNull(float(median), float(p95), draws, seed, float(drawn.mean()))


#: One calibration figure's (label, probability) pairs under ``MetricDefinitions``: one pair
#: for ``top`` and ``yes``, one per class for ``class`` (the ECE is their mean).
Pairs = Sequence[tuple[Floats, Floats]]


def ece_by(pairs: Pairs, d: MetricDefinitions) -> float | None:
    """The mean over ``pairs`` of each one's ECE under ``d``; ``None`` with no data."""
    values = [ece(y, p, d) for y, p in pairs]
    if not values or values[0] is None:
        return None
    return sum(v for v in values if v is not None) / len(values)


def _binned(pairs: Pairs, d: MetricDefinitions) -> list[tuple[Floats, Floats, Any, int]]:
    """Per pair: its ``y``, its ``p``, each ``p``'s bin and the bin count (the sample's edges,
    fixed for every draw)."""
    out = []
    for y, p in pairs:
        edges = bin_edges(p, d)
        out.append((y, p, bin_of(p, edges, d), max(len(edges) - 1, 1)))
    return out


def _ece_rows(drawn_y: Floats, p: Floats, bins: Any, n_bins: int) -> Floats:
    """Per row of ``drawn_y`` (draws, records): the ECE of those labels against ``p``."""
    rows, n = drawn_y.shape
    cells = (np.arange(rows)[:, None] * n_bins + bins).ravel()
    sums = np.bincount(cells, weights=(drawn_y - p).ravel(), minlength=rows * n_bins)
    out: Floats = np.abs(sums.reshape(rows, n_bins)).sum(axis=1) / n
    return out


def ece_interval_by(
    pairs: Pairs, d: MetricDefinitions, *, resamples: int = DRAWS
) -> EceInterval | None:
    """:func:`ece_interval` under ``d``: ``resamples`` resamples of the records, drawn as
    ``default_rng(d.seed).integers(0, n, size=(resamples, n))`` (row by row), each scored
    with the sample's own bin edges."""
    point = ece_by(pairs, d)
    if point is None:
        return None
    n = len(pairs[0][1])
    binned = _binned(pairs, d)
    rng = np.random.default_rng(d.seed)
    samples = []
    for rows in _chunks(resamples, n * len(binned)):
        picked = rng.integers(0, n, size=(rows, n))
        total = np.zeros(rows)
        for y, p, bins, n_bins in binned:
            cells = (np.arange(rows)[:, None] * n_bins + bins[picked]).ravel()
            weights = (y - p)[picked].ravel()
            sums = np.bincount(cells, weights=weights, minlength=rows * n_bins)
            total += np.abs(sums.reshape(rows, n_bins)).sum(axis=1) / n
        samples.append(total / len(binned))
    low, high = np.percentile(np.concatenate(samples), [2.5, 97.5])
    return EceInterval(point, float(low), float(high), resamples, d.seed)


def ece_null_by(pairs: Pairs, d: MetricDefinitions, rows: Floats | None = None) -> EceNull | None:
    """:func:`ece_null` under ``d``, over ``d.floor_draws`` draws: ``u =
    default_rng(d.seed).random((draws, n))`` (row by row); a ``top`` or ``yes`` pair's outcome
    is ``u < p``; with ``rows`` (``class``: pair ``k`` is class ``k``), each record's drawn
    class is the number of its cumulative probabilities (all but the last) at or below ``u``."""
    if not pairs or not len(pairs[0][1]):
        return None
    n = len(pairs[0][1])
    binned = _binned(pairs, d)
    cumulative = None if rows is None else np.cumsum(rows, axis=1)[:, :-1]
    rng = np.random.default_rng(d.seed)
    samples = []
    for count in _chunks(d.floor_draws, n * max(len(binned), 2)):
        u = rng.random((count, n))
        total = np.zeros(count)
        if cumulative is None:
            _, p, bins, n_bins = binned[0]
            total += _ece_rows((u < p).astype(np.float64), p, bins, n_bins)
        else:
            drawn = (u[:, :, None] >= cumulative[None, :, :]).sum(axis=2)
            for k, (_, p, bins, n_bins) in enumerate(binned):
                total += _ece_rows((drawn == k).astype(np.float64), p, bins, n_bins)
        samples.append(total / len(binned))
    drawn_ece = np.concatenate(samples)
    median, p95 = np.percentile(drawn_ece, [50.0, 95.0])
    return EceNull(float(median), float(p95), d.floor_draws, d.seed, float(drawn_ece.mean()))

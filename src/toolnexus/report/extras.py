"""The report's calibration figures beyond the metrics (issue 24), computed by
``toolnexus.calibration`` over the accumulators' labelled arrays and returned as the report's
typed figures (:mod:`.figures`, :mod:`.model`).

- every ``ece``: its bootstrap interval and noise floor (numpy, imported here only when a
  report asks for them);
- noul: the threshold table on the 0.05 grid, and with ``--target-precision`` the consistent
  ``(yes, no)`` pair;
- choice: per-option one-vs-rest reliability and accuracy against coverage;
- score: the ranked probability score over the rows in level order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..calibration import (
    accuracy_coverage,
    one_vs_rest_columns,
    rps,
    rps_columns,
    threshold_pair,
    threshold_table,
)
from ..metrics import DEFAULT_DEFINITIONS, MetricDefinitions, ReliabilityBin
from .figures import CoveragePoint, EceUncertainty, ThresholdCut, ThresholdPair
from .model import (
    OptionCalibration,
    PooledMetrics,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..calibration import Pairs

    Floats = npt.NDArray[np.float64]

__all__ = [
    "Defined",
    "LabelledArrays",
    "calibration_pairs",
    "choice_coverage",
    "defined_figures",
    "ece_uncertainty",
    "ece_uncertainty_by",
    "nll",
    "nll_terms",
    "noul_threshold_pair",
    "noul_threshold_table",
    "option_calibration",
    "pooled_metrics",
    "rps_in_level_order",
    "temperature",
]


def ece_uncertainty(
    y_true: Sequence[int | float],
    y_prob: Sequence[float],
    d: MetricDefinitions = DEFAULT_DEFINITIONS,
) -> EceUncertainty | None:
    """The ECE's 95% bootstrap interval and the noise floor on these probabilities (``None``
    with no data). ``y_true`` is the label (noul) or the top-1 correctness; ``d``: the
    historic bins, or the interval and floor of :func:`ece_uncertainty_by`."""
    from ..calibration import ece_interval, ece_null

    if not d.historic_bins:
        import numpy as np

        pair = (np.asarray(y_true, dtype=np.float64), np.asarray(y_prob, dtype=np.float64))
        return ece_uncertainty_by([pair], d)
    interval = ece_interval(y_true, y_prob, seed=d.seed)
    floor = ece_null(y_prob, draws=d.floor_draws, seed=d.seed)
    if interval is None or floor is None:
        return None
    return _uncertainty(interval, floor)


def ece_uncertainty_by(
    pairs: Pairs, d: MetricDefinitions, rows: Any = None
) -> EceUncertainty | None:
    """The interval and floor of an ECE under ``d`` over ``pairs`` (one per class with
    ``rows``, for ``--ece-of class``)."""
    from ..calibration import ece_interval_by, ece_null_by

    interval = ece_interval_by(pairs, d)
    floor = ece_null_by(pairs, d, rows)
    if interval is None or floor is None:
        return None
    return _uncertainty(interval, floor)


def _uncertainty(interval: Any, floor: Any) -> EceUncertainty:
    return EceUncertainty(
        interval.low,
        interval.high,
        floor.median,
        floor.p95,
        floor.above(interval.ece),
        interval.resamples,
        interval.seed,
        floor.mean,
        floor.draws,
    )


@dataclass(frozen=True)
class LabelledArrays:
    """A question's labelled answers as the definitions' figures read them (issue 47):
    ``correct`` (0/1) and ``top`` (the top label's probability), the probability ``rows``
    (records, classes) with each record's ``labels`` index, the ``offered`` classes' columns,
    and for noul its ``yes`` pair (label, p)."""

    correct: Floats
    top: Floats
    rows: Floats
    labels: Any
    offered: Sequence[int]
    yes: tuple[Floats, Floats] | None = None

    @classmethod
    def of_noul(cls, y_true: Sequence[int], y_prob: Sequence[float]) -> LabelledArrays:
        """A noul as a two-class distribution: ``[p, 1 - p]``, class 0 yes."""
        import numpy as np

        y = np.asarray(y_true, dtype=np.float64)
        p = np.asarray(y_prob, dtype=np.float64)
        correct = ((p >= 0.5) == (y != 0)).astype(np.float64)
        rows = np.column_stack([p, 1.0 - p])
        labels = np.where(y != 0, 0, 1).astype(np.intp)
        return cls(correct, np.maximum(p, 1.0 - p), rows, labels, (0, 1), (y, p))


@dataclass(frozen=True)
class Defined:
    """The figures a question's definitions give (see :func:`defined_figures`)."""

    ece: float | None
    ece_uncertainty: EceUncertainty | None
    reliability: tuple[ReliabilityBin, ...]


def calibration_pairs(a: LabelledArrays, of: str) -> tuple[Pairs, Floats | None]:
    """What ``--ece-of`` bins: the (y, p) pairs, and the rows a ``class`` floor draws from."""
    import numpy as np

    if of == "yes" and a.yes is not None:
        return [a.yes], None
    if of == "class":
        columns = list(a.offered)
        sub = np.nan_to_num(a.rows[:, columns])  # a class not offered to a record: 0
        labels = np.asarray(a.labels)
        pairs = [((labels == k).astype(np.float64), sub[:, i]) for i, k in enumerate(columns)]
        return pairs, sub
    return [(a.correct, a.top)], None


def defined_figures(a: LabelledArrays, of: str, d: MetricDefinitions, intervals: bool) -> Defined:
    """The ECE of ``of`` under ``d``, its interval and floor, and its reliability bins (the
    top-label ones for ``class``, whose ECE is a mean over classes)."""
    from ..calibration import ece_by
    from ..metrics import binned_sums

    pairs, rows = calibration_pairs(a, of)
    shown = pairs[0] if of != "class" else (a.correct, a.top)
    edges, n, sum_p, sum_y = binned_sums(shown[0], shown[1], d)
    bins = tuple(
        ReliabilityBin(
            float(edges[b]),
            float(edges[b + 1]),
            n[b],
            sum_p[b] / n[b] if n[b] else None,
            sum_y[b] / n[b] if n[b] else None,
        )
        for b in range(len(n))
    )
    return Defined(
        ece_by(pairs, d),
        ece_uncertainty_by(pairs, d, rows) if intervals else None,
        bins,
    )


def nll_terms(a: LabelledArrays, d: MetricDefinitions) -> Floats:
    """Per record, ``-log`` of its label's probability: floored at ``d.log_floor`` and
    renormalised, or without a floor clipped to ``[1e-15, 1 - 1e-15]`` as ``log_loss`` is."""
    import numpy as np

    from ..metrics import EPS, label_probability

    if d.log_floor is not None:
        said = label_probability(a.rows, a.labels, d.log_floor)
    elif a.yes is not None:
        clipped = np.clip(a.yes[1], EPS, 1.0 - EPS)
        said = np.where(a.yes[0] != 0, clipped, 1.0 - clipped)
    else:
        said = np.clip(np.nan_to_num(a.rows[np.arange(len(a.rows)), a.labels]), EPS, 1.0 - EPS)
    out: Floats = -np.log(said)
    return out


def nll(a: LabelledArrays, d: MetricDefinitions) -> float | None:
    """Mean ``-log`` of the label's probability floored at ``d.log_floor`` and renormalised."""
    if not len(a.rows):
        return None
    return float(nll_terms(a, d).mean())


def pooled_metrics(
    questions: Iterable[Any], d: MetricDefinitions, intervals: bool
) -> PooledMetrics:
    """``--pool``: the labelled answers of every question with probabilities as one sample
    (``questions``: the run's accumulators); the top-label ECE, a noul as ``[p, 1 - p]``."""
    import numpy as np

    from ..calibration import ece_by, refit_temperature
    from ..metrics import floored_rows

    parts = [a for q in questions if q.labelled for a in [q.arrays()] if a is not None]
    invalid = sum(getattr(q, "labelled_invalid", 0) for q in questions)
    n = sum(len(a.rows) for a in parts)
    if not n:
        return PooledMetrics(0, None, None, None, "top", invalid=invalid)
    correct = np.concatenate([a.correct for a in parts])
    top = np.concatenate([a.top for a in parts])
    pairs = [(correct, top)]
    refit = None
    if d.fit_temperature:
        width = max(a.rows.shape[1] for a in parts)
        logs = np.full((n, width), -np.inf)
        start = 0
        for a in parts:
            rows = len(a.rows)
            with np.errstate(divide="ignore"):  # a class not offered: -inf, weight 0
                floored = np.log(floored_rows(a.rows, d.floor(), a.labels))
            logs[start : start + rows, : a.rows.shape[1]] = floored
            start += rows
        labels = np.concatenate([np.asarray(a.labels, dtype=np.intp) for a in parts])
        refit = refit_temperature(logs, labels)
    return PooledMetrics(
        labelled=n,
        accuracy=float(correct.mean()),
        nll=float(np.concatenate([nll_terms(a, d) for a in parts]).mean()),
        ece=ece_by(pairs, d),
        ece_of="top",
        ece_uncertainty=ece_uncertainty_by(pairs, d) if intervals else None,
        temperature=refit,
        invalid=invalid,
    )


def temperature(a: LabelledArrays, d: MetricDefinitions) -> float | None:
    """The refit temperature at ``d``'s floor (``None`` without records)."""
    import numpy as np

    from ..calibration import refit_temperature
    from ..metrics import floored_rows

    if not len(a.rows):
        return None
    labels = np.asarray(a.labels, dtype=np.intp)
    with np.errstate(divide="ignore"):  # a class not offered: log 0 = -inf, weight 0
        logs = np.log(floored_rows(a.rows, d.floor(), labels))
    return refit_temperature(logs, labels)


def noul_threshold_table(
    y_true: Sequence[int], y_prob: Sequence[float]
) -> tuple[ThresholdCut, ...]:
    return tuple(
        ThresholdCut(
            r.cut, r.precision, r.recall, r.coverage, r.no_precision, r.no_recall, r.no_coverage
        )
        for r in threshold_table(y_true, y_prob)
    )


def noul_threshold_pair(
    y_true: Sequence[int], y_prob: Sequence[float], target: float
) -> ThresholdPair:
    pair = threshold_pair(y_true, y_prob, target)
    return ThresholdPair(
        pair.target,
        pair.yes,
        pair.no,
        pair.yes_precision,
        pair.yes_recall,
        pair.no_precision,
        pair.no_recall,
        pair.reason,
    )


def option_calibration(
    y_true: Sequence[int], columns: Mapping[str, Sequence[float]], label_index: Mapping[str, int]
) -> tuple[OptionCalibration, ...]:
    """Per option (``columns``: option -> each labelled record's probability of it), one vs
    rest against ``y_true`` (class indices; ``label_index`` gives each option's)."""
    out = []
    for o in one_vs_rest_columns(y_true, columns, label_index):
        bins = tuple(ReliabilityBin(**b) for b in o.bins)
        out.append(OptionCalibration(o.option, o.labelled, o.ece, bins, o.skipped))
    return tuple(out)


def choice_coverage(
    correct: Sequence[bool | int], confidence: Sequence[float]
) -> tuple[CoveragePoint, ...]:
    return tuple(
        CoveragePoint(p.floor, p.answered, p.coverage, p.accuracy)
        for p in accuracy_coverage(correct, confidence)
    )


def rps_in_level_order(
    y_level: Sequence[int], rows: Sequence[Sequence[float]], columns: Sequence[int], width: int
) -> float | None:
    """The RPS of rows whose level ``k`` probability sits at ``columns[k]`` of each row (a
    level a row lacks counts 0; ``width``: every row's length, 0 when they differ); ``None``
    without records or with fewer than two levels."""
    if len(columns) < 2 or not y_level:
        return None
    if width and all(0 <= c < width for c in columns):
        values = getattr(rows, "values", None)
        if values is not None:  # one array of rows of one width: each level a stride
            return rps_columns(y_level, [values[c::width] for c in columns])
    if list(columns) == list(range(len(columns))) and width == len(columns):
        return rps(y_level, rows)
    ordered = [[r[c] if 0 <= c < len(r) else 0.0 for c in columns] for r in rows]
    return rps(y_level, ordered)

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

from collections.abc import Mapping, Sequence

from ..calibration.choice import accuracy_coverage, one_vs_rest_columns
from ..calibration.scores import rps, rps_columns
from ..calibration.thresholds import threshold_pair, threshold_table
from .figures import CoveragePoint, EceUncertainty, ThresholdCut, ThresholdPair
from .model import OptionCalibration, ReliabilityBin

__all__ = [
    "choice_coverage",
    "ece_uncertainty",
    "noul_threshold_pair",
    "noul_threshold_table",
    "option_calibration",
    "rps_in_level_order",
]


def ece_uncertainty(
    y_true: Sequence[int | float], y_prob: Sequence[float]
) -> EceUncertainty | None:
    """The ECE's 95% bootstrap interval and the noise floor on these probabilities (``None``
    with no data). ``y_true`` is the label (noul) or the top-1 correctness."""
    from ..calibration.uncertainty import ece_interval, ece_null

    interval = ece_interval(y_true, y_prob)
    floor = ece_null(y_prob)
    if interval is None or floor is None:
        return None
    return EceUncertainty(
        interval.low,
        interval.high,
        floor.median,
        floor.p95,
        floor.above(interval.ece),
        interval.resamples,
        interval.seed,
    )


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

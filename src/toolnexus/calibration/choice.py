"""Choice calibration beyond top-1 (issue 24 §3). Pure: the report's own bins.

- ``one_vs_rest``: for each option, the reliability of ``P(option)`` against "the label is this
  option", with its ECE, for options labelled at least ``MIN_OPTION_LABELS`` times; the others
  are named with the reason they were left out (a 10-bin diagram of 5 positives is noise).
- ``accuracy_coverage``: answering only when the confidence is at least ``c``, for each ``c`` on
  ``COVERAGE_GRID``: the share answered and the accuracy of those answers, so a user sees what a
  confidence floor buys.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics import numeric, reliability, score_groups

__all__ = [
    "COVERAGE_GRID",
    "MIN_OPTION_LABELS",
    "CoveragePoint",
    "OptionReliability",
    "accuracy_coverage",
    "one_vs_rest",
    "one_vs_rest_columns",
    "tail_counts",
]

#: An option needs this many records labelled with it before its reliability is shown.
MIN_OPTION_LABELS = 30
#: Confidence floors 0.00, 0.05, ..., 1.00 (exact two-decimal values, as on the wire).
COVERAGE_GRID: tuple[float, ...] = tuple(i / 20 for i in range(21))


@dataclass(frozen=True)
class OptionReliability:
    """One option, one-vs-rest: ``labelled`` records carry it as their label; ``ece`` and
    ``bins`` are over every labelled record (``None``/empty when the option was left out)."""

    option: str
    labelled: int
    ece: float | None
    bins: list[dict[str, Any]]
    skipped: str | None

    def to_json(self) -> dict[str, Any]:
        return {"option": self.option, "labelled": self.labelled, "ece": self.ece,
                "reliability": self.bins, "skipped": self.skipped}  # fmt: skip


def one_vs_rest(
    y_true: Sequence[str],
    y_prob: Sequence[Mapping[str, float]],
    options: Sequence[str],
    *,
    min_labels: int = MIN_OPTION_LABELS,
) -> list[OptionReliability]:
    """Per option in ``options`` order: reliability of ``y_prob[i][option]`` (missing counts 0)
    against ``y_true[i] == option``, for options with at least ``min_labels`` labels."""
    if len(y_true) != len(y_prob):
        raise ValueError(f"{len(y_true)} labels for {len(y_prob)} probability rows")
    columns = {o: [probs.get(o, 0.0) for probs in y_prob] for o in options}
    return one_vs_rest_columns(y_true, columns, {o: o for o in options}, min_labels=min_labels)


def one_vs_rest_columns(
    y_true: Sequence[Hashable],
    columns: Mapping[str, Sequence[float]],
    label_of: Mapping[str, Hashable],
    *,
    min_labels: int = MIN_OPTION_LABELS,
) -> list[OptionReliability]:
    """:func:`one_vs_rest` over columns (option -> each record's probability of it, in record
    order), ``y_true[i] == label_of[option]`` marking a record labelled with the option (the
    report keeps labels as class indices)."""
    import numpy as np  # the report's reliability takes numpy too

    # The report's class indices are compared in numpy; anything else by Python's == (numpy
    # would cast a list of "a" and 1 to strings, and 1 would then equal "1").
    indices = np.array(y_true) if numeric(y_true) else None
    out = []
    for option, column in columns.items():
        mine = label_of[option]
        if indices is not None:
            truth = indices == mine
        else:
            truth = np.array([y == mine for y in y_true], dtype=bool)
        labelled = int(np.count_nonzero(truth))
        if labelled < min_labels:
            out.append(OptionReliability(
                option, labelled, None, [],
                f"{labelled} records labelled {option!r}, fewer than {min_labels}",
            ))  # fmt: skip
            continue
        rel = reliability(truth, column)
        bins = [dataclasses.asdict(b) for b in rel.bins()]
        out.append(OptionReliability(option, labelled, rel.ece(), bins, None))
    return out


@dataclass(frozen=True)
class CoveragePoint:
    """Answering only when ``confidence >= floor``: the share answered and their accuracy
    (``None`` when nothing is answered)."""

    floor: float
    answered: int
    coverage: float
    accuracy: float | None

    def to_json(self) -> dict[str, Any]:
        return {"floor": self.floor, "answered": self.answered, "coverage": self.coverage,
                "accuracy": self.accuracy}  # fmt: skip


def accuracy_coverage(
    correct: Sequence[bool | int],
    confidence: Sequence[float],
    grid: Sequence[float] = COVERAGE_GRID,
) -> list[CoveragePoint]:
    """Accuracy against coverage at each confidence floor of ``grid`` (inclusive, like the
    ``min_confidence`` threshold). The distinct confidences counted once
    (``metrics.score_groups``), then a bisection per floor."""
    if len(correct) != len(confidence):
        raise ValueError(f"{len(correct)} outcomes for {len(confidence)} confidences")
    n = len(correct)
    values, answered_from, hits_from = tail_counts(score_groups(correct, confidence))
    points = []
    for floor in grid:
        start = bisect.bisect_left(values, floor)
        answered = answered_from[start]
        points.append(CoveragePoint(
            floor, answered, answered / n if n else 0.0,
            hits_from[start] / answered if answered else None,
        ))  # fmt: skip
    return points


def tail_counts(
    groups: Sequence[tuple[float, int, int]],
) -> tuple[list[float], list[int], list[int]]:
    """The distinct values of ``score_groups``, and per index ``j`` the records (and the
    positives) whose value is the ``j``-th or higher (one more entry: none)."""
    values = [p for p, _, _ in groups]
    said_from = [0] * (len(groups) + 1)
    positives_from = [0] * (len(groups) + 1)
    for j in range(len(groups) - 1, -1, -1):
        _, size, pos = groups[j]
        said_from[j] = said_from[j + 1] + size
        positives_from[j] = positives_from[j + 1] + pos
    return values, said_from, positives_from

"""Thresholds you can reuse (issue 24 §6): per noul question, a consistent pair of cut-points
for a target precision, and the threshold table. Pure.

The cut-points are the inclusive ones of ``threshold_band`` (seed 004): ``p >= yes`` is yes, else
``p <= no`` is no. ``yes`` is the report's search (``threshold_for_precision``: the lowest
observed ``p`` whose yes-precision reaches the target). ``no`` is the same search on the other
side: the highest observed ``p`` such that answering no for ``p <= no`` is right at least the
target share of the time. Two rules keep the pair usable as ``--thresholds``:

- ``no <= yes`` always (issue 17 refuses ``no > yes``): a ``no`` found above ``yes`` is capped at
  ``yes``, which leaves no uncertain band (``p >= yes`` is read first).
- When no cut-point reaches the target on the no side, ``no`` is 0.0: only a wire ``0.00`` reads
  no, and the pair reports the precision that really has.

No ``yes`` reaching the target means no pair: the question is reported with the reason, never
given a made-up threshold. Thresholds tuned here are for this model and way of asking only (seed
000: a threshold tuned against one backend does not transfer to another).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics import score_groups, threshold_for_precision
from .choice import COVERAGE_GRID, tail_counts

__all__ = ["ThresholdPair", "ThresholdRow", "threshold_pair", "threshold_table"]


@dataclass(frozen=True)
class ThresholdPair:
    """The pair for one question at ``target`` precision, with what each side achieves on
    these labels (``yes``/``no`` ``None`` with ``reason`` when no pair reaches the target)."""

    target: float
    yes: float | None
    no: float | None
    yes_precision: float | None
    yes_recall: float | None
    no_precision: float | None
    no_recall: float | None
    reason: str | None

    def thresholds(self) -> dict[str, float] | None:
        """The cut-points as ``--thresholds`` reads them, ``None`` when there is no pair."""
        if self.yes is None or self.no is None:
            return None
        return {"yes": self.yes, "no": self.no}

    def to_json(self) -> dict[str, Any]:
        return {
            "target_precision": self.target,
            "yes": self.yes,
            "no": self.no,
            "yes_precision": self.yes_precision,
            "yes_recall": self.yes_recall,
            "no_precision": self.no_precision,
            "no_recall": self.no_recall,
            "reason": self.reason,
        }


def _share(n: int, total: int) -> float | None:
    return n / total if total else None


def _no_side(
    y_true: Sequence[int], y_prob: Sequence[float], yes: float, no: float
) -> tuple[Any, Any]:
    """Precision and recall of the no band as ``threshold_band`` reads it: ``p <= no`` among
    the answers that are not yes (``p < yes``)."""
    said = [y for y, p in zip(y_true, y_prob, strict=True) if p <= no and p < yes]
    right = sum(1 for y in said if not y)
    negatives = sum(1 for y in y_true if not y)
    return _share(right, len(said)), _share(right, negatives)


def threshold_pair(y_true: Sequence[int], y_prob: Sequence[float], target: float) -> ThresholdPair:
    """The consistent ``(yes, no)`` pair reaching ``target`` precision on both sides."""
    found = threshold_for_precision(y_true, y_prob, target)
    if found.threshold is None:
        return ThresholdPair(target, None, None, None, None, None, None,
                             f"no cut-point reaches precision {target} for yes")  # fmt: skip
    yes = found.threshold
    # The no side is the yes search on (1 - p, 1 - y); map its cut-point back to the observed
    # p it came from, since 1 - (1 - p) is not always p in floating point.
    flipped = threshold_for_precision([1 - y for y in y_true], [1.0 - p for p in y_prob], target)
    if flipped.threshold is None:
        no = 0.0
    else:
        t = flipped.threshold
        no = max(p for p in y_prob if 1.0 - p >= t)
    no = min(no, yes)
    no_precision, no_recall = _no_side(y_true, y_prob, yes, no)
    return ThresholdPair(
        target, yes, no, found.precision, found.recall, no_precision, no_recall, None
    )


@dataclass(frozen=True)
class ThresholdRow:
    """Answering yes for ``p >= cut``: its precision (``None`` when nothing is yes), recall
    (``None`` without positives) and coverage (the share answered yes); and the no side at the
    same floor (issue 35 item 3), answering no for ``p <= 1 - cut``: ``no_precision`` (the share
    of those that are negatives), ``no_recall`` (of all negatives) and ``no_coverage``."""

    cut: float
    precision: float | None
    recall: float | None
    coverage: float
    no_precision: float | None = None
    no_recall: float | None = None
    no_coverage: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"cut": self.cut, "precision": self.precision, "recall": self.recall,
                "coverage": self.coverage, "no_precision": self.no_precision,
                "no_recall": self.no_recall, "no_coverage": self.no_coverage}  # fmt: skip


def threshold_table(
    y_true: Sequence[int], y_prob: Sequence[float], grid: Sequence[float] = COVERAGE_GRID
) -> list[ThresholdRow]:
    """Precision, recall and coverage at each cut-point of ``grid`` (the 0.05 grid of
    ``choice.COVERAGE_GRID``). The distinct probabilities counted once
    (``metrics.score_groups``), then a bisection per cut-point."""
    groups = score_groups(y_true, y_prob)
    n = len(y_prob)
    values, said_from, positives_from = tail_counts(groups)
    positives = positives_from[0]
    negatives = n - positives
    rows = []
    for cut in grid:
        start = bisect.bisect_left(values, cut)
        said = said_from[start]
        tp = positives_from[start]
        # The no side at the same floor: p <= 1 - cut, with 1 - cut taken in hundredths (1 -
        # 0.9 is 0.09999999999999998 in floating point, and would miss a wire 0.1).
        end = bisect.bisect_right(values, (100 - round(cut * 100)) / 100)
        said_no = n - said_from[end]
        tn = said_no - (positives - positives_from[end])
        rows.append(ThresholdRow(cut, _share(tp, said), _share(tp, positives),
                                 said / n if n else 0.0, _share(tn, said_no),
                                 _share(tn, negatives), said_no / n if n else 0.0))  # fmt: skip
    return rows

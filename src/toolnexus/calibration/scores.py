"""The ranked probability score, the proper score for ordered levels (score questions). Pure
(numpy, as the report's metrics: the same bits as the loop).

``rps = 1/(K-1) * sum_{k=0}^{K-2} (P_k - O_k)^2``: ``P_k`` the predicted cumulative probability
of levels ``0..k``, ``O_k`` the observed one (1 once ``k`` reaches the label, else 0); the mean
over records. Unlike Brier, putting mass one level off costs less than two levels off. The last
cumulative term (``k = K-1``) is ``(1 - 1)^2`` for a distribution that sums to 1, so it is left
out, as the definition does.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics import in_order_sum, sum_in_order

__all__ = ["rps", "rps_columns", "rps_term"]


def rps_term(y_true: int, y_prob: Sequence[float]) -> float:
    """One record's RPS: ``y_true`` the labelled level, ``y_prob`` the probabilities of levels
    ``0..K-1`` in level order (a level missing from the wire counts 0)."""
    k_levels = len(y_prob)
    if k_levels < 2:
        raise ValueError(f"rps needs at least 2 levels, got {k_levels}")
    if not 0 <= y_true < k_levels:
        raise ValueError(f"label level {y_true} is outside 0..{k_levels - 1}")
    total = 0.0
    cumulative = 0.0
    for k in range(k_levels - 1):
        cumulative += y_prob[k]
        gap = cumulative - (1.0 if k >= y_true else 0.0)
        total += gap * gap
    return total / (k_levels - 1)


def rps(y_true: Sequence[int], y_prob: Sequence[Sequence[float]]) -> float | None:
    """The mean of :func:`rps_term` over records; ``None`` with no records."""
    if len(y_true) != len(y_prob):
        raise ValueError(f"{len(y_true)} labels for {len(y_prob)} probability rows")
    if not y_true:
        return None
    widths = set(map(len, y_prob))
    if len(widths) == 1:
        return rps_columns(y_true, list(zip(*y_prob, strict=True)))
    # rows of several widths: each checked and scored on its own
    return in_order_sum(map(rps_term, y_true, y_prob)) / len(y_true)


def rps_columns(y_true: Sequence[int], columns: Sequence[Sequence[float]]) -> float | None:
    """:func:`rps` of rows given as their columns (``columns[k][i]``: record ``i``'s
    probability of level ``k``), a level at a time over all the records: the same additions
    in the same order per record as :func:`rps_term` (elementwise, in numpy), and the records'
    terms added in record order."""
    if not y_true:
        return None
    k_levels = len(columns)
    if k_levels < 2 or min(y_true) < 0 or max(y_true) >= k_levels:
        return in_order_sum(map(rps_term, y_true, zip(*columns, strict=True))) / len(y_true)
    import numpy as np

    levels = np.array(y_true, dtype=np.int64)
    cumulative = np.zeros(len(levels))
    total = np.zeros(len(levels))
    for k in range(k_levels - 1):
        cumulative = cumulative + np.array(columns[k], dtype=np.float64)
        gaps = cumulative - (levels <= k)
        total = total + gaps * gaps
    return sum_in_order(total / (k_levels - 1)) / len(levels)

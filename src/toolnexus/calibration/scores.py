"""The ranked probability score, the proper score for ordered levels (score questions). Pure.

``rps = 1/(K-1) * sum_{k=0}^{K-2} (P_k - O_k)^2``: ``P_k`` the predicted cumulative probability
of levels ``0..k``, ``O_k`` the observed one (1 once ``k`` reaches the label, else 0); the mean
over records. Unlike Brier, putting mass one level off costs less than two levels off. The last
cumulative term (``k = K-1``) is ``(1 - 1)^2`` for a distribution that sums to 1, so it is left
out, as the definition does.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rps", "rps_term"]


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
    return sum(rps_term(y, ps) for y, ps in zip(y_true, y_prob, strict=True)) / len(y_true)

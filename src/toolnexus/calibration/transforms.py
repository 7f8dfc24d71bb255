"""The recalibration maps as functions of one answer's probabilities. Pure (``math`` only):
``eval`` and ``batch`` apply a map per record without importing numpy, and ``fit`` measures its
cross-validated predictions with these same functions.

Wire probabilities come with two decimals and exact 0 and 1, where a logit or a log is
infinite. Every map clips first to ``[CLIP_EPS, 1 - CLIP_EPS]`` with ``CLIP_EPS = 0.005``: half
the wire's resolution, so a wire ``0.00`` reads as "below 0.005", the most it can mean. The
maps' outputs are clipped the same way: a recalibrated probability never claims more certainty
than the wire can express.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence

__all__ = [
    "CLIP_EPS",
    "clip",
    "isotonic_apply",
    "logit",
    "platt_apply",
    "sigmoid",
    "temperature_apply",
]

#: Half the wire's two-decimal resolution; see the module docstring.
CLIP_EPS = 0.005


def clip(p: float) -> float:
    """``p`` within ``[CLIP_EPS, 1 - CLIP_EPS]``."""
    return CLIP_EPS if p < CLIP_EPS else 1.0 - CLIP_EPS if p > 1.0 - CLIP_EPS else p


def logit(p: float) -> float:
    """``log(p / (1 - p))`` of the clipped ``p``."""
    c = clip(p)
    return math.log(c / (1.0 - c))


def sigmoid(z: float) -> float:
    """``1 / (1 + exp(-z))`` without overflow for large ``|z|``."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def platt_apply(p: float, slope: float, intercept: float) -> float:
    """Platt scaling: ``sigmoid(slope * logit(p) + intercept)``, clipped."""
    return clip(sigmoid(slope * logit(p) + intercept))


def isotonic_apply(p: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Isotonic regression's prediction: linear interpolation between the fitted points
    ``(xs, ys)`` (``xs`` increasing), constant beyond the ends (scikit-learn's
    ``out_of_bounds="clip"``), then clipped."""
    if p <= xs[0]:
        return clip(ys[0])
    if p >= xs[-1]:
        return clip(ys[-1])
    i = bisect.bisect_right(xs, p)  # xs[i - 1] <= p < xs[i]
    x0, x1 = xs[i - 1], xs[i]
    y0, y1 = ys[i - 1], ys[i]
    return clip(y0 + (y1 - y0) * (p - x0) / (x1 - x0))


def temperature_apply(probabilities: Mapping[str, float], temperature: float) -> dict[str, float]:
    """Temperature scaling: ``q_k ∝ clip(p_k) ** (1 / T)``, normalised over the options given.

    A power with one exponent for every option keeps their order, so the argmax (the ``choice``,
    the ``level``) never changes; ``T > 1`` softens an over-confident answer.
    """
    if not probabilities:
        return {}
    logs = {k: math.log(clip(p)) / temperature for k, p in probabilities.items()}
    top = max(logs.values())  # subtract the max before exp: no overflow at small T
    weights = {k: math.exp(v - top) for k, v in logs.items()}
    total = math.fsum(weights.values())
    return {k: w / total for k, w in weights.items()}

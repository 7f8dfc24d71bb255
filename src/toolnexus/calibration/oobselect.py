"""Floors for accuracy at a coverage, chosen out of bag (issue 35 item 4: "for a target
(precision of a side, accuracy at a coverage, a maximum risk)"). Pure (numpy).

The floors are a grid (``floors``, ascending: a higher floor answers fewer records). Per floor
and record, one of three states: not answered (below a confidence floor, or a gate that
escalates), answered wrongly, answered rightly. A floor's accuracy is the share right of those
answered and its coverage the share answered; its risk is ``1 - accuracy``, so "accuracy >= A"
and "risk <= 1 - A" choose the same floor.

The rule, :mod:`.oob`'s for one side's precision, over ``resamples`` bootstrap draws
(``numpy.random.default_rng(seed)``, ``n`` rows with replacement each):

1. per resample, the floor of the largest coverage whose accuracy on the drawn rows reaches the
   target (of equal coverage, the lowest floor);
2. the candidates are those floors from their median up to their :data:`.oob.CHOICE_QUANTILE`
   quantile (nearest rank). Per resample, each candidate's accuracy on the rows the resample
   did not draw (out of bag), when at least ``min_n`` of them are answered there; a candidate's
   estimate is the mean of those, with their 2.5 and 97.5 percentiles, and its out-of-bag
   coverage the mean share answered;
3. the floor is the lowest candidate whose estimate reaches the target over at least half the
   resamples; none does: the median's numbers, refused. Fewer than half the resamples reaching
   the target at all: no floor, refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .oob import CHOICE_QUANTILE, OOB_MIN_N, OOB_RESAMPLES, OOB_SEED

__all__ = ["NOT_ANSWERED", "RIGHT", "WRONG", "SelectiveGuard", "oob_selective"]

#: A record's state at one floor.
NOT_ANSWERED, WRONG, RIGHT = 0, 1, 2


@dataclass(frozen=True)
class SelectiveGuard:
    """The floor reaching ``target`` accuracy at the largest coverage, chosen out of bag:
    ``floor`` (None: fewer than half the resamples reach the target, ``found`` of them did),
    ``estimate`` (mean out-of-bag accuracy at it; None when no resample had ``min_n`` answered
    out of bag) with its 95% percentile ``low``..``high`` over ``used`` of ``resamples``
    resamples (seed ``seed``), ``coverage`` its mean out-of-bag coverage, ``accepted`` and, on
    all the rows, ``in_sample`` accuracy and ``in_sample_coverage`` at the floor."""

    target: float
    floor: float | None
    estimate: float | None
    low: float | None
    high: float | None
    coverage: float | None
    resamples: int
    used: int
    seed: int
    min_n: int
    accepted: bool
    found: int
    in_sample: float | None = None
    in_sample_coverage: float | None = None

    def text(self, risk: bool = False) -> str:
        """The numbers a written floor's comment and a refusal name; ``risk``: as ``1 -
        accuracy`` (``--target-risk``)."""
        if self.floor is None:
            return (
                f"only {self.found} of {self.resamples} resamples (seed {self.seed}) reach the "
                "target: no floor chosen"
            )
        if self.estimate is None or self.low is None or self.high is None:
            return (
                f"no out-of-bag estimate at floor {self.floor:g}: none of {self.resamples} "
                f"resamples (seed {self.seed}) has {self.min_n} answered at it out of bag"
            )
        name, value, low, high = "accuracy", self.estimate, self.low, self.high
        if risk:
            name, value, low, high = "risk", 1.0 - value, 1.0 - high, 1.0 - low
        return (
            f"floor {self.floor:g}: out-of-bag {name} {value:.3g} [{low:.3g}, {high:.3g}] at "
            f"coverage {self.coverage or 0.0:.3g} over {self.used} of {self.resamples} "
            f"resamples (seed {self.seed}, min n {self.min_n})"
        )

    def in_sample_text(self, risk: bool = False) -> str:
        if self.in_sample is None:
            return "in sample nothing answered"
        value = 1.0 - self.in_sample if risk else self.in_sample
        return (
            f"in sample {'risk' if risk else 'accuracy'} {value:.3g} at coverage "
            f"{self.in_sample_coverage or 0.0:.3g}"
        )


def _pick(answered: object, right: object, target: float) -> int:
    """The index of the floor of the largest coverage whose accuracy reaches ``target``
    (``answered``, ``right``: per floor counts), the lowest of equal coverage; -1: none."""
    import numpy as np

    a = np.asarray(answered, dtype=np.float64)
    r = np.asarray(right, dtype=np.float64)
    # accuracy >= target, compared as right >= target * answered (no division by zero)
    ok = (a > 0) & (r >= target * a - 1e-12)
    if not ok.any():
        return -1
    cover = np.where(ok, a, -1.0)
    return int(np.argmax(cover))  # argmax takes the first (lowest floor) of equal coverage


def oob_selective(
    states: Sequence[Sequence[int]],
    floors: Sequence[float],
    target: float,
    *,
    resamples: int = OOB_RESAMPLES,
    seed: int = OOB_SEED,
    quantile: float = CHOICE_QUANTILE,
    min_n: int = OOB_MIN_N,
) -> SelectiveGuard:
    """``states[f][i]``: record ``i``'s state at ``floors[f]`` (:data:`NOT_ANSWERED`,
    :data:`WRONG`, :data:`RIGHT`). The floor by the module's rule."""
    import numpy as np

    grid = np.asarray(states, dtype=np.int8).reshape(len(floors), -1)
    n = grid.shape[1]
    answered = (grid != NOT_ANSWERED).astype(np.float64)
    right = (grid == RIGHT).astype(np.float64)
    total_a, total_r = answered.sum(axis=1), right.sum(axis=1)

    def refused(found: int, floor: float | None = None) -> SelectiveGuard:
        return SelectiveGuard(
            target, floor, None, None, None, None, resamples, 0, seed, min_n, False, found
        )

    if n == 0 or not floors:
        return refused(0)
    rng = np.random.default_rng(seed)
    picks = np.full(resamples, -1)
    oob_a = np.zeros((resamples, len(floors)))
    oob_r = np.zeros((resamples, len(floors)))
    oob_n = np.zeros(resamples)
    for b in range(resamples):
        counts = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        picks[b] = _pick(answered @ counts, right @ counts, target)
        out = (counts == 0).astype(np.float64)
        oob_a[b], oob_r[b], oob_n[b] = answered @ out, right @ out, out.sum()
    chosen = np.sort(picks[picks >= 0])
    if not len(chosen) or 2 * len(chosen) < resamples:
        return refused(len(chosen))
    low_at = max(0, math.ceil(0.5 * len(chosen)) - 1)
    high_at = max(low_at, math.ceil(quantile * len(chosen)) - 1)
    candidates = sorted({int(f) for f in chosen[low_at : high_at + 1]})
    best = candidates[0]
    for f in candidates:
        usable = oob_a[:, f] >= min_n
        if 2 * int(usable.sum()) >= resamples:
            accuracy = oob_r[usable, f] / oob_a[usable, f]
            if accuracy.mean() >= target:
                best = f
                break
    usable = oob_a[:, best] >= min_n
    floor = float(floors[best])
    if not usable.any():
        return refused(len(chosen), floor)
    accuracy = np.sort(oob_r[usable, best] / oob_a[usable, best])
    estimate = float(accuracy.mean())
    coverage = float((oob_a[usable, best] / np.maximum(oob_n[usable], 1.0)).mean())
    used = int(usable.sum())
    in_a, in_r = float(total_a[best]), float(total_r[best])
    return SelectiveGuard(
        target,
        floor,
        estimate,
        float(np.percentile(accuracy, 2.5)),
        float(np.percentile(accuracy, 97.5)),
        coverage,
        resamples,
        used,
        seed,
        min_n,
        estimate >= target and 2 * used >= resamples,
        len(chosen),
        in_r / in_a if in_a else None,
        in_a / n,
    )

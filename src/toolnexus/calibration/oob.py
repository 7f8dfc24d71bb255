"""Floors chosen out of bag (issue 35 item 4): a floor chosen and scored on the same rows is
optimistic on a small sample, so ``--write-thresholds`` chooses it on bootstrap resamples and
scores it on the rows each resample left out. Pure.

The rule, in two passes over the same ``resamples`` draws (``random.Random(seed)``, ``n`` rows
with replacement each):

1. per resample, the lowest cut-point whose drawn rows reach the target
   (``threshold_for_precision``, the report's own search);
2. the candidates are those cut-points from their median up to their :data:`CHOICE_QUANTILE`
   quantile (nearest rank: each one of them). Per resample, each candidate's precision on the
   rows the resample did not draw (out of bag), when at least :data:`OOB_MIN_N` of them are at
   or above it (fewer say nothing: a floor above which one or two rows sit is "right" by
   luck); a candidate's estimate is the mean of those, with their 2.5 and 97.5 percentiles;
3. the floor is the lowest candidate whose estimate reaches the target over at least half the
   resamples; none does: the median's numbers, refused.

Not the lowest cut that just reaches the target on one sample: it sits at the target's edge and
misses it by a hair out of bag about half the time. The median is the choice made out of bag;
stepping up from it, at most to the 0.75 quantile, buys the margin with coverage. (Precision is
not monotonic in the floor: a higher floor is not always safer, so each step is measured, not
assumed.)

A floor is refused when fewer than half the resamples reach the target at all, or when no
candidate's estimate reaches it; the refusal names the numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..metrics import threshold_for_precision

__all__ = ["CHOICE_QUANTILE", "OOB_MIN_N", "OOB_RESAMPLES", "OOB_SEED", "OobGuard", "oob_guard"]

OOB_RESAMPLES = 200
OOB_SEED = 0
#: Which of the resamples' cut-points is written (nearest rank, of those sorted ascending).
CHOICE_QUANTILE = 0.75
#: The fewest out-of-bag answers at the floor a resample's estimate rests on.
OOB_MIN_N = 5


@dataclass(frozen=True)
class OobGuard:
    """A side's floor at ``target`` precision, chosen out of bag: ``floor`` (None: fewer than
    half the resamples reach the target; ``found`` of them did), ``estimate`` (mean out-of-bag
    precision at ``floor``; None when no resample had one), its 95% percentile
    ``low``..``high``, ``used`` of ``resamples`` resamples with an estimate (seed ``seed``),
    each resting on at least ``min_n`` out-of-bag answers, and whether the floor is
    ``accepted``."""

    target: float
    estimate: float | None
    low: float | None
    high: float | None
    resamples: int
    used: int
    seed: int
    min_n: int
    accepted: bool
    floor: float | None = None
    found: int = 0

    def text(self) -> str:
        """``out-of-bag precision 0.71 [0.52, 0.88] over 187 of 200 resamples (seed 0, min n
        3)``: the numbers a refusal names."""
        if self.floor is None:
            return (
                f"only {self.found} of {self.resamples} resamples (seed {self.seed}) reach the "
                "target: no floor chosen"
            )
        if self.estimate is None:
            return (
                f"no out-of-bag estimate at floor {self.floor:g}: none of {self.resamples} "
                f"resamples (seed {self.seed}) has {self.min_n} answers at or above it out of bag"
            )
        return (
            f"floor {self.floor:g}: out-of-bag precision {self.estimate:.3g} [{self.low:.3g}, "
            f"{self.high:.3g}] over {self.used} of {self.resamples} resamples (seed {self.seed}, "
            f"min n {self.min_n})"
        )


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile by linear interpolation (numpy's default), of sorted values."""
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _draws(n: int, resamples: int, seed: int) -> Iterator[list[int]]:
    """The same ``resamples`` draws of ``n`` rows, for each pass."""
    rng = random.Random(seed)
    for _ in range(resamples if n else 0):
        yield [rng.randrange(n) for _ in range(n)]


def oob_guard(
    y_true: Sequence[int],
    y_prob: Sequence[float],
    target: float,
    *,
    resamples: int = OOB_RESAMPLES,
    seed: int = OOB_SEED,
    quantile: float = CHOICE_QUANTILE,
    min_n: int = OOB_MIN_N,
) -> OobGuard:
    """The yes side's floor (``p >= floor``) at ``target`` precision, chosen and estimated out
    of bag (the module's rule); for the no side pass ``1 - y`` and ``1 - p``."""
    n = len(y_true)
    cuts = []
    for drawn in _draws(n, resamples, seed):
        cut = threshold_for_precision(
            [y_true[i] for i in drawn], [y_prob[i] for i in drawn], target
        ).threshold
        if cut is not None:
            cuts.append(cut)
    if not cuts or 2 * len(cuts) < resamples:
        return OobGuard(target, None, None, None, resamples, 0, seed, min_n, False, None, len(cuts))
    cuts.sort()
    # The candidates: the resamples' cuts from their median to their CHOICE_QUANTILE, lowest
    # first; the first whose out-of-bag estimate reaches the target is the floor.
    low_at = max(0, math.ceil(0.5 * len(cuts)) - 1)
    high_at = max(low_at, math.ceil(quantile * len(cuts)) - 1)
    candidates = sorted(set(cuts[low_at : high_at + 1]))
    per_candidate: list[list[float]] = [[] for _ in candidates]
    for drawn in _draws(n, resamples, seed):
        seen = set(drawn)
        out = [(y_prob[i], y_true[i]) for i in range(n) if i not in seen]
        for values, floor in zip(per_candidate, candidates, strict=True):
            said = [y for p, y in out if p >= floor]
            if len(said) >= min_n:
                values.append(sum(said) / len(said))
    chosen = 0
    for at, values in enumerate(per_candidate):
        if values and 2 * len(values) >= resamples and sum(values) / len(values) >= target:
            chosen = at
            break
    floor, values = candidates[chosen], per_candidate[chosen]
    if not values:
        return OobGuard(
            target, None, None, None, resamples, 0, seed, min_n, False, floor, len(cuts)
        )
    values.sort()
    estimate = sum(values) / len(values)
    return OobGuard(
        target,
        estimate,
        _percentile(values, 0.025),
        _percentile(values, 0.975),
        resamples,
        len(values),
        seed,
        min_n,
        estimate >= target and 2 * len(values) >= resamples,
        floor,
        len(cuts),
    )

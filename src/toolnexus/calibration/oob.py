"""The out-of-bag guard on a chosen cut-point (issue 35 item 4): a floor chosen and scored on
the same rows is optimistic on a small sample, so before ``--write-thresholds`` writes one it is
chosen again on bootstrap resamples and scored on the rows each resample left out. Pure.

Per resample: draw ``n`` rows with replacement (``random.Random(seed)``), search the cut-point on
the drawn rows with the same search as the report (``threshold_for_precision``), and measure
its precision on the rows not drawn (out of bag). A resample whose drawn rows reach no
cut-point, or whose left-out rows answer nothing at it, has no estimate; the guard says how many
had one. The estimate is the mean of the out-of-bag precisions, with their 2.5 and 97.5
percentiles; a floor whose estimate misses the target, or that fewer than half the resamples
could find, is refused.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ..metrics.measures import threshold_for_precision

__all__ = ["OOB_RESAMPLES", "OOB_SEED", "OobGuard", "oob_guard"]

OOB_RESAMPLES = 200
OOB_SEED = 0


@dataclass(frozen=True)
class OobGuard:
    """What the resamples say of a side's cut-point at ``target`` precision: ``estimate`` (mean
    out-of-bag precision; None when no resample had one), its 95% percentile ``low``..``high``,
    ``used`` of ``resamples`` resamples with an estimate (seed ``seed``), ``min_n`` the fewest
    out-of-bag answers an estimate rests on, and whether the floor is ``accepted``."""

    target: float
    estimate: float | None
    low: float | None
    high: float | None
    resamples: int
    used: int
    seed: int
    min_n: int
    accepted: bool

    def text(self) -> str:
        """``out-of-bag precision 0.71 [0.52, 0.88] over 187 of 200 resamples (seed 0, min n
        3)``: the numbers a refusal names."""
        if self.estimate is None:
            return (
                f"no out-of-bag estimate: none of {self.resamples} resamples (seed {self.seed}) "
                "found a cut-point answered out of bag"
            )
        return (
            f"out-of-bag precision {self.estimate:.3g} [{self.low:.3g}, {self.high:.3g}] over "
            f"{self.used} of {self.resamples} resamples (seed {self.seed}, min n {self.min_n})"
        )


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q`` quantile by linear interpolation (numpy's default), of sorted values."""
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def oob_guard(
    y_true: Sequence[int],
    y_prob: Sequence[float],
    target: float,
    *,
    resamples: int = OOB_RESAMPLES,
    seed: int = OOB_SEED,
) -> OobGuard:
    """The guard on the yes side (``p >= cut``) at ``target`` precision; for the no side pass
    ``1 - y`` and ``1 - p``."""
    n = len(y_true)
    rng = random.Random(seed)
    values: list[float] = []
    min_n = 0
    for _ in range(resamples if n else 0):
        drawn = [rng.randrange(n) for _ in range(n)]
        seen = set(drawn)
        cut = threshold_for_precision(
            [y_true[i] for i in drawn], [y_prob[i] for i in drawn], target
        ).threshold
        if cut is None:
            continue
        said = [y_true[i] for i in range(n) if i not in seen and y_prob[i] >= cut]
        if not said:
            continue
        values.append(sum(said) / len(said))
        min_n = len(said) if not min_n else min(min_n, len(said))
    if not values:
        return OobGuard(target, None, None, None, resamples, 0, seed, 0, False)
    values.sort()
    estimate = sum(values) / len(values)
    accepted = estimate >= target and 2 * len(values) >= resamples
    return OobGuard(
        target,
        estimate,
        _percentile(values, 0.025),
        _percentile(values, 0.975),
        resamples,
        len(values),
        seed,
        min_n,
        accepted,
    )

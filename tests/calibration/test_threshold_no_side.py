"""The noul threshold table gains its "no" side (issue 35 item 3): at each floor ``cut`` of the
0.05 grid, answering no for ``p <= 1 - cut``, compared in integer hundredths, so an answer at
exactly ``1 - cut`` is counted (the published sweep's "no"-favourable questions were miscounted
at 8 of 20 floors without it)."""

from __future__ import annotations

import random

import pytest

from toolnexus.calibration.thresholds import threshold_table


def _independent(ys: list[int], ps: list[float]) -> list[tuple[float | None, float | None, float]]:
    out = []
    negatives = ys.count(0)
    for i in range(21):
        floor = i * 5  # hundredths
        said = [y for y, p in zip(ys, ps, strict=True) if round(p * 100) <= 100 - floor]
        right = said.count(0)
        out.append(
            (
                right / len(said) if said else None,
                right / negatives if negatives else None,
                len(said) / len(ys),
            )
        )
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_no_side_counts_in_hundredths(seed: int) -> None:
    rng = random.Random(seed)
    # two-decimal wire values, many of them exactly on 1 - floor (0.35 for 0.65, ...)
    ps = [
        rng.choice([i / 20 for i in range(21)]) if rng.random() < 0.5 else rng.randint(0, 100) / 100
        for _ in range(300)
    ]
    ys = [int(rng.random() < p) for p in ps]
    rows = threshold_table(ys, ps)
    got = [(r.no_precision, r.no_recall, r.no_coverage) for r in rows]
    assert got == _independent(ys, ps)


def test_an_answer_at_exactly_one_minus_the_floor_is_a_no() -> None:
    rows = {r.cut: r for r in threshold_table([0, 1], [0.1, 0.95])}
    assert 0.1 > 1 - 0.9  # the floating-point trap the hundredths avoid
    assert rows[0.9].no_coverage == 0.5 and rows[0.9].no_precision == 1.0

"""ECE with its uncertainty (issue 24 §1): "for every ece, a bootstrap interval (ece_interval,
95% percentile, a fixed seed and resample count so output is reproducible) and the noise floor
(ece_null: the median and 95th percentile of the ECE that a perfectly calibrated model would
show on these same predicted probabilities, by drawing outcomes from them)"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.uncertainty import (
    DRAWS,
    SEED,
    ece_binned,
    ece_interval,
    ece_null,
)
from toolnexus.metrics.measures import expected_calibration_error


def ece(ps: Sequence[float], ys: Sequence[int]) -> float | None:
    """The report's ECE, in this file's (probabilities, labels) order."""
    return expected_calibration_error(ys, ps)


wire = st.integers(0, 100).map(lambda i: i / 100)
probability = st.floats(0.0, 1.0, allow_nan=False)
pairs = st.lists(st.tuples(st.one_of(wire, probability), st.integers(0, 1)), min_size=1)


@settings(max_examples=80)
@given(pairs)
def test_ece_binned_is_the_reports_ten_bin_ece(data: list[tuple[float, int]]) -> None:
    """The vectorised ECE equals ``metrics.measures.ece`` (10 bins, 1.0 in the last) on wire and
    arbitrary probabilities, bin edges included."""
    ps, ys = [p for p, _ in data], [y for _, y in data]
    assert ece_binned(ys, ps) == pytest.approx(ece(ps, ys), abs=1e-12)


def _sample(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.0, 1.0, n), 2)
    y = (rng.random(n) < np.clip(p * 1.2, 0, 1)).astype(int)
    return y, p


def test_interval_is_reproducible_for_a_seed_and_brackets_the_resamples() -> None:
    """Same data, same seed: the same interval; another seed moves it; low <= high."""
    y, p = _sample(1, 400)
    first, again, other = ece_interval(y, p), ece_interval(y, p), ece_interval(y, p, seed=7)
    assert first == again
    assert first is not None and other is not None
    assert (first.low, first.high) != (other.low, other.high)
    assert 0.0 <= first.low <= first.high
    assert first.resamples == DRAWS and first.seed == SEED
    assert first.ece == pytest.approx(ece(p.tolist(), y.tolist()), abs=1e-12)


def test_resampling_does_not_depend_on_record_order() -> None:
    """The draws are over distinct (p, y) atoms, so shuffling the records changes nothing."""
    y, p = _sample(2, 300)
    order = np.random.default_rng(3).permutation(len(p))
    assert ece_interval(y, p) == ece_interval(y[order], p[order])
    assert ece_null(p) == ece_null(p[order])


def test_floor_is_reproducible_for_a_seed() -> None:
    _, p = _sample(4, 250)
    first = ece_null(p)
    assert first == ece_null(p)
    assert first != ece_null(p, seed=11)
    assert first is not None and 0.0 < first.median <= first.p95


@pytest.mark.parametrize(
    ("n", "decimals"),
    [
        pytest.param(150, None, id="continuous-150"),
        pytest.param(100, 2, id="wire-100"),
    ],
)
def test_the_floor_is_right_for_outcomes_drawn_from_the_probabilities(
    n: int, decimals: int | None
) -> None:
    """Acceptance: "for outcomes drawn from the predicted probabilities, the ECE is at or under
    the floor's 95th percentile in 90–99% of 200 seeds"."""
    p = np.random.default_rng(2024).uniform(0.0, 1.0, n)
    if decimals is not None:
        p = np.round(p, decimals)
    floor = ece_null(p)
    assert floor is not None
    under = 0
    for seed in range(200):
        y = (np.random.default_rng(seed).random(len(p)) < p).astype(int)
        under += not floor.above(ece(p.tolist(), y.tolist()))  # type: ignore[arg-type]
    assert 180 <= under <= 198, under


def test_a_miscalibrated_sample_and_its_interval_are_above_the_floor() -> None:
    """An over-confident sample of 1,000 (true rate 0.7 where it says 0.95) is above the floor,
    and its interval sits above the floor too: the verdict the table prints."""
    p = np.full(1000, 0.95)
    y = (np.random.default_rng(5).random(1000) < 0.7).astype(int)
    floor, interval = ece_null(p), ece_interval(y, p)
    assert floor is not None and interval is not None
    assert floor.above(interval.ece)
    assert interval.low > floor.p95


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: ece_binned([], []), id="ece"),
        pytest.param(lambda: ece_interval([], []), id="interval"),
        pytest.param(lambda: ece_null([]), id="floor"),
    ],
)
def test_no_data_is_none_not_zero(call: object) -> None:
    assert call() is None  # type: ignore[operator]


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="one length"):
        ece_interval([1, 0], [0.5])


@pytest.mark.parametrize(
    "decimals", [pytest.param(None, id="continuous"), pytest.param(2, id="wire")]
)
def test_both_draws_match_a_direct_bootstrap_and_null(decimals: int | None) -> None:
    """Atoms (wire probabilities) and record-by-record draws (continuous ones) are the same
    resampling: both agree with the textbook loops, resampled records and Bernoulli outcomes."""
    rng = np.random.default_rng(8)
    p = rng.uniform(0.0, 1.0, 400)
    if decimals is not None:
        p = np.round(p, decimals)
    y = (rng.random(400) < np.clip(p * 0.8 + 0.1, 0, 1)).astype(int)
    direct = np.random.default_rng(99)
    boot = [ece_binned(y[i], p[i]) for i in (direct.integers(0, 400, 400) for _ in range(2000))]
    null = [ece_binned((direct.random(400) < p).astype(int), p) for _ in range(2000)]
    interval, floor = ece_interval(y, p), ece_null(p)
    assert interval is not None and floor is not None
    want = np.percentile(boot, [2.5, 97.5])
    assert (interval.low, interval.high) == pytest.approx(tuple(want), rel=0.1)
    assert (floor.median, floor.p95) == pytest.approx(tuple(np.percentile(null, [50, 95])), rel=0.1)


def test_the_bootstrap_sums_by_bin_in_column_order_with_no_matrix_product() -> None:
    """Issue 29: "a suite that passes on any machine". A matrix product let OpenBLAS choose the
    order of additions by the CPU it found, and a golden interval differed in its last digit on
    another machine; the per-bin sums are now made column by column, equal with ``==`` to a
    plain loop."""
    from toolnexus.calibration import uncertainty

    rng = np.random.default_rng(3)
    bins = np.sort(rng.integers(0, uncertainty.N_BINS, 57))
    weighted = rng.normal(size=(6, 57)) * 1e3
    got = uncertainty._sum_by_bin(weighted, bins)
    for r in range(6):
        want = [0.0] * uncertainty.N_BINS
        for c in range(57):
            want[bins[c]] += float(weighted[r, c])
        assert list(got[r]) == want

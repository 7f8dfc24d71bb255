"""Thresholds you can reuse (issue 24 §6): "per question, a consistent pair of cut-points (yes
from the search, no ≤ yes, valid under the rule that refuses inverted thresholds) ...; the noul
threshold table (precision, recall, coverage at each cut-point of a grid)"."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.choice import COVERAGE_GRID
from toolnexus.calibration.thresholds import threshold_pair, threshold_table
from toolnexus.core.qtypes.noul import NoulAnswer
from toolnexus.core.validation import threshold_band
from toolnexus.metrics.measures import threshold_for_precision

wire = st.integers(0, 100).map(lambda i: i / 100)
samples = st.lists(st.tuples(wire, st.integers(0, 1)), min_size=1, max_size=60)


@settings(max_examples=150)
@given(samples, st.sampled_from([0.5, 0.7, 0.9, 0.95]))
def test_the_pair_is_consistent_and_reaches_the_target(
    data: list[tuple[float, int]], target: float
) -> None:
    """``yes`` is the report's search; ``no <= yes``; both sides reach the target precision
    when they are found, measured through ``threshold_band`` itself (inclusive cut-points)."""
    ps, ys = [p for p, _ in data], [y for _, y in data]
    pair = threshold_pair(ys, ps, target)
    found = threshold_for_precision(ys, ps, target)
    assert pair.yes == found.threshold
    if pair.yes is None:
        assert pair.thresholds() is None and pair.reason is not None
        return
    cuts = pair.thresholds()
    assert cuts is not None and 0.0 <= cuts["no"] <= cuts["yes"] <= 1.0
    bands = [threshold_band(NoulAnswer(noul=p), cuts) for p in ps]
    said_yes = [y for y, b in zip(ys, bands, strict=True) if b == "yes"]
    assert sum(said_yes) / len(said_yes) >= target
    said_no = [y for y, b in zip(ys, bands, strict=True) if b == "no"]
    if said_no:
        assert sum(1 for y in said_no if not y) / len(said_no) == pytest.approx(pair.no_precision)


def test_the_no_side_is_the_highest_cut_reaching_the_target() -> None:
    """yes: the lowest cut with precision >= 0.75 (0.6: 3 of 4); no: the highest cut where
    answering no is right 3 times in 4 (0.4), which leaves an uncertain band between."""
    ps = [0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9]
    ys = [0, 0, 1, 0, 1, 0, 1, 1]
    pair = threshold_pair(ys, ps, 0.75)
    assert (pair.yes, pair.no) == (0.6, 0.4)
    assert (pair.yes_precision, pair.yes_recall) == (0.75, 0.75)
    assert (pair.no_precision, pair.no_recall) == (0.75, 0.75)


def test_a_no_found_above_yes_is_capped_at_yes() -> None:
    """At a low target both searches reach past each other; no is capped, never inverted."""
    ps = [0.2, 0.4, 0.6, 0.8]
    ys = [1, 0, 1, 0]
    pair = threshold_pair(ys, ps, 0.5)
    assert pair.yes is not None and pair.no == pair.yes


def test_no_reaching_the_target_on_the_no_side_reads_zero() -> None:
    pair = threshold_pair([1, 1, 0, 1], [0.1, 0.2, 0.9, 0.95], 0.9)
    assert pair.no == 0.0 and pair.yes == 0.95


def test_no_yes_reaching_the_target_is_no_pair_with_a_reason() -> None:
    pair = threshold_pair([0, 0, 1], [0.9, 0.8, 0.1], 0.9)
    assert pair.thresholds() is None
    assert pair.reason == "no cut-point reaches precision 0.9 for yes"


@settings(max_examples=100)
@given(samples)
def test_the_table_is_precision_recall_coverage_at_every_grid_cut(
    data: list[tuple[float, int]],
) -> None:
    ps, ys = [p for p, _ in data], [y for _, y in data]
    rows = threshold_table(ys, ps)
    assert [r.cut for r in rows] == list(COVERAGE_GRID)
    positives = sum(ys)
    for row in rows:
        said = [y for p, y in zip(ps, ys, strict=True) if p >= row.cut]
        assert row.coverage == len(said) / len(ps)
        assert row.precision == (sum(said) / len(said) if said else None)
        assert row.recall == (sum(said) / positives if positives else None)

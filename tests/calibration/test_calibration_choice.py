"""Choice calibration beyond top-1 (issue 24 §3): "per-option (one-vs-rest) reliability and ece
for each option with at least 30 labelled records, and accuracy against coverage (answering
only when confidence ≥ c, for every c on a grid) so a user can see what a confidence floor
buys"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.choice import (
    COVERAGE_GRID,
    MIN_OPTION_LABELS,
    accuracy_coverage,
    one_vs_rest,
)
from toolnexus.metrics.measures import expected_calibration_error


def ece(ps: Sequence[float], ys: Sequence[int]) -> float | None:
    """The report's ECE, in this file's (probabilities, labels) order."""
    return expected_calibration_error(ys, ps)


def _sample(n: int, seed: int) -> tuple[list[str], list[dict[str, float]]]:
    rng = np.random.default_rng(seed)
    options = ("desk", "floor", "wall")
    rows, labels = [], []
    for _ in range(n):
        q = rng.dirichlet([1.0, 1.0, 0.1])
        rows.append({o: round(float(v), 2) for o, v in zip(options, q, strict=True)})
        labels.append(options[int(rng.choice(3, p=q))])
    return labels, rows


def test_each_option_with_30_labels_gets_its_own_reliability_and_ece() -> None:
    labels, rows = _sample(200, 1)
    counts = {o: labels.count(o) for o in ("desk", "floor", "wall")}
    assert counts["wall"] < MIN_OPTION_LABELS <= min(counts["desk"], counts["floor"])
    out = {r.option: r for r in one_vs_rest(labels, rows, ("desk", "floor", "wall"))}
    for option in ("desk", "floor"):
        ps = [row[option] for row in rows]
        ys = [int(y == option) for y in labels]
        assert out[option].ece == ece(ps, ys)
        assert sum(b["n"] for b in out[option].bins) == len(rows)
        assert out[option].labelled == counts[option] and out[option].skipped is None
    wall = out["wall"]
    assert wall.ece is None and wall.bins == []
    assert wall.skipped == f"{counts['wall']} records labelled 'wall', fewer than 30"


def test_an_option_missing_from_a_record_counts_zero() -> None:
    labels = ["a"] * 30
    out = one_vs_rest(labels, [{"b": 1.0}] * 30, ("a",))
    assert out[0].ece == 1.0


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 100).map(lambda i: i / 100), st.booleans())))
def test_accuracy_against_coverage_is_what_a_confidence_floor_buys(
    data: list[tuple[float, bool]],
) -> None:
    """At every floor ``c`` of the grid: answering only when confidence >= c (inclusive)."""
    confidence, correct = [c for c, _ in data], [k for _, k in data]
    points = accuracy_coverage(correct, confidence)
    assert [p.floor for p in points] == list(COVERAGE_GRID)
    for point in points:
        kept = [k for c, k in zip(confidence, correct, strict=True) if c >= point.floor]
        assert point.answered == len(kept)
        assert point.coverage == (len(kept) / len(data) if data else 0.0)
        assert point.accuracy == (sum(kept) / len(kept) if kept else None)


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="outcomes"):
        accuracy_coverage([True], [0.5, 0.6])

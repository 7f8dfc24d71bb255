"""The metrics' numpy implementations give the exact bits of the plain loops (issue 16: the
report's numbers are byte-for-byte what they were; ``metrics.measures``: "Sums run in record
order, so a run gives the same last digit however it was read").

Each metric has one definition, in ``toolnexus.metrics.measures``; the loops below are kept only
as the tests' reference (issue 16: "used by the accumulators or kept only as the tests'
reference — not both"). They are the definitions as the accumulators once ran them: one
record at a time, ``total += term``, starting from ``0.0``. Every comparison is ``==`` on the
floats, never ``approx``: a pairwise or compensated sum, or numpy's own ``log``, would differ
in a last bit and fail here.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter
from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.scores import rps, rps_columns, rps_term
from toolnexus.metrics.arrays import SUM_BLOCK, ProbabilityRows, in_order_sum, sum_in_order
from toolnexus.metrics.measures import (
    EPS,
    N_BINS,
    accuracy_score,
    brier_score_loss,
    confusion_matrix,
    log_loss,
    mean_absolute_error,
    multiclass_brier_score,
    multiclass_log_loss,
    reliability,
    score_groups,
    within_one,
)

probability = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
wire_probability = st.integers(0, 100).map(lambda i: i / 100)
any_probability = st.one_of(probability, wire_probability)
binary = st.lists(st.tuples(any_probability, st.integers(0, 1)), min_size=1, max_size=300)


# --- the reference loops --------------------------------------------------------------------


def loop_reliability(y_true: list[int], y_prob: list[float]) -> tuple[list[int], ...]:
    n, sum_p, sum_y = [0] * N_BINS, [0.0] * N_BINS, [0.0] * N_BINS
    for y, p in zip(y_true, y_prob, strict=True):
        b = min(max(int(p * N_BINS), 0), N_BINS - 1)
        n[b] += 1
        sum_p[b] += p
        sum_y[b] += y
    return n, sum_p, sum_y  # type: ignore[return-value]


def loop_brier(y_true: list[int], y_prob: list[float]) -> float:
    total = 0.0
    for y, p in zip(y_true, y_prob, strict=True):
        total += (p - y) ** 2
    return total / len(y_true)


def loop_log_loss(y_true: list[int], y_prob: list[float]) -> float:
    total = 0.0
    for y, p in zip(y_true, y_prob, strict=True):
        c = EPS if p < EPS else 1.0 - EPS if p > 1.0 - EPS else p
        total -= math.log(c) if y else math.log(1.0 - c)
    return total / len(y_true)


def loop_multiclass_brier(y_true: list[int], rows: list[list[float]]) -> float:
    total = 0.0
    for y, row in zip(y_true, rows, strict=True):
        squares = 0.0
        for p in row:
            squares += p * p
        total += (squares - 2.0 * (row[y] if y < len(row) else 0.0)) + 1.0
    return total / len(y_true)


def loop_multiclass_log_loss(y_true: list[int], rows: list[list[float]]) -> float:
    total = 0.0
    for y, row in zip(y_true, rows, strict=True):
        p = row[y] if y < len(row) else 0.0
        total += math.log(max(EPS, min(1.0 - EPS, p)))
    return -total / len(y_true)


def loop_mae(y_true: list[int], y_pred: list[float]) -> float:
    total = 0.0
    for y, p in zip(y_true, y_pred, strict=True):
        total += abs(p - y)
    return total / len(y_true)


def loop_rps(y_true: list[int], rows: list[list[float]]) -> float:
    total = 0.0
    for y, row in zip(y_true, rows, strict=True):
        total += rps_term(y, row)
    return total / len(y_true)


# --- the bits -------------------------------------------------------------------------------


@given(binary)
def test_binary_metrics_have_the_loops_bits(pairs: list[tuple[float, int]]) -> None:
    ps = [p for p, _ in pairs]
    ys = [y for _, y in pairs]
    # the accumulators' own containers, and plain lists: the same bits from both
    for y_true, y_prob in ((ys, ps), (array("b", ys), array("d", ps))):
        r = reliability(y_true, y_prob)
        assert (r.n, r.sum_p, r.sum_y) == loop_reliability(ys, ps)
        assert brier_score_loss(y_true, y_prob) == loop_brier(ys, ps)
        assert log_loss(y_true, y_prob) == loop_log_loss(ys, ps)


@st.composite
def rows_of_one_width(draw: st.DrawFn) -> tuple[list[int], list[list[float]]]:
    width = draw(st.integers(2, 6))
    n = draw(st.integers(1, 80))
    rows = [draw(st.lists(any_probability, min_size=width, max_size=width)) for _ in range(n)]
    labels = [draw(st.integers(0, width - 1)) for _ in range(n)]
    return labels, rows


def _probability_rows(rows: list[list[float]]) -> ProbabilityRows:
    values = array("d", [p for row in rows for p in row])
    ends = array("q")
    for row in rows:
        ends.append((ends[-1] if ends else 0) + len(row))
    return ProbabilityRows(values, ends)


@given(rows_of_one_width())
def test_multiclass_metrics_one_width_in_numpy_have_the_loops_bits(
    data: tuple[list[int], list[list[float]]],
) -> None:
    """Rows of one width are one 2-D array (``ProbabilityRows.width``); the same rows as plain
    lists take the generic path: both give the loop's bits."""
    labels, rows = data
    packed = _probability_rows(rows)
    assert packed.width == len(rows[0])
    for y_prob in (packed, rows):
        assert multiclass_brier_score(array("l", labels), y_prob) == loop_multiclass_brier(
            labels, rows
        )
        assert multiclass_log_loss(array("l", labels), y_prob) == loop_multiclass_log_loss(
            labels, rows
        )


def test_ragged_rows_and_labels_outside_a_row_take_the_generic_path() -> None:
    """A row shorter than the class list (a class first met after it) counts 0 for the classes
    it lacks."""
    rows = [[0.7, 0.3], [0.2, 0.5, 0.3], [0.1, 0.9]]
    labels = [2, 1, 0]
    packed = _probability_rows(rows)
    assert packed.width == 0
    assert multiclass_brier_score(labels, packed) == loop_multiclass_brier(labels, rows)
    assert multiclass_log_loss(labels, packed) == loop_multiclass_log_loss(labels, rows)
    # one width, but a label past it: the generic path too
    same = _probability_rows([[0.7, 0.3], [0.4, 0.6]])
    assert same.width == 2
    assert multiclass_brier_score([2, 0], same) == loop_multiclass_brier(
        [2, 0], [[0.7, 0.3], [0.4, 0.6]]
    )


@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0.0, 4.0)), min_size=1, max_size=300))
def test_score_metrics_have_the_loops_bits(pairs: list[tuple[int, float]]) -> None:
    levels = [y for y, _ in pairs]
    scores = [s for _, s in pairs]
    assert mean_absolute_error(array("b", levels), array("d", scores)) == loop_mae(levels, scores)
    picks = [min(4, int(s)) for s in scores]
    hits = sum(1 for y, p in zip(levels, picks, strict=True) if abs(p - y) <= 1)
    assert within_one(array("b", levels), array("b", picks)) == hits / len(levels)


@given(rows_of_one_width())
def test_rps_by_columns_in_numpy_has_the_loops_bits(
    data: tuple[list[int], list[list[float]]],
) -> None:
    labels, rows = data
    columns = [array("d", column) for column in zip(*rows, strict=True)]
    assert rps_columns(labels, columns) == loop_rps(labels, rows)
    assert rps(labels, rows) == loop_rps(labels, rows)


def test_a_sum_longer_than_a_block_carries_its_total_across_blocks() -> None:
    """``sum_in_order`` adds in blocks of ``SUM_BLOCK``; the total is the one-by-one sum, not a
    sum of block sums (which would differ in the last bits)."""
    import numpy as np

    terms = [((i * 7919) % 1000) / 997.0 + 1e-9 * i for i in range(2 * SUM_BLOCK + 17)]
    expected = reduce(operator.add, terms, 0.0)
    assert sum_in_order(np.array(terms)) == expected == in_order_sum(terms)
    blockwise = sum(
        reduce(operator.add, terms[i : i + SUM_BLOCK], 0.0) for i in range(0, len(terms), SUM_BLOCK)
    )
    assert blockwise != expected, "the data must tell a blockwise sum from the in-order one"


@settings(max_examples=50)
@given(binary)
def test_score_groups_count_what_counters_count(pairs: list[tuple[float, int]]) -> None:
    ps = [p for p, _ in pairs]
    ys = [y for _, y in pairs]
    total = Counter(ps)
    positive = Counter(p for p, y in pairs if y)
    assert score_groups(array("b", ys), array("d", ps)) == [
        (p, total[p], positive[p]) for p in sorted(total)
    ]


def test_score_groups_count_minus_zero_as_zero() -> None:
    """A wire probability of -0.0 passes ``0 <= p``; it is the same score as 0.0, printed once
    and without a sign."""
    groups = score_groups([1, 0, 1], [-0.0, 0.0, 0.5])
    assert groups == [(0.0, 2, 1), (0.5, 1, 1)]
    assert math.copysign(1.0, groups[0][0]) == 1.0


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=200),
    st.lists(st.integers(-2, 7), max_size=8, unique=True),
)
def test_confusion_of_class_indices_equals_the_pairs_counted(
    pairs: list[tuple[int, int]], labels: list[int]
) -> None:
    """The accumulators' class indices are counted by one bincount; a label no pair has (the
    report gives unseen labels negative indices) is a row and a column of zeros."""
    y_true = array("l", [t for t, _ in pairs])
    y_pred = array("l", [p for _, p in pairs])
    counted = Counter(pairs)
    assert confusion_matrix(y_true, y_pred, labels) == tuple(
        tuple(counted[(t, p)] for p in labels) for t in labels
    )


def test_confusion_of_far_apart_indices_counts_the_pairs_met() -> None:
    """Hostile indices (10**12 apart) would make a table of every pair of 10**24 cells: the
    pairs met are counted instead."""
    y_true = array("q", [0, 10**12, 10**12])
    y_pred = array("q", [10**12, 10**12, 0])
    assert confusion_matrix(y_true, y_pred, [0, 10**12]) == ((0, 1), (1, 1))


@pytest.mark.parametrize(
    ("y_true", "y_pred", "share"),
    [
        pytest.param(array("b", [1, 0, 1]), array("b", [1, 1, 1]), 2 / 3, id="arrays"),
        pytest.param(["1", "a", "b"], [1, "a", "c"], 1 / 3, id="strings-never-cast"),
        pytest.param(array("l", [1, 2]), ["1", 2], 1 / 2, id="array-against-list"),
    ],
)
def test_accuracy_compares_as_python_does(y_true: object, y_pred: object, share: float) -> None:
    """numpy compares the accumulators' numeric arrays; anything else is compared by Python's
    ``==`` ("1" is not 1)."""
    assert accuracy_score(y_true, y_pred) == share  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "metric",
    [brier_score_loss, log_loss, mean_absolute_error, within_one, accuracy_score],
)
def test_lengths_that_differ_are_a_value_error(metric: object) -> None:
    with pytest.raises(ValueError, match="2 labels for 1"):
        metric([0, 1], [0.5])  # type: ignore[operator]


def test_one_vs_rest_compares_labels_as_python_does() -> None:
    """The report's class indices are compared in numpy; a list mixing "1" and 1 is compared by
    Python's ``==``, never cast to strings first (numpy would make 1 equal "1")."""
    from toolnexus.calibration.choice import one_vs_rest_columns

    column = [0.9, 0.8, 0.1, 0.2]
    mixed = one_vs_rest_columns(["1", 1, 1, "a"], {"one": column}, {"one": "1"}, min_labels=1)
    assert mixed[0].labelled == 1
    indices = one_vs_rest_columns(array("l", [2, 2, 0, 1]), {"two": column}, {"two": 2})
    assert indices[0].labelled == 2 and indices[0].skipped is not None

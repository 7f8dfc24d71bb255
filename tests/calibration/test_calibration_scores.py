"""The ranked probability score (issue 24 §2): "rps = 1/(K-1) * sum_{k=0}^{K-2} (P_k - O_k)^2,
P_k the predicted cumulative probability of levels 0..k, O_k the observed one; mean over
records. Example: probabilities (0.3, 0.2, 0.5), label 2 → (0.3² + 0.5²)/2 = 0.17"; acceptance:
"rps equals a direct implementation"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.scores import rps, rps_term


def _direct(labels: list[int], rows: list[list[float]]) -> float:
    """The definition written out with numpy: cumulative sums against a step at the label."""
    total = 0.0
    for y, row in zip(labels, rows, strict=True):
        k = len(row)
        cumulative = np.cumsum(row)[: k - 1]
        observed = (np.arange(k - 1) >= y).astype(float)
        total += float(np.sum((cumulative - observed) ** 2)) / (k - 1)
    return total / len(labels)


@pytest.mark.parametrize(
    ("probs", "label", "want"),
    [
        pytest.param([0.3, 0.2, 0.5], 2, 0.17, id="issue-example"),
        pytest.param([1.0, 0.0, 0.0], 0, 0.0, id="certain-and-right"),
        pytest.param([0.0, 0.0, 1.0], 0, 1.0, id="certain-two-levels-off"),
        pytest.param([0.0, 1.0, 0.0], 0, 0.5, id="one-level-off-costs-half"),
    ],
)
def test_rps_term(probs: list[float], label: int, want: float) -> None:
    assert rps_term(label, probs) == pytest.approx(want, abs=1e-12)


@st.composite
def records(draw: st.DrawFn) -> tuple[list[int], list[list[float]]]:
    k = draw(st.integers(2, 10))
    n = draw(st.integers(1, 30))
    rows = []
    for _ in range(n):
        weights = draw(st.lists(st.integers(0, 100), min_size=k, max_size=k))
        total = sum(weights) or 1
        rows.append([w / total for w in weights])
    labels = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    return labels, rows


@settings(max_examples=80)
@given(records())
def test_rps_equals_a_direct_implementation(data: tuple[list[int], list[list[float]]]) -> None:
    labels, rows = data
    assert rps(labels, rows) == pytest.approx(_direct(labels, rows), abs=1e-12)


@pytest.mark.parametrize(
    ("label", "probs", "message"),
    [
        pytest.param(0, [1.0], "at least 2 levels", id="one-level"),
        pytest.param(3, [0.5, 0.5], "outside 0..1", id="label-off-the-scale"),
    ],
)
def test_rps_refuses_what_it_cannot_score(label: int, probs: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rps_term(label, probs)


def test_rps_of_nothing_is_none() -> None:
    assert rps([], []) is None

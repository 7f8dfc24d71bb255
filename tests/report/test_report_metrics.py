"""The report's metrics (issue 12): "on random data (hypothesis) every metric equals
scikit-learn's where scikit-learn has it (accuracy, brier for binary, log_loss, roc_auc, macro
F1), and hand-checked small cases for the rest (ece, multi-class brier, within_one, threshold
search)". Issue 16: each metric has one definition, "a function over ``(y_true, y_prob)``
arrays with scikit-learn's argument order and names", which the accumulators use: both the
functions and the accumulators are checked against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as sk

from toolnexus.metrics.measures import (
    EPS,
    ReliabilityBin,
    accuracy_score,
    bin_index,
    brier_score_loss,
    expected_calibration_error,
    log_loss,
    macro_f1_score,
    mean_absolute_error,
    multiclass_brier_score,
    multiclass_log_loss,
    reliability,
    roc_auc_score,
    threshold_for_precision,
    within_one,
)
from toolnexus.report.accumulators import NoulStats
from toolnexus.report.levels import ScoreStats
from toolnexus.report.model import Confusion
from toolnexus.report.ranked import ChoiceStats

probability = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
# Two decimals, as System One answers: plenty of ties for AUROC and the threshold search.
wire_probability = st.integers(0, 100).map(lambda i: i / 100)
binary = st.lists(
    st.tuples(st.one_of(probability, wire_probability), st.integers(0, 1)), min_size=1
)
CLASSES = ["billing", "legal", "shipping", "technical"]  # sorted: scikit-learn orders columns so


def _close(a: float | None, b: float) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@given(binary)
def test_binary_metrics_equal_scikit_learn(pairs: list[tuple[float, int]]) -> None:
    """Each function takes (y_true, y_prob) as scikit-learn's namesake does."""
    ps = [p for p, _ in pairs]
    ys = [y for _, y in pairs]
    predicted = [int(p >= 0.5) for p in ps]
    assert _close(accuracy_score(ys, predicted), sk.accuracy_score(ys, predicted))
    assert _close(brier_score_loss(ys, ps), sk.brier_score_loss(ys, ps, pos_label=1))
    # scikit-learn clips at machine epsilon; ours clips at 1e-15 ("p clipped to [1e-15, 1 -
    # 1e-15]"), so it is handed the already clipped values (its own clip is then a no-op).
    clipped = np.clip(np.array(ps), EPS, 1 - EPS)
    assert _close(log_loss(ys, ps), sk.log_loss(ys, clipped, labels=[0, 1]))
    if 0 < sum(ys) < len(ys):
        assert _close(roc_auc_score(ys, ps), sk.roc_auc_score(ys, ps))
    else:
        assert roc_auc_score(ys, ps) is None  # one class only: undefined, never 0.5 or 0


@given(st.lists(st.tuples(st.sampled_from(CLASSES), st.sampled_from(CLASSES)), min_size=1))
def test_macro_f1_and_accuracy_equal_scikit_learn(rows: list[tuple[str, str]]) -> None:
    labels = [y for y, _ in rows]
    predicted = [p for _, p in rows]
    assert _close(
        macro_f1_score(labels, predicted),
        sk.f1_score(labels, predicted, average="macro", zero_division=0),
    )
    assert _close(accuracy_score(labels, predicted), sk.accuracy_score(labels, predicted))


@given(st.lists(st.tuples(st.integers(0, 9), st.floats(0.0, 9.0)), min_size=1))
def test_mean_absolute_error_equals_scikit_learn(pairs: list[tuple[int, float]]) -> None:
    levels = [y for y, _ in pairs]
    scores = [s for _, s in pairs]
    assert _close(mean_absolute_error(levels, scores), sk.mean_absolute_error(levels, scores))


@st.composite
def distributions(draw: st.DrawFn) -> tuple[list[dict[str, float]], list[str]]:
    n = draw(st.integers(1, 30))
    rows, labels = [], []
    for _ in range(n):
        weights = [draw(st.floats(0.01, 1.0)) for _ in CLASSES]
        total = sum(weights)
        rows.append({c: w / total for c, w in zip(CLASSES, weights, strict=True)})
        labels.append(draw(st.sampled_from(CLASSES)))
    return rows, labels


@given(distributions())
def test_multiclass_metrics_equal_scikit_learn(
    data: tuple[list[dict[str, float]], list[str]],
) -> None:
    rows, labels = data
    y_true = [CLASSES.index(y) for y in labels]
    y_prob = [[r[c] for c in CLASSES] for r in rows]
    assert math.isclose(
        multiclass_log_loss(y_true, y_prob) or 0.0,
        sk.log_loss(labels, y_prob, labels=CLASSES),
        rel_tol=1e-9,
    )
    assert math.isclose(
        multiclass_brier_score(y_true, y_prob) or 0.0,
        sk.brier_score_loss(labels, np.array(y_prob), labels=CLASSES, scale_by_half=False),
        rel_tol=1e-9,
        abs_tol=1e-12,
    )


def _noul(p: float) -> dict[str, object]:
    band = "yes" if p >= 0.8 else "no" if p <= 0.2 else "uncertain"
    return {"type": "noul", "noul": p, "band": band, "flags": []}


@settings(max_examples=50)
@given(binary)
def test_noul_accumulator_equals_scikit_learn(pairs: list[tuple[float, int]]) -> None:
    """The streaming accumulator the report uses gives the same numbers as scikit-learn."""
    labels = {f"i{i}": ("yes" if y else "no") for i, (_, y) in enumerate(pairs)}
    stats = NoulStats("q")
    for i, (p, _) in enumerate(pairs):
        stats.add(_noul(p), labels[f"i{i}"])
    m = stats.metrics()
    ps = [p for p, _ in pairs]
    ys = [y for _, y in pairs]
    assert _close(m.accuracy, sk.accuracy_score(ys, [p >= 0.5 for p in ps]))
    assert _close(m.brier, sk.brier_score_loss(ys, ps, pos_label=1))
    assert _close(m.log_loss, sk.log_loss(ys, np.clip(np.array(ps), EPS, 1 - EPS), labels=[0, 1]))
    if 0 < sum(ys) < len(ys):
        assert _close(m.auroc, sk.roc_auc_score(ys, ps))
    assert _close(m.ece, expected_calibration_error(ys, ps) or 0.0)


@settings(max_examples=50)
@given(distributions())
def test_choice_accumulator_equals_scikit_learn(
    data: tuple[list[dict[str, float]], list[str]],
) -> None:
    rows, labels = data
    stats = ChoiceStats("q")
    picked = []
    for r, y in zip(rows, labels, strict=True):
        choice = max(r, key=r.__getitem__)
        picked.append(choice)
        answer = {
            "type": "choice",
            "choice": choice,
            "probabilities": r,
            "confidence": r[choice],
            "near_uniform": False,
            "flags": [],
        }
        stats.add(answer, y)
    m = stats.metrics()
    y_prob = [[r[c] for c in CLASSES] for r in rows]
    assert _close(m.accuracy, sk.accuracy_score(labels, picked))
    assert _close(m.macro_f1, sk.f1_score(labels, picked, average="macro", zero_division=0))
    assert math.isclose(
        m.log_loss or 0.0, sk.log_loss(labels, y_prob, labels=CLASSES), rel_tol=1e-9
    )
    assert math.isclose(
        m.brier or 0.0,
        sk.brier_score_loss(labels, np.array(y_prob), labels=CLASSES, scale_by_half=False),
        rel_tol=1e-9,
        abs_tol=1e-12,
    )


# --- hand-checked cases --------------------------------------------------------------------


def test_ece_hand_checked() -> None:
    """ece = sum over 10 equal-width bins of (n_b / N) * |mean(y)_b - mean(p)_b|."""
    # bin 0: p 0.05, 0.05 with y 0, 1 -> |0.5 - 0.05| = 0.45, weight 2/5
    # bin 9: p 0.95, 1.0 (1.0 falls in the LAST bin), 0.9 with y 1, 1, 0
    #        -> mean y 2/3, mean p 0.95 -> |0.6667 - 0.95| = 0.28333, weight 3/5
    ps = [0.05, 0.05, 0.95, 1.0, 0.9]
    ys = [0, 1, 1, 1, 0]
    expected = 2 / 5 * 0.45 + 3 / 5 * abs(2 / 3 - (0.95 + 1.0 + 0.9) / 3)
    assert expected_calibration_error(ys, ps) == pytest.approx(expected)
    bins = reliability(ys, ps).bins()
    assert [b.n for b in bins] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 3]
    assert bins[9] == ReliabilityBin(0.9, 1.0, 3, pytest.approx(0.95), pytest.approx(2 / 3))
    assert bins[1].confidence is None and bins[1].accuracy is None


def test_perfect_calibration_has_zero_ece() -> None:
    assert expected_calibration_error([1, 0, 0, 0], [0.25] * 4) == pytest.approx(0.0)
    assert expected_calibration_error([], []) is None


@pytest.mark.parametrize(
    ("p", "b"),
    [
        pytest.param(0.0, 0, id="zero"),
        pytest.param(0.1, 1, id="a-lower-edge-belongs-to-its-bin"),
        pytest.param(0.3, 3, id="0.3"),
        pytest.param(0.7, 7, id="0.7"),
        pytest.param(0.99, 9, id="0.99"),
        pytest.param(1.0, 9, id="p-1.0-in-the-last-bin"),
    ],
)
def test_bin_edges(p: float, b: int) -> None:
    assert bin_index(p) == b


def test_multiclass_brier_hand_checked() -> None:
    """brier = mean over records of the sum over offered options of (p_k - y_k)^2, a missing
    option counting 0."""
    # label a: (0.7-1)^2 + 0.2^2 + 0.1^2 = 0.09 + 0.04 + 0.01 = 0.14
    assert multiclass_brier_score([0], [[0.7, 0.2, 0.1]]) == pytest.approx(0.14)
    # label c, which the record left out: 0.6^2 + 0.4^2 + (0 - 1)^2 = 0.36 + 0.16 + 1 = 1.52
    assert multiclass_brier_score([2], [[0.6, 0.4]]) == pytest.approx(1.52)
    rows = [{"a": 0.7, "b": 0.2, "c": 0.1}, {"a": 0.6, "b": 0.4}]
    # the accumulator's form agrees, the missing option included
    stats = ChoiceStats("q")
    for r, y in zip(rows, ["a", "c"], strict=True):
        answer = {"type": "choice", "choice": "a", "probabilities": r, "confidence": r["a"]}
        stats.add(answer, y)
    assert stats.metrics().brier == pytest.approx((0.14 + 1.52) / 2)


def test_within_one_and_mae_hand_checked() -> None:
    assert within_one([1, 2, 2, 3], [0, 2, 4, 1]) == pytest.approx(2 / 4)
    assert mean_absolute_error([1, 2, 2], [0.4, 2.0, 3.5]) == pytest.approx((0.6 + 0.0 + 1.5) / 3)
    assert within_one([], []) is None


def test_score_accumulator_hand_checked() -> None:
    legend = {"0": "none", "1": "some", "2": "total"}

    def answer(level: int, score: float, probs: list[float]) -> dict[str, object]:
        return {
            "type": "score",
            "score": score,
            "level": level,
            "legend": legend,
            "probabilities": {str(i): p for i, p in enumerate(probs)},
            "confidence": max(probs),
        }

    stats = ScoreStats("impact")
    stats.add(answer(0, 0.2, [0.8, 0.2, 0.0]), "0")  # right
    stats.add(answer(1, 1.1, [0.1, 0.7, 0.2]), "total")  # label by name: level 2, one off
    stats.add(answer(0, 0.4, [0.6, 0.4, 0.0]), "2")  # two off
    m = stats.metrics()
    assert m.accuracy == pytest.approx(1 / 3)
    assert m.within_one == pytest.approx(2 / 3)
    assert m.mae == pytest.approx((0.2 + 0.9 + 1.6) / 3)
    b1 = 0.2**2 + 0.2**2 + 0.0
    b2 = 0.1**2 + 0.7**2 + 0.8**2
    b3 = 0.6**2 + 0.4**2 + 1.0
    assert m.brier == pytest.approx((b1 + b2 + b3) / 3)
    assert m.confusion == Confusion(("0", "1", "2"), ((1, 0, 0), (0, 0, 0), (1, 1, 0)))
    # ece on the top level's probability against correctness: bins 8 (0.8, right), 7 (0.7,
    # wrong), 6 (0.6, wrong)
    assert m.ece == pytest.approx((0.2 + 0.7 + 0.6) / 3)


def test_auroc_ties_count_half() -> None:
    # one positive and one negative at the same p: half a correct ranking
    assert roc_auc_score([1, 0], [0.5, 0.5]) == pytest.approx(0.5)
    # positives 0.9, 0.5; negatives 0.5, 0.1: (0.9>0.5) (0.9>0.1) (0.5=0.5: half) (0.5>0.1)
    assert roc_auc_score([1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1]) == pytest.approx(3.5 / 4)


def test_threshold_search_hand_checked() -> None:
    """The LOWEST yes-threshold reaching the target precision, with its recall; precision is
    not monotonic, so a higher threshold can fall below the target again."""
    ps = [0.95, 0.9, 0.8, 0.7, 0.6, 0.3]
    ys = [1, 0, 1, 1, 0, 1]
    # t=0.95: 1/1; t=0.9: 1/2; t=0.8: 2/3; t=0.7: 3/4; t=0.6: 3/5; t=0.3: 4/6
    r = threshold_for_precision(ys, ps, 0.75)
    assert (r.threshold, r.precision, r.recall, r.yes) == (0.7, 0.75, 0.75, 4)
    r = threshold_for_precision(ys, ps, 0.6)
    assert (r.threshold, r.precision, r.recall) == (0.3, pytest.approx(4 / 6), 1.0)
    r = threshold_for_precision(ys, ps, 1.0)
    assert (r.threshold, r.recall) == (0.95, 0.25)
    assert threshold_for_precision([0, 0], [0.9, 0.8], 0.5).threshold is None
    # ties share one threshold: both 0.5s are in or both out
    r = threshold_for_precision([1, 0, 1], [0.5, 0.5, 0.4], 0.6)
    assert r.threshold == 0.4 and r.precision == pytest.approx(2 / 3)

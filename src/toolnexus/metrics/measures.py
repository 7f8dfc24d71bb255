"""Accuracy and calibration metrics, exactly as issue 12 defines them: the ONE definition of
each, used by the accumulators over the arrays they keep (and by a bootstrap over resamples of
them). Pure: no I/O.

Every function takes ``(y_true, y_prob)`` (or ``y_pred``, ``y_score``) in scikit-learn's
argument order and names, and returns ``None`` where the metric is undefined (no labelled
data; AUROC with one class only), never a made-up 0. Multi-class probabilities are rows, one
per record, over the classes in index order; a row may be shorter than the class list (a class
first seen after it), its missing entries counting 0. The definitions:

- ``accuracy_score``: the share of predictions equal to their label (noul: ``p >= 0.5`` is yes).
- ``brier_score_loss`` (binary): mean ``(p - y)^2``. ``multiclass_brier_score``: the mean over
  records of the sum over the classes of ``(p_k - y_k)^2``.
- ``log_loss``, ``multiclass_log_loss``: mean ``-log`` of the probability given to what the
  label says, ``p`` clipped to ``[1e-15, 1 - 1e-15]``.
- ``roc_auc_score``: the probability that a random positive outranks a random negative, ties
  counted half (the Mann-Whitney statistic over average ranks).
- ``expected_calibration_error``: the sum over 10 equal-width bins of
  ``(n_b / N) * |mean(y)_b - mean(p)_b|``; bin ``b`` holds ``b/10 <= p < (b+1)/10`` and
  ``p = 1.0`` falls in the last bin. ``y`` is the label (noul) or correctness (top-1).
- ``macro_f1_score``: the unweighted mean over ``labels`` (default: every class seen as a label
  or a prediction) of ``2 TP / (2 TP + FP + FN)``, a class with none of the three left out.
- ``within_one``: the share of ``|y_pred - y_true| <= 1`` (score levels);
  ``mean_absolute_error``: mean ``|y_true - y_pred|`` (the label against the expected score).
- ``threshold_for_precision``: the lowest yes-threshold ``t`` (predict yes when ``p >= t``)
  whose precision on the labels reaches the target, with its recall.

Sums run in record order, so a run gives the same last digit however it was read (and on every
Python). The per-record work runs in numpy with the loops' exact bits: :mod:`.arrays` says how.
The calibration bins and the ECE follow the metrics (``Reliability``,
``expected_calibration_error``).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat, tee
from typing import TYPE_CHECKING

from .arrays import (
    floats,
    in_order_sum,
    integers,
    logs,
    numeric,
    same_length,
    sum_in_order,
    uniform_rows,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

__all__ = [
    "EPS",
    "N_BINS",
    "Reliability",
    "ReliabilityBin",
    "Threshold",
    "accuracy_score",
    "bin_index",
    "brier_score_loss",
    "confusion_matrix",
    "expected_calibration_error",
    "log_loss",
    "macro_f1_from_confusion",
    "macro_f1_score",
    "mean_absolute_error",
    "multiclass_brier_score",
    "multiclass_log_loss",
    "reliability",
    "roc_auc_score",
    "score_groups",
    "threshold_for_precision",
    "within_one",
]

# Calibration bins and the expected calibration error, exactly as issue 12 defines them (the
# definition is this module's docstring): 10 equal-width
# bins of ``p``, ``b/10 <= p < (b+1)/10`` and ``p = 1.0`` in the last, each with its count and its
# sums of ``p`` and ``y`` added in record order. Pure: no I/O.


@dataclass(frozen=True)
class ReliabilityBin:
    """One calibration bin: ``confidence`` is the mean probability in it, ``accuracy`` the mean
    label (noul) or correctness (top-1); both ``None`` for an empty bin."""

    lo: float
    hi: float
    n: int
    confidence: float | None
    accuracy: float | None


#: Equal-width calibration bins.
N_BINS = 10


def bin_index(p: float) -> int:
    """The calibration bin of ``p``: ``b/10 <= p < (b+1)/10``, and 1.0 in the last bin."""
    b = int(p * N_BINS)
    return N_BINS - 1 if b >= N_BINS else max(b, 0)


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def _bins(p: Floats) -> npt.NDArray[np.intp]:
    """:func:`bin_index` of every ``p`` (``int`` truncates as ``astype`` does)."""
    import numpy as np

    return np.clip((p * N_BINS).astype(np.intp), 0, N_BINS - 1)


@dataclass
class Reliability:
    """Calibration bins: per bin the count, the sum of ``p`` and the sum of ``y``."""

    n: list[int] = field(default_factory=lambda: [0] * N_BINS)
    sum_p: list[float] = field(default_factory=lambda: [0.0] * N_BINS)
    sum_y: list[float] = field(default_factory=lambda: [0.0] * N_BINS)

    def ece(self) -> float | None:
        """``sum_b (n_b / N) * |mean(y)_b - mean(p)_b|``, ``None`` with no data."""
        total = sum(self.n)
        if not total:
            return None
        # (n_b / N) * |sum_y/n_b - sum_p/n_b| == |sum_y - sum_p| / N
        return sum(abs(self.sum_y[b] - self.sum_p[b]) for b in range(N_BINS)) / total

    def bins(self) -> tuple[ReliabilityBin, ...]:
        """Per bin: its range, ``n``, the mean confidence and the accuracy (mean ``y``)."""
        return tuple(
            ReliabilityBin(
                b / N_BINS,
                (b + 1) / N_BINS,
                self.n[b],
                _mean(self.sum_p[b], self.n[b]),
                _mean(self.sum_y[b], self.n[b]),
            )
            for b in range(N_BINS)
        )


def reliability(y_true: Sequence[int | float], y_prob: Sequence[float]) -> Reliability:
    """The 10 equal-width bins of ``y_prob`` with the ``y_true`` falling in each: per bin the
    count, and ``p`` and ``y`` each added in record order (``bincount``'s order)."""
    import numpy as np

    if not same_length(y_true, y_prob):
        return Reliability()
    p = floats(y_prob)
    b = _bins(p)
    return Reliability(
        np.bincount(b, minlength=N_BINS).tolist(),
        np.bincount(b, weights=p, minlength=N_BINS).tolist(),
        np.bincount(b, weights=floats(y_true), minlength=N_BINS).tolist(),
    )


def expected_calibration_error(
    y_true: Sequence[int | float], y_prob: Sequence[float]
) -> float | None:
    """Expected calibration error over 10 equal-width bins."""
    return reliability(y_true, y_prob).ece()


@dataclass(frozen=True)
class Threshold:
    """The lowest yes-threshold reaching ``target_precision`` (``threshold`` ``None`` when
    none does), its precision and recall, and how many records it calls yes."""

    target_precision: float
    threshold: float | None
    precision: float | None
    recall: float | None
    yes: int


#: log_loss clips probabilities to [EPS, 1 - EPS] (issue 12), so a confident miss costs ~34.5.
EPS = 1e-15


def accuracy_score(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float | None:
    """The share of ``y_pred[i] == y_true[i]``."""
    n = same_length(y_true, y_pred, "predictions")
    if not n:
        return None
    if numeric(y_true) and numeric(y_pred):  # the accumulators' arrays: compared in numpy
        import numpy as np

        return int(np.count_nonzero(np.asarray(y_true) == np.asarray(y_pred))) / n
    hits: int = sum(map(operator.eq, y_true, y_pred))
    return hits / n


def brier_score_loss(y_true: Sequence[int], y_prob: Sequence[float]) -> float | None:
    """Mean ``(p - y)^2`` for binary labels ``y`` in {0, 1}."""
    n = same_length(y_true, y_prob)
    if not n:
        return None
    return sum_in_order((floats(y_prob) - floats(y_true)) ** 2) / n


def log_loss(y_true: Sequence[int], y_prob: Sequence[float]) -> float | None:
    """Mean ``-(y log p + (1 - y) log(1 - p))`` with ``p`` clipped to ``[1e-15, 1 - 1e-15]``."""
    import numpy as np

    n = same_length(y_true, y_prob)
    if not n:
        return None
    clipped = np.clip(floats(y_prob), EPS, 1.0 - EPS)
    said = np.where(floats(y_true) != 0.0, clipped, 1.0 - clipped)
    return -sum_in_order(logs(said)) / n


def _p_of(row: Sequence[float], k: int) -> float:
    return row[k] if k < len(row) else 0.0


def _p_true(y_true: Sequence[int], y_prob: Sequence[Sequence[float]]) -> Iterator[float]:
    """Per record, the probability its row gives its label (0 for a class the row lacks)."""
    if len(y_true) != len(y_prob):
        raise ValueError(f"{len(y_true)} labels for {len(y_prob)} probability rows")
    if y_true and max(y_true) < min(map(len, y_prob)):  # every label inside its row
        return map(operator.getitem, y_prob, y_true)
    return map(_p_of, y_prob, y_true)


def _rows_and_labels(
    y_true: Sequence[int], y_prob: Sequence[Sequence[float]]
) -> tuple[int, Floats | None, Floats | None]:
    """The record count and, for rows of one width (:func:`.arrays.uniform_rows`), the rows as
    one 2-D array and each row's probability of its label; ``None`` twice for the generic
    path."""
    import numpy as np

    n = same_length(y_true, y_prob, "probability rows")
    uniform = uniform_rows(y_prob, y_true) if n else None
    if uniform is None:
        return n, None, None
    rows, labels = uniform
    return n, rows, rows[np.arange(n), labels]


def multiclass_brier_score(
    y_true: Sequence[int], y_prob: Sequence[Sequence[float]]
) -> float | None:
    """Mean over records of ``sum_k (p_k - y_k)^2``; ``y_true`` holds class indices."""
    # sum_k p_k^2 - 2 p_y + 1 per record: the label's own term expanded, a missing class
    # being 0; each row's squares added in column order, the records' terms in record order.
    n, rows_, p_label = _rows_and_labels(y_true, y_prob)
    if not n:
        return None
    if rows_ is not None and p_label is not None:
        squares = rows_[:, 0] * rows_[:, 0]
        for k in range(1, rows_.shape[1]):
            squares = squares + rows_[:, k] * rows_[:, k]
        return sum_in_order((squares - 2.0 * p_label) + 1.0) / n
    rows, again = tee(y_prob)
    squares_ = map(in_order_sum, map(map, repeat(operator.mul), rows, again))
    twice_ = map(operator.mul, repeat(2.0), _p_true(y_true, y_prob))
    terms = map(operator.add, map(operator.sub, squares_, twice_), repeat(1.0))
    return in_order_sum(terms) / n


def multiclass_log_loss(y_true: Sequence[int], y_prob: Sequence[Sequence[float]]) -> float | None:
    """Mean ``-log p_label`` (clipped); ``y_true`` holds class indices."""
    import numpy as np

    n, _, p_label = _rows_and_labels(y_true, y_prob)
    if not n:
        return None
    if p_label is not None:
        return -sum_in_order(logs(np.clip(p_label, EPS, 1.0 - EPS))) / n
    clipped_ = map(max, repeat(EPS), map(min, repeat(1.0 - EPS), _p_true(y_true, y_prob)))
    return -in_order_sum(map(math.log, clipped_)) / n


def score_groups(
    y_true: Sequence[Hashable], y_score: Sequence[float]
) -> list[tuple[float, int, int]]:
    """The distinct scores in ascending order, each with how many records have it and how many
    of those are positive (a truthy ``y_true``): every rank-based figure (AUROC, a cut-point's
    precision and recall, accuracy against coverage) depends on nothing else, and one sort
    replaces a comparison of every pair. ``-0.0`` is counted as ``0.0``."""
    import numpy as np

    same_length(y_true, y_score, "scores")
    scores = floats(y_score) + 0.0  # -0.0 + 0.0 is 0.0: one zero, printed without a sign
    values, inverse, sizes = np.unique(scores, return_inverse=True, return_counts=True)
    positive = np.bincount(
        inverse.reshape(-1), weights=np.array(y_true, dtype=bool), minlength=len(values)
    )
    return list(
        zip(values.tolist(), sizes.tolist(), positive.astype(np.int64).tolist(), strict=True)
    )


def roc_auc_score(y_true: Sequence[int], y_score: Sequence[float]) -> float | None:
    """Area under the ROC curve, ties counted half; ``None`` unless both classes occur."""
    groups = score_groups(y_true, y_score)
    n_pos = sum(pos for _, _, pos in groups)
    n_neg = len(y_true) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    rank_sum = 0.0  # sum of the (1-based, tie-averaged) ranks of the positives
    i = 0
    for _, size, pos in groups:
        j = i + size
        average_rank = (i + 1 + j) / 2  # ranks i+1 .. j share their mean
        rank_sum += average_rank * pos
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def confusion_matrix(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[Hashable]
) -> tuple[tuple[int, ...], ...]:
    """Rows are labels, columns predictions, both in ``labels`` order; a pair naming a class
    outside ``labels`` is not counted."""
    same_length(y_true, y_pred, "predictions")
    indices = [c for c in labels if type(c) is int]
    if integers(y_true) and integers(y_pred) and len(indices) == len(labels):
        # class indices (the accumulators' arrays): one bincount of the pairs
        matrix = _index_confusion(y_true, y_pred, indices)
        if matrix is not None:
            return matrix
    pairs = Counter(zip(y_true, y_pred, strict=True))
    return tuple(tuple(pairs[(y, p)] for p in labels) for y in labels)


def _index_confusion(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[int]
) -> tuple[tuple[int, ...], ...] | None:
    """``None`` when the indices spread too far for a table of every pair (the caller counts
    the pairs met instead)."""
    import numpy as np

    if not len(y_true):
        return tuple(tuple(0 for _ in labels) for _ in labels)
    t = np.array(y_true, dtype=np.int64)
    p = np.array(y_pred, dtype=np.int64)
    low = int(min(t.min(), p.min()))
    span = int(max(t.max(), p.max())) - low + 1
    if span * span > max(1 << 16, 4 * len(t)):
        return None
    pairs = np.bincount((t - low) * span + (p - low), minlength=span * span).tolist()

    def count(y: int, q: int) -> int:
        i, j = y - low, q - low
        return pairs[i * span + j] if 0 <= i < span and 0 <= j < span else 0

    return tuple(tuple(count(y, q) for q in labels) for y in labels)


def macro_f1_from_confusion(matrix: Sequence[Sequence[int]]) -> float | None:
    """:func:`macro_f1_score` of its :func:`confusion_matrix` (over the same ``labels``)."""
    scores = []
    for i in range(len(matrix)):
        tp = matrix[i][i]
        fn = sum(matrix[i]) - tp
        fp = sum(row[i] for row in matrix) - tp
        if tp + fn + fp:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores) if scores else None


def macro_f1_score(
    y_true: Sequence[Hashable],
    y_pred: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> float | None:
    """Macro F1 over ``labels`` (default: every class seen as a label or a prediction)."""
    if labels is None:
        labels = sorted(set(y_true) | set(y_pred), key=repr)
    return macro_f1_from_confusion(confusion_matrix(y_true, y_pred, labels))


def within_one(y_true: Sequence[int], y_pred: Sequence[int]) -> float | None:
    """The share of ``|y_pred - y_true| <= 1``."""
    import numpy as np

    n = same_length(y_true, y_pred, "predictions")
    if not n:
        return None
    gaps = np.array(y_pred, dtype=np.int64) - np.array(y_true, dtype=np.int64)
    return int(np.count_nonzero((gaps >= -1) & (gaps <= 1))) / n


def mean_absolute_error(y_true: Sequence[float], y_pred: Sequence[float]) -> float | None:
    """Mean ``|y_pred - y_true|``."""
    import numpy as np

    n = same_length(y_true, y_pred, "predictions")
    if not n:
        return None
    return sum_in_order(np.abs(floats(y_pred) - floats(y_true))) / n


def threshold_for_precision(
    y_true: Sequence[int], y_prob: Sequence[float], target: float
) -> Threshold:
    """The lowest ``t`` among the observed probabilities such that predicting yes for
    ``p >= t`` has precision ``>= target`` on these labels, with its recall.

    Precision is not monotonic in ``t``, so every distinct ``t`` is tried (one sweep from the
    highest ``p`` down over :func:`score_groups`, keeping the last ``t`` that qualifies).
    """
    groups = score_groups(y_true, y_prob)
    positives = sum(pos for _, _, pos in groups)
    tp = fp = 0
    best = Threshold(target, None, None, None, 0)
    for t, size, pos in reversed(groups):
        tp += pos
        fp += size - pos
        precision = tp / (tp + fp)
        if precision >= target:
            recall = tp / positives if positives else None
            best = Threshold(target, t, precision, recall, tp + fp)
    return best

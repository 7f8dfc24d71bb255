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

Sums run in record order, so a run gives the same last digit however it was read.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat, tee

from .model import ReliabilityBin, Threshold

__all__ = [
    "EPS",
    "N_BINS",
    "Reliability",
    "accuracy_score",
    "bin_index",
    "brier_score_loss",
    "confusion_matrix",
    "expected_calibration_error",
    "log_loss",
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

#: log_loss clips probabilities to [EPS, 1 - EPS] (issue 12), so a confident miss costs ~34.5.
EPS = 1e-15
#: Equal-width calibration bins.
N_BINS = 10


def bin_index(p: float) -> int:
    """The calibration bin of ``p``: ``b/10 <= p < (b+1)/10``, and 1.0 in the last bin."""
    b = int(p * N_BINS)
    return N_BINS - 1 if b >= N_BINS else max(b, 0)


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def accuracy_score(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float | None:
    """The share of ``y_pred[i] == y_true[i]``."""
    return _mean(sum(map(operator.eq, y_true, y_pred)), len(y_true))


def brier_score_loss(y_true: Sequence[int], y_prob: Sequence[float]) -> float | None:
    """Mean ``(p - y)^2`` for binary labels ``y`` in {0, 1}."""
    total = 0.0
    for y, p in zip(y_true, y_prob, strict=True):
        total += (p - y) ** 2
    return _mean(total, len(y_true))


def log_loss(y_true: Sequence[int], y_prob: Sequence[float]) -> float | None:
    """Mean ``-(y log p + (1 - y) log(1 - p))`` with ``p`` clipped to ``[1e-15, 1 - 1e-15]``."""
    total = 0.0
    log = math.log
    for y, p in zip(y_true, y_prob, strict=True):
        c = EPS if p < EPS else 1.0 - EPS if p > 1.0 - EPS else p  # clipped
        total -= log(c) if y else log(1.0 - c)
    return _mean(total, len(y_true))


def _p_of(row: Sequence[float], k: int) -> float:
    return row[k] if k < len(row) else 0.0


def _p_true(y_true: Sequence[int], y_prob: Sequence[Sequence[float]]) -> Iterator[float]:
    """Per record, the probability its row gives its label (0 for a class the row lacks)."""
    if len(y_true) != len(y_prob):
        raise ValueError(f"{len(y_true)} labels for {len(y_prob)} probability rows")
    if y_true and max(y_true) < min(map(len, y_prob)):  # every label inside its row
        return map(operator.getitem, y_prob, y_true)
    return map(_p_of, y_prob, y_true)


def multiclass_brier_score(
    y_true: Sequence[int], y_prob: Sequence[Sequence[float]]
) -> float | None:
    """Mean over records of ``sum_k (p_k - y_k)^2``; ``y_true`` holds class indices."""
    # sum_k p_k^2 - 2 p_y + 1 per record: the label's own term expanded, a missing class
    # being 0. Written as maps so the loop runs in C (a report's finish is serial); the sum
    # still adds the records' terms one by one, in record order.
    rows, again = tee(y_prob)
    squares = map(sum, map(map, repeat(operator.mul), rows, again))
    twice = map(operator.mul, repeat(2.0), _p_true(y_true, y_prob))
    return _mean(
        sum(map(operator.add, map(operator.sub, squares, twice), repeat(1.0))), len(y_true)
    )


def multiclass_log_loss(y_true: Sequence[int], y_prob: Sequence[Sequence[float]]) -> float | None:
    """Mean ``-log p_label`` (clipped); ``y_true`` holds class indices."""
    clipped = map(max, repeat(EPS), map(min, repeat(1.0 - EPS), _p_true(y_true, y_prob)))
    return _mean(-sum(map(math.log, clipped)), len(y_true))


def score_groups(
    y_true: Sequence[Hashable], y_score: Sequence[float]
) -> list[tuple[float, int, int]]:
    """The distinct scores in ascending order, each with how many records have it and how many
    of those are positive (a truthy ``y_true``): every rank-based figure (AUROC, a cut-point's
    precision and recall, accuracy against coverage) depends on nothing else, and two counts
    in C replace a sort of every record. A score is the first record's of its value."""
    if len(y_true) != len(y_score):
        raise ValueError(f"{len(y_true)} labels for {len(y_score)} scores")
    total = Counter(y_score)
    positive = Counter(compress(y_score, y_true))
    return [(p, total[p], positive[p]) for p in sorted(total)]


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
    """The 10 equal-width bins of ``y_prob`` with the ``y_true`` falling in each."""
    r = Reliability()
    n, sum_p, sum_y = r.n, r.sum_p, r.sum_y
    for y, p in zip(y_true, y_prob, strict=True):
        b = int(p * N_BINS)  # bin_index, inlined: one call per labelled answer
        if b >= N_BINS:
            b = N_BINS - 1
        elif b < 0:
            b = 0
        n[b] += 1
        sum_p[b] += p
        sum_y[b] += y
    return r


def expected_calibration_error(
    y_true: Sequence[int | float], y_prob: Sequence[float]
) -> float | None:
    """Expected calibration error over 10 equal-width bins."""
    return reliability(y_true, y_prob).ece()


def confusion_matrix(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], labels: Sequence[Hashable]
) -> tuple[tuple[int, ...], ...]:
    """Rows are labels, columns predictions, both in ``labels`` order; a pair naming a class
    outside ``labels`` is not counted."""
    pairs = Counter(zip(y_true, y_pred, strict=True))
    return tuple(tuple(pairs[(y, p)] for p in labels) for y in labels)


def _f1_from_confusion(matrix: Sequence[Sequence[int]]) -> float | None:
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
    return _f1_from_confusion(confusion_matrix(y_true, y_pred, labels))


def within_one(y_true: Sequence[int], y_pred: Sequence[int]) -> float | None:
    """The share of ``|y_pred - y_true| <= 1``."""
    hits = sum(1 for y, p in zip(y_true, y_pred, strict=True) if -1 <= p - y <= 1)
    return _mean(hits, len(y_true))


def mean_absolute_error(y_true: Sequence[float], y_pred: Sequence[float]) -> float | None:
    """Mean ``|y_pred - y_true|``."""
    total = 0.0
    for y, p in zip(y_true, y_pred, strict=True):
        total += abs(p - y)
    return _mean(total, len(y_true))


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

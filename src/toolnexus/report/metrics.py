"""Accuracy and calibration metrics, exactly as issue 12 defines them. Pure: no I/O.

Each function takes plain sequences and returns ``None`` where the metric is undefined (no
labelled data; AUROC with one class only), never a made-up 0. The definitions:

- ``accuracy``: the share of predictions equal to their label (noul: ``p >= 0.5`` is yes).
- ``brier`` (noul): mean ``(p - y)^2``. Multi-class (choice, score): the mean over records of
  the sum over the offered options of ``(p_k - y_k)^2``, an option missing from a record's
  probabilities counting ``p_k = 0``.
- ``log_loss``: mean ``-log`` of the probability given to what the label says, ``p`` clipped to
  ``[1e-15, 1 - 1e-15]``.
- ``auroc``: the probability that a random positive outranks a random negative, ties counted
  half (the Mann-Whitney statistic over average ranks).
- ``ece``: the sum over 10 equal-width bins of ``(n_b / N) * |mean(y)_b - mean(p)_b|``; bin ``b``
  holds ``b/10 <= p < (b+1)/10`` and ``p = 1.0`` falls in the last bin.
- ``macro_f1``: the unweighted mean over classes (every class seen as a label or a prediction)
  of ``2 TP / (2 TP + FP + FN)``.
- ``within_one``: the share of score answers whose level is at most one level off the label;
  ``mae``: mean ``|score - label|`` over the expected score, not the level.
- ``threshold_for_precision``: the lowest yes-threshold ``t`` (predict yes when ``p >= t``)
  whose precision on the labels reaches the target, with its recall.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EPS",
    "N_BINS",
    "Reliability",
    "ThresholdResult",
    "accuracy",
    "auroc",
    "bin_index",
    "brier_binary",
    "brier_multiclass",
    "brier_term",
    "confusion_matrix",
    "ece",
    "f1_from_confusion",
    "log_loss_binary",
    "log_loss_multiclass",
    "macro_f1",
    "mae",
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


def _clip(p: float) -> float:
    return EPS if p < EPS else 1.0 - EPS if p > 1.0 - EPS else p


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def accuracy(predicted: Sequence[Hashable], labels: Sequence[Hashable]) -> float | None:
    """The share of ``predicted[i] == labels[i]``."""
    n = len(labels)
    return _mean(sum(1 for a, b in zip(predicted, labels, strict=True) if a == b), n)


def brier_binary(ps: Sequence[float], ys: Sequence[int]) -> float | None:
    """Mean ``(p - y)^2`` for binary labels ``y`` in {0, 1}."""
    return _mean(sum((p - y) ** 2 for p, y in zip(ps, ys, strict=True)), len(ys))


def log_loss_binary(ps: Sequence[float], ys: Sequence[int]) -> float | None:
    """Mean ``-(y log p + (1 - y) log(1 - p))`` with ``p`` clipped to ``[1e-15, 1 - 1e-15]``."""
    total = 0.0
    for p, y in zip(ps, ys, strict=True):
        c = _clip(p)
        total -= math.log(c) if y else math.log(1.0 - c)
    return _mean(total, len(ys))


def log_loss_multiclass(p_of_label: Sequence[float]) -> float | None:
    """Mean ``-log p_label`` (clipped), given the probability each record put on its label."""
    return _mean(sum(-math.log(_clip(p)) for p in p_of_label), len(p_of_label))


def auroc(ps: Sequence[float], ys: Sequence[int]) -> float | None:
    """Area under the ROC curve, ties counted half; ``None`` unless both classes occur."""
    n_pos = sum(1 for y in ys if y)
    n_neg = len(ys) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(ps)), key=ps.__getitem__)
    rank_sum = 0.0  # sum of the (1-based, tie-averaged) ranks of the positives
    i = 0
    while i < len(order):
        j = i
        p = ps[order[i]]
        while j < len(order) and ps[order[j]] == p:
            j += 1
        average_rank = (i + 1 + j) / 2  # ranks i+1 .. j share their mean
        rank_sum += average_rank * sum(1 for k in range(i, j) if ys[order[k]])
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@dataclass
class Reliability:
    """Streaming calibration bins: per bin the count, the sum of ``p`` and the sum of ``y``
    (``y`` is the label for noul, correctness for a top-1 probability)."""

    n: list[int] = field(default_factory=lambda: [0] * N_BINS)
    sum_p: list[float] = field(default_factory=lambda: [0.0] * N_BINS)
    sum_y: list[float] = field(default_factory=lambda: [0.0] * N_BINS)

    def add(self, p: float, y: int | float) -> None:
        b = bin_index(p)
        self.n[b] += 1
        self.sum_p[b] += p
        self.sum_y[b] += y

    def merge(self, other: Reliability) -> None:
        """Add ``other``'s bins to these (a chunk counted on its own)."""
        for b in range(N_BINS):
            self.n[b] += other.n[b]
            self.sum_p[b] += other.sum_p[b]
            self.sum_y[b] += other.sum_y[b]

    @property
    def total(self) -> int:
        return sum(self.n)

    def ece(self) -> float | None:
        """``sum_b (n_b / N) * |mean(y)_b - mean(p)_b|``, ``None`` with no data."""
        total = self.total
        if not total:
            return None
        # (n_b / N) * |sum_y/n_b - sum_p/n_b| == |sum_y - sum_p| / N
        return sum(abs(self.sum_y[b] - self.sum_p[b]) for b in range(N_BINS)) / total

    def bins(self) -> list[dict[str, Any]]:
        """Per bin: its range, ``n``, the mean confidence and the accuracy (mean ``y``)."""
        return [
            {
                "lo": b / N_BINS,
                "hi": (b + 1) / N_BINS,
                "n": self.n[b],
                "confidence": _mean(self.sum_p[b], self.n[b]),
                "accuracy": _mean(self.sum_y[b], self.n[b]),
            }
            for b in range(N_BINS)
        ]


def ece(ps: Sequence[float], ys: Sequence[int | float]) -> float | None:
    """Expected calibration error over 10 equal-width bins."""
    r = Reliability()
    for p, y in zip(ps, ys, strict=True):
        r.add(p, y)
    return r.ece()


def brier_term(probabilities: Mapping[str, float], options: Iterable[str], label: str) -> float:
    """One record's multi-class Brier term: the sum over ``options`` of ``(p_k - y_k)^2``,
    ``p_k = 0`` for an option missing from ``probabilities``."""
    total = 0.0
    for k in options:
        p = probabilities.get(k, 0.0)
        total += (p - (1.0 if k == label else 0.0)) ** 2
    return total


def brier_multiclass(
    rows: Sequence[Mapping[str, float]], labels: Sequence[str], options: Sequence[str]
) -> float | None:
    """Mean of :func:`brier_term` over records."""
    terms = [brier_term(r, options, y) for r, y in zip(rows, labels, strict=True)]
    return _mean(sum(terms), len(terms))


def confusion_matrix(
    labels: Sequence[str], predicted: Sequence[str], classes: Sequence[str]
) -> list[list[int]]:
    """Rows are labels, columns predictions, both in ``classes`` order."""
    index = {c: i for i, c in enumerate(classes)}
    m = [[0] * len(classes) for _ in classes]
    for y, p in zip(labels, predicted, strict=True):
        m[index[y]][index[p]] += 1
    return m


def f1_from_confusion(matrix: Sequence[Sequence[int]]) -> float | None:
    """Macro F1 from a square confusion matrix (rows labels, columns predictions), over the
    classes that occur as a label or a prediction."""
    scores = []
    for i in range(len(matrix)):
        tp = matrix[i][i]
        fn = sum(matrix[i]) - tp
        fp = sum(row[i] for row in matrix) - tp
        if tp + fn + fp:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores) if scores else None


def macro_f1(labels: Sequence[str], predicted: Sequence[str]) -> float | None:
    """Macro F1 over every class seen as a label or a prediction."""
    classes = sorted(set(labels) | set(predicted))
    return f1_from_confusion(confusion_matrix(labels, predicted, classes))


def within_one(levels: Sequence[int], labels: Sequence[int]) -> float | None:
    """The share of ``|level - label| <= 1``."""
    hits = sum(1 for a, b in zip(levels, labels, strict=True) if abs(a - b) <= 1)
    return _mean(hits, len(labels))


def mae(scores: Sequence[float], labels: Sequence[int]) -> float | None:
    """Mean ``|score - label|``."""
    return _mean(sum(abs(s - y) for s, y in zip(scores, labels, strict=True)), len(labels))


@dataclass(frozen=True)
class ThresholdResult:
    """The lowest yes-threshold reaching ``target`` precision (``None`` when none does)."""

    target: float
    threshold: float | None
    precision: float | None
    recall: float | None
    yes: int  # records at or above the threshold

    def to_json(self) -> dict[str, Any]:
        return {
            "target_precision": self.target,
            "threshold": self.threshold,
            "precision": self.precision,
            "recall": self.recall,
            "yes": self.yes,
        }


def threshold_for_precision(
    ps: Sequence[float], ys: Sequence[int], target: float
) -> ThresholdResult:
    """The lowest ``t`` among the observed probabilities such that predicting yes for
    ``p >= t`` has precision ``>= target`` on these labels, with its recall.

    Precision is not monotonic in ``t``, so every distinct ``t`` is tried (one sort, one sweep
    from the highest ``p`` down, keeping the last ``t`` that qualifies).
    """
    positives = sum(1 for y in ys if y)
    order = sorted(range(len(ps)), key=ps.__getitem__, reverse=True)
    tp = fp = 0
    best: ThresholdResult = ThresholdResult(target, None, None, None, 0)
    i = 0
    while i < len(order):
        t = ps[order[i]]
        while i < len(order) and ps[order[i]] == t:
            if ys[order[i]]:
                tp += 1
            else:
                fp += 1
            i += 1
        precision = tp / (tp + fp)
        if precision >= target:
            recall = tp / positives if positives else None
            best = ThresholdResult(target, t, precision, recall, tp + fp)
    return best

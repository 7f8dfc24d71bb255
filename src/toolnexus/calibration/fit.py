"""Fitting recalibration maps (issue 24 §4), measured by k-fold cross-validation. numpy only
(no scikit-learn at run time; the tests hold these fits to scikit-learn's).

- noul: Platt scaling (a logistic regression on ``logit p``, fitted by Newton's method with a
  halving line search) and isotonic regression (pool-adjacent-violators on ``p``, predictions
  interpolated linearly between the fitted points, constant beyond them), the one with the lower
  cross-validated log loss kept (Platt on a tie: two parameters generalise better).
- choice and score: temperature scaling, one temperature per question minimising log loss.
  The loss is convex in ``1/T``, so a golden-section search on ``log T`` within ``T_BOUNDS``
  finds it; an optimum at a bound is kept and says so in the map's note.

Documented outcomes, never a divergent fit: fewer than ``MIN_LABELLED`` labelled records, or a
noul sample with one class only, is skipped with a reason. A noul sample that is separable in
``p`` (every yes at or above every no, or the reverse) has no finite Platt fit: Platt is refused
with that reason and isotonic (which fits such data as steps) is what remains. Every
``logit``/``log`` clips first (``transforms.CLIP_EPS``); the cross-validated ``ece``, ``brier``
and ``log_loss`` are the report's definitions over the out-of-fold predictions.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core import ClassifierError
from ..metrics import (
    brier_score_loss,
    expected_calibration_error,
    log_loss,
    multiclass_brier_score,
    multiclass_log_loss,
)
from .maps import MapFit
from .transforms import CLIP_EPS, isotonic_apply, logit, platt_apply, temperature_apply

__all__ = [
    "FOLDS",
    "MIN_LABELLED",
    "SEED",
    "T_BOUNDS",
    "FitRefused",
    "Skipped",
    "fit_isotonic",
    "fit_noul",
    "fit_platt",
    "fit_temperature",
    "fit_temperature_map",
    "refit_temperature",
]

#: A key needs this many labelled records before a map is fitted for it.
MIN_LABELLED = 50
#: Cross-validation folds and their fixed seed (the same data gives the same map and metrics).
FOLDS = 5
SEED = 0
#: The temperature search interval: beyond it a map is degenerate, not a recalibration.
T_BOUNDS = (0.05, 20.0)
_NEWTON_STEPS = 100

Floats = npt.NDArray[np.float64]


class FitRefused(ClassifierError):
    """A map that has no finite fit on this sample (separable, one class, constant input)."""


@dataclass(frozen=True)
class Skipped:
    """A key that gets no map, and why."""

    reason: str


def _binary(y_true: Sequence[int], y_prob: Sequence[float]) -> tuple[Floats, Floats]:
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_prob, dtype=np.float64)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"y_true and y_prob must be 1-D of one length, got {y.shape}, {p.shape}")
    return y, p


def _loss(z: Floats, y: Floats, w: Floats) -> float:
    """Summed log loss of ``sigmoid(z)`` against ``y`` with weights ``w``, stable for large
    ``|z|``."""
    return float(np.sum(w * (np.logaddexp(0.0, z) - y * z)))


def fit_platt(y_true: Sequence[int], y_prob: Sequence[float]) -> tuple[float, float]:
    """``(slope, intercept)`` of the maximum-likelihood ``sigmoid(slope * logit(p) + intercept)``;
    :class:`FitRefused` when no finite maximum exists. Fitted over the distinct ``(p, y)`` pairs
    weighted by their counts (at most 202 for wire probabilities), which is the same likelihood."""
    y_all, _ = _binary(y_true, y_prob)
    x_all = np.array([logit(p) for p in y_prob])
    pos, neg = x_all[y_all == 1], x_all[y_all == 0]
    if not len(pos) or not len(neg):
        raise FitRefused("one class only: Platt scaling needs yes and no labels")
    if float(x_all.min()) == float(x_all.max()):
        raise FitRefused("every probability is the same: Platt scaling has no slope to fit")
    if neg.max() <= pos.min() or pos.max() <= neg.min():
        raise FitRefused("separable: every yes is on one side of every no, the slope diverges")
    atoms, counts = np.unique(np.column_stack([x_all, y_all]), axis=0, return_counts=True)
    x, y, weight = atoms[:, 0], atoms[:, 1], counts.astype(np.float64)
    design = np.column_stack([x, np.ones_like(x)])
    w = np.zeros(2)
    loss = _loss(design @ w, y, weight)
    for _ in range(_NEWTON_STEPS):
        q = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (weight * (q - y))
        hess = (design * (weight * q * (1.0 - q))[:, None]).T @ design
        step = np.linalg.solve(hess, grad)
        # The Newton decrement grad . step is twice the loss still to gain: stop when it is
        # below rounding (a fixed gradient bound is unreachable in floating point at large n).
        if float(grad @ step) <= 1e-15 * max(loss, 1.0):
            break
        scale = 1.0
        while scale > 1e-10:  # halve until the loss does not rise
            trial = w - scale * step
            trial_loss = _loss(design @ trial, y, weight)
            if trial_loss <= loss:
                break
            scale /= 2
        else:
            break
        w, loss = trial, trial_loss
    return float(w[0]), float(w[1])


def fit_isotonic(y_true: Sequence[int], y_prob: Sequence[float]) -> tuple[list[float], list[float]]:
    """The non-decreasing least-squares fit of ``y`` on ``p`` (pool-adjacent-violators over the
    distinct ``p``, ties averaged): the points ``(x, y)`` to interpolate between, kept only
    where a pooled block starts or ends."""
    y, p = _binary(y_true, y_prob)
    xs, inverse, counts = np.unique(p, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    # blocks as (sum of weights, weighted mean, first distinct x index, last)
    blocks: list[list[float]] = []
    for i, (w, m) in enumerate(zip(counts.tolist(), means.tolist(), strict=True)):
        blocks.append([w, m, i, i])
        while len(blocks) > 1 and blocks[-2][1] >= blocks[-1][1]:
            w2, m2, _, last = blocks.pop()
            w1, m1, first, _ = blocks.pop()
            blocks.append([w1 + w2, (w1 * m1 + w2 * m2) / (w1 + w2), first, last])
    out_x: list[float] = []
    out_y: list[float] = []
    for _, m, first, last in blocks:
        for i in sorted({int(first), int(last)}):
            out_x.append(float(xs[i]))
            out_y.append(float(m))
    return out_x, out_y


def _folds(groups: Sequence[Hashable], k: int, seed: int) -> npt.NDArray[np.intp]:
    """A fold number per record, stratified: each group (label) dealt round the folds in a
    seeded random order, so every training split sees every class that has ``k`` records."""
    rng = np.random.default_rng(seed)
    fold = np.zeros(len(groups), dtype=np.intp)
    offset = 0
    for g in sorted(set(groups), key=repr):
        idx = np.array([i for i, v in enumerate(groups) if v == g], dtype=np.intp)
        fold[rng.permutation(idx)] = (np.arange(len(idx)) + offset) % k
        offset += len(idx)
    return fold


def _noul_metrics(y: Sequence[int], p: Sequence[float]) -> dict[str, float | None]:
    return {
        "ece": expected_calibration_error(y, p),
        "brier": brier_score_loss(y, p),
        "log_loss": log_loss(y, p),
    }


def _predict_noul(kind: str, y: list[int], p: list[float]) -> Any:
    """A fitted predictor ``p -> recalibrated p`` of ``kind`` (raises :class:`FitRefused`)."""
    if kind == "platt":
        a, b = fit_platt(y, p)
        return lambda v: platt_apply(v, a, b), {"slope": a, "intercept": b}
    xs, ys = fit_isotonic(y, p)
    return lambda v: isotonic_apply(v, xs, ys), {"x": xs, "y": ys}


def _too_few(n: int) -> Skipped | None:
    if n < MIN_LABELLED:
        return Skipped(f"{n} labelled records, fewer than {MIN_LABELLED}: no map fitted")
    return None


def fit_noul(
    y_true: Sequence[int], y_prob: Sequence[float], *, folds: int = FOLDS, seed: int = SEED
) -> MapFit | Skipped:
    """Platt or isotonic for one noul key, whichever has the lower cross-validated log loss."""
    y, p = [int(v) for v in y_true], [float(v) for v in y_prob]
    few = _too_few(len(y))
    if few:
        return few
    if len(set(y)) < 2:
        return Skipped(f"one class only (every label is {'yes' if y[0] else 'no'}): no map fitted")
    fold = _folds(y, folds, seed)
    candidates: dict[str, Any] = {}
    for kind in ("platt", "isotonic"):
        held_out = [0.0] * len(y)
        try:
            for f in range(folds):
                train = np.flatnonzero(fold != f).tolist()
                predict, _ = _predict_noul(kind, [y[i] for i in train], [p[i] for i in train])
                for i in np.flatnonzero(fold == f).tolist():
                    held_out[i] = predict(p[i])
        except FitRefused as e:
            candidates[kind] = {"refused": e.detail}
            continue
        candidates[kind] = _noul_metrics(y, held_out)
    fitted = [k for k in candidates if "refused" not in candidates[k]]
    if not fitted:
        return Skipped(f"no map fits: {'; '.join(c['refused'] for c in candidates.values())}")
    best = min(fitted, key=lambda k: candidates[k]["log_loss"])  # ties: the first, Platt
    _, params = _predict_noul(best, y, p)
    return MapFit(best, params, len(y), _noul_metrics(y, p), candidates[best], candidates)


def _label_index(
    y_true: Sequence[str], y_prob: Sequence[Mapping[str, float]], options: Sequence[str]
) -> tuple[Floats, npt.NDArray[np.intp]]:
    index = {o: i for i, o in enumerate(options)}
    for v in y_true:
        if v not in index:
            raise ValueError(f"label {v!r} is not one of the options {', '.join(options)}")
    logs = np.array([[math.log(max(min(row.get(o, 0.0), 1 - CLIP_EPS), CLIP_EPS))
                      for o in options] for row in y_prob])  # fmt: skip
    return logs.reshape(len(y_prob), len(options)), np.array([index[v] for v in y_true])


def fit_temperature(
    y_true: Sequence[str], y_prob: Sequence[Mapping[str, float]], options: Sequence[str]
) -> float:
    """The temperature ``T`` in ``T_BOUNDS`` minimising the log loss of ``q ∝ p ** (1 / T)``
    (``p`` clipped, as ``transforms.temperature_apply`` does). An option missing from a row
    counts 0, clipped; the wire gives every offered option a probability, so the fit and the
    applied map normalise over the same options."""
    return _temperature(*_label_index(y_true, y_prob, options))


def refit_temperature(logs: Floats, labels: npt.NDArray[np.intp]) -> float:
    """The temperature in ``T_BOUNDS`` minimising the mean log loss of ``softmax(logs / T)``
    against ``labels`` (``report --fit-temperature``, issue 47: ``logs`` are the rows' logs at
    the chosen floor; ``-inf`` for a class a row does not have).

    The loss is convex in ``b = 1 / T`` with first derivative ``mean(E_q[z] - z_label)`` and
    second ``mean(Var_q[z])`` (``q = softmax(b z)``), so a Newton step kept inside a shrinking
    bracket (bisection when it would leave it) reaches the optimum in a few passes over the
    rows: no atoms to sort, which the maps' golden-section search needs (100,000 records:
    ~0.1 s, not ~1.5 s)."""
    z = np.asarray(logs, dtype=np.float64)
    n = len(z)
    zy = z[np.arange(n), labels]
    finite = np.where(np.isfinite(z), z, 0.0)

    def slope(b: float) -> tuple[float, float]:
        s = b * z
        w = np.exp(s - s.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        m1 = (w * finite).sum(axis=1)
        m2 = (w * finite * finite).sum(axis=1)
        return float((m1 - zy).mean()), float(np.maximum(m2 - m1 * m1, 0.0).mean())

    lo, hi = 1.0 / T_BOUNDS[1], 1.0 / T_BOUNDS[0]
    g_lo, _ = slope(lo)
    if g_lo >= 0.0:  # rising from the smallest b: the optimum is T's upper bound
        return T_BOUNDS[1]
    g_hi, _ = slope(hi)
    if g_hi <= 0.0:
        return T_BOUNDS[0]
    b = min(max(1.0, lo), hi)
    for _ in range(200):
        g, h = slope(b)
        if g > 0.0:
            hi = b
        else:
            lo = b
        step = g / h if h > 0.0 else math.inf
        nxt = b - step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - b) <= 1e-13 * b or hi - lo <= 1e-13 * hi:
            b = nxt
            break
        b = nxt
    return 1.0 / b


def _temperature(logs: Floats, labels: npt.NDArray[np.intp]) -> float:
    """:func:`fit_temperature` over clipped log-probabilities and label indices. The loss is
    summed over the distinct (row, label) pairs weighted by their counts (a few thousand at
    most for two-decimal wire rows), which is the same loss."""
    atoms, counts = np.unique(np.column_stack([logs, labels]), axis=0, return_counts=True)
    z0, picked = atoms[:, :-1], atoms[:, -1].astype(np.intp)
    rows = np.arange(len(atoms))
    weight = counts / counts.sum()

    def loss(log_t: float) -> float:
        z = z0 / math.exp(log_t)
        top = z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z - top).sum(axis=1)) + top[:, 0]
        return float(weight @ (lse - z[rows, picked]))

    lo, hi = math.log(T_BOUNDS[0]), math.log(T_BOUNDS[1])
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = loss(a), loss(b)
    while hi - lo > 1e-9:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = loss(b)
    return math.exp((lo + hi) / 2.0)


def _distribution_metrics(
    y_true: Sequence[str], rows: Sequence[Mapping[str, float]], options: Sequence[str]
) -> dict[str, float | None]:
    """The report's choice/score metrics: top-1 ECE, multi-class Brier, log loss of the label."""
    picked = [max(r, key=r.__getitem__) for r in rows]
    # Class indices over ``options``; a label outside them indexes past every row, where the
    # report's metrics read a probability of 0, as it counts a missing option.
    index = {o: i for i, o in enumerate(options)}
    y_index = [index.get(y, len(options)) for y in y_true]
    matrix = [[r.get(o, 0.0) for o in options] for r in rows]
    correct = [int(k == y) for k, y in zip(picked, y_true, strict=True)]
    return {
        "ece": expected_calibration_error(
            correct, [r[k] for r, k in zip(rows, picked, strict=True)]
        ),
        "brier": multiclass_brier_score(y_index, matrix),
        "log_loss": multiclass_log_loss(y_index, matrix),
    }


def fit_temperature_map(
    y_true: Sequence[str],
    y_prob: Sequence[Mapping[str, float]],
    options: Sequence[str],
    *,
    folds: int = FOLDS,
    seed: int = SEED,
) -> MapFit | Skipped:
    """Temperature scaling for one choice or score key (``options`` in order, level keys for a
    score question), with cross-validated before/after metrics."""
    few = _too_few(len(y_true))
    if few:
        return few
    rows = [dict(r) for r in y_prob]
    logs, labels = _label_index(y_true, rows, options)
    fold = _folds(list(y_true), folds, seed)
    held_out: list[dict[str, float]] = [{} for _ in rows]
    for f in range(folds):
        train = fold != f
        t = _temperature(logs[train], labels[train])
        for i in np.flatnonzero(fold == f).tolist():
            held_out[i] = temperature_apply(rows[i], t)
    t = _temperature(logs, labels)
    at_bound = min(abs(math.log(t / b)) for b in T_BOUNDS) < 1e-6
    note = None
    if at_bound:
        note = f"temperature held at its bound {t:.3g}: the sample pushes it further"
    after = _distribution_metrics(y_true, held_out, options)
    return MapFit("temperature", {"temperature": t}, len(rows),
                  _distribution_metrics(y_true, rows, options), after,
                  {"temperature": after}, note)  # fmt: skip

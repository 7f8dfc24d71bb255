"""The choice and score accumulators: a probability per option, a top-1 pick, a confusion
matrix over the options in first-seen order (see :mod:`.accumulators` for what every type
counts)."""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..questions import level_label
from .accumulators import (
    _LEVEL_KEYS,
    LabelError,
    QuestionStats,
    RecordError,
    _confidence,
    _mean,
    _probabilities,
    _share,
    _shown,
)
from .metrics import EPS, N_BINS, Reliability, f1_from_confusion

__all__ = ["ChoiceStats", "ScoreStats"]


class _Ranked(QuestionStats):
    """Shared by choice and score: a probability per option, a top-1 pick, a confusion matrix
    over the options in first-seen order."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.options: dict[str, None] = {}
        self._scanned = -1
        self.counts: Counter[str] = Counter()
        self.rel = Reliability()
        self.hits = 0
        self.brier_sum = 0.0
        self.loss_sum = 0.0
        self.confusion: Counter[tuple[str, str]] = Counter()

    def _see_options(self, probs: Mapping[str, float]) -> None:
        """Add options first seen in ``probs`` (callers skip this while the record has as
        many options as the last one scanned and the pick is known)."""
        for k in probs:
            if k not in self.options:
                self.options[k] = None
        self._scanned = len(probs)

    def merge(self, other: Any) -> None:
        super().merge(other)
        for k in other.options:
            self.options.setdefault(k)
        self._scanned = -1
        self.counts.update(other.counts)
        self.rel.merge(other.rel)
        self.hits += other.hits
        self.brier_sum += other.brier_sum
        self.loss_sum += other.loss_sum
        self.confusion.update(other.confusion)

    def _count_confidence(self, answer: Mapping[str, Any]) -> None:
        conf = answer.get("confidence")
        if type(conf) is not float or not 0.0 <= conf <= 1.0:
            conf = _confidence(conf)
        if conf is not None:
            self.conf_sum += conf
            self.conf_n += 1

    def _score(self, probs: Mapping[str, float], picked: str, truth: str) -> bool:
        """Count one labelled answer; True when the pick is right."""
        self.labelled += 1
        p_truth = probs.get(truth, 0.0)
        values = probs.values()
        # sum_k (p_k - y_k)^2 over the offered options, a missing option being 0
        self.brier_sum += sum(map(operator.mul, values, values)) - 2.0 * p_truth + 1.0
        c = EPS if p_truth < EPS else 1.0 - EPS if p_truth > 1.0 - EPS else p_truth
        self.loss_sum -= math.log(c)
        correct = picked == truth
        p = probs.get(picked, 0.0)
        b = int(p * N_BINS)  # bin_index, inlined
        if b >= N_BINS:
            b = N_BINS - 1
        elif b < 0:
            b = 0
        rel = self.rel
        rel.n[b] += 1
        rel.sum_p[b] += p
        if correct:
            rel.sum_y[b] += 1
            self.hits += 1
        self.confusion[(truth, picked)] += 1
        return correct

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        probs: Mapping[str, float] = answer["probabilities"]
        return probs

    def _matrix(self, classes: list[str]) -> dict[str, Any]:
        return {
            "labels": classes,
            "matrix": [[self.confusion[(t, p)] for p in classes] for t in classes],
        }

    def _common_metrics(self) -> dict[str, Any]:
        n = self.labelled
        return {
            "accuracy": self.hits / n,
            "brier": self.brier_sum / n,
            "log_loss": self.loss_sum / n,
            "ece": self.rel.ece(),
        }

    def reliability(self) -> list[dict[str, Any]]:
        return self.rel.bins()


class ChoiceStats(_Ranked):
    type = "choice"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.by_uniform = [0, 0, 0, 0]  # near_uniform * 2 + correct

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self._count_common(answer)
        choice = answer["choice"]
        probs = answer["probabilities"]
        _probabilities(probs)
        if len(probs) != self._scanned or choice not in self.options:
            if type(choice) is not str:
                raise RecordError(f"choice is {_shown(choice)}, not an option name")
            self._see_options(probs)
        self.counts[choice] += 1
        self._count_confidence(answer)
        if label is None:
            return
        if label not in self.options:
            self._see_options(probs)
            if label not in self.options:
                raise LabelError(
                    f"question {self.key!r}: {label!r} is not one of its options "
                    f"({', '.join(self.options)})"
                )
        correct = self._score(probs, choice, label)
        self.by_uniform[2 * bool(answer.get("near_uniform")) + correct] += 1

    def merge(self, other: Any) -> None:
        super().merge(other)
        for i, n in enumerate(other.by_uniform):
            self.by_uniform[i] += n

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["choice"]

    def distribution(self) -> dict[str, Any]:
        names = list(self.options) + [c for c in self.counts if c not in self.options]
        return {
            "options": {
                o: {"n": self.counts[o], "share": _share(self.counts[o], self.n)} for o in names
            }
        }

    def metrics(self) -> dict[str, Any]:
        classes = list(self.options)
        matrix = self._matrix(classes)
        out = self._common_metrics()
        out["macro_f1"] = f1_from_confusion(matrix["matrix"])
        out["confusion"] = matrix
        split = {}
        for name, flag in (("near_uniform", True), ("not_near_uniform", False)):
            right, wrong = self.by_uniform[2 * flag + 1], self.by_uniform[2 * flag]
            split[name] = {"n": right + wrong, "accuracy": _share(right, right + wrong)}
        out["accuracy_by_near_uniform"] = split
        return out


class ScoreStats(_Ranked):
    type = "score"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.legend: dict[str, str] = {}
        self.score_sum = 0.0
        self.within = 0
        self.abs_err = 0.0
        self._label_cache: dict[str, int] = {}
        self._legend_pending = False

    def _level_of(self, label: str) -> int:
        level = self._label_cache.get(label)
        if level is not None:
            return level
        if label.isdigit() and label in self.options:
            level = int(label)
        else:
            matches = [int(k) for k, v in self.legend.items() if v == label]
            if not matches:
                levels = ", ".join(f"{k} {v}" for k, v in self.legend.items())
                raise LabelError(
                    f"question {self.key!r}: {label!r} is neither a level index nor a level "
                    f"label ({levels})"
                )
            level = matches[0]
        self._label_cache[label] = level
        return level

    def _see_options(self, probs: Mapping[str, float]) -> None:
        super()._see_options(probs)
        self._legend_pending = True

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self._count_common(answer)
        probs = answer["probabilities"]
        _probabilities(probs)
        level = answer["level"]
        if type(level) is not int or not 0 <= level < len(_LEVEL_KEYS):
            raise RecordError(f"level is {_shown(level)}, not a level index 0..9")
        picked = _LEVEL_KEYS[level]
        if len(probs) != self._scanned or picked not in self.options:
            self._see_options(probs)
        if self._legend_pending:
            legend = answer.get("legend") or {}
            for k in self.options:
                # seed 003: a label is always a string from the question's levels, so a
                # structured level ({label, description}) is shown and matched by its label
                self.legend.setdefault(k, level_label(legend.get(k, k)))
            self._legend_pending = False
        score = answer["score"]
        if type(score) is not float or not 0.0 <= score <= 9.0:
            score = _score_value(score)
        self.counts[picked] += 1
        self.score_sum += score
        self._count_confidence(answer)
        if label is None:
            return
        y = self._label_cache.get(label)
        if y is None:
            y = self._level_of(label)
        self._score(probs, picked, _LEVEL_KEYS[y])
        if -1 <= level - y <= 1:
            self.within += 1
        self.abs_err += abs(score - y)

    def merge(self, other: Any) -> None:
        super().merge(other)
        for k, v in other.legend.items():
            self.legend.setdefault(k, v)
        self.score_sum += other.score_sum
        self.within += other.within
        self.abs_err += other.abs_err

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["level"]

    def _levels(self) -> list[str]:
        return sorted(set(self.options) | set(self.counts), key=lambda k: (len(k), k))

    def distribution(self) -> dict[str, Any]:
        return {
            "levels": {
                k: {
                    "label": self.legend.get(k, k),
                    "n": self.counts[k],
                    "share": _share(self.counts[k], self.n),
                }
                for k in self._levels()
            },
            "mean_score": _mean(self.score_sum, self.n),
        }

    def metrics(self) -> dict[str, Any]:
        n = self.labelled
        common = self._common_metrics()
        return {
            "accuracy": common["accuracy"],
            "within_one": self.within / n,
            "mae": self.abs_err / n,
            "brier": common["brier"],
            "log_loss": common["log_loss"],
            "ece": common["ece"],
            "confusion": self._matrix(self._levels()),
        }


def _score_value(score: Any) -> float:
    if type(score) is int and 0 <= score <= 9:
        return float(score)
    raise RecordError(f"score is {_shown(score)}, not an expected level in [0, 9]")
